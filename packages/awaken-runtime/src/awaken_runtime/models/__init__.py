"""The model contract (LlmExecutor, requests, responses, ModelSpec) and the scripted model (private)."""
