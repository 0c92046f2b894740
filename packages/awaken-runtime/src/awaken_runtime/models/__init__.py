"""The model contract (LlmExecutor, requests, responses, ModelSpec), the scripted model.

Private: import from awaken_runtime.
"""
