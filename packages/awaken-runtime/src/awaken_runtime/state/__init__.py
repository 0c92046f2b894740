"""The state engine: commands, scopes, merge policies, the store snapshot, typed state keys, effects (private)."""
