"""Delegation: the agent_run tool, the delegation service port, native children (private)."""
