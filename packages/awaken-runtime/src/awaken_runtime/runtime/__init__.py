"""Runtime: run, stream, resume, sub-agents; the builder; ticket checks (private)."""
