"""What a run ends as: phases, end causes, failures, events, RunState (private)."""
