"""The plugin contract (manifest, bound, contributions, hook points), gates, context, discovery.

Private: import from awaken_runtime.
"""
