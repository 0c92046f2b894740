"""Agents: AgentConfig, stop limits, resolution to an executable snapshot (private)."""
