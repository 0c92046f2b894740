"""The plugin contract (manifest, bound, contributions, hook points), gates, context injection, discovery (private)."""
