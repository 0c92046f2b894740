"""Messages and the append-only transcript (private; import from awaken_runtime)."""
