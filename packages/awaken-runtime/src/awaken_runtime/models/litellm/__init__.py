"""The LiteLLM provider: litellm is imported lazily, only when this executor first runs (private)."""
