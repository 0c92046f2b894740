"""The LiteLLM provider; litellm is imported lazily, when this executor first runs.

Private: import from awaken_runtime.
"""
