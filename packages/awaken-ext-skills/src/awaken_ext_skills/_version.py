"""The distribution version (kept in lockstep with awaken-runtime)."""

__version__ = "0.1.0"
