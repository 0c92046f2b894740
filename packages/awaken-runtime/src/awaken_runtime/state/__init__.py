"""The state engine: commands, scopes, merge policies, the store snapshot, state keys, effects.

Private: import from awaken_runtime.
"""
