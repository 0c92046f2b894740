"""One run leg as parts given explicit RunDeps and LegState; see AGENTS.md here (private)."""
