"""One run leg as collaborating parts around a RunContext; see AGENTS.md here (private)."""
