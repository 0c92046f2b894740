"""``gen_ai.provider.name`` and ``gen_ai.request.model`` from a model spec.

A spec names the runtime's provider (its registry id) and the upstream model.
For the litellm provider the model carries litellm's route prefix
(``openai/gpt-4o``, ``bedrock/...``): the prefix names the real provider, which
is mapped to the conventions' well-known value, and the rest is the model the
provider is asked for. Other providers are reported under their registry id.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from awaken_runtime import ModelSpec

from . import _names as n

__all__ = ["chat_attributes"]

_LITELLM = "litellm"  # awaken_runtime.LITELLM_PROVIDER, without importing the provider module

_WELL_KNOWN = {
    "openai": "openai",
    "text-completion-openai": "openai",
    "anthropic": "anthropic",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "cohere": "cohere",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "perplexity": "perplexity",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
}
"""litellm route prefixes whose provider has a well-known ``gen_ai.provider.name``."""

_cache: dict[tuple[str, str, str | None], tuple[str, dict[str, Any]]] = {}


def chat_attributes(spec: ModelSpec) -> tuple[str, dict[str, Any]]:
    """The requested model name and a fresh dict of the call's identifying attributes.

    These are also the attributes of the client metrics, so they stay few and of
    low cardinality: operation, provider, request model, server address and port.
    """
    key = (spec.provider, spec.model, spec.api_base)
    found = _cache.get(key)
    if found is None:
        provider, model = spec.provider, spec.model
        if provider == _LITELLM and "/" in model:
            prefix, rest = model.split("/", 1)
            provider, model = _WELL_KNOWN.get(prefix, prefix), rest
        attributes: dict[str, Any] = {
            n.OPERATION_NAME: n.CHAT,
            n.PROVIDER_NAME: provider,
            n.REQUEST_MODEL: model,
            n.AWAKEN_PROVIDER_ID: spec.provider,
        }
        if spec.api_base:
            url = urlsplit(spec.api_base)
            if url.hostname:
                attributes[n.SERVER_ADDRESS] = url.hostname
                try:
                    port = url.port
                except ValueError:  # a malformed port: report the host only
                    port = None
                if port is not None:
                    attributes[n.SERVER_PORT] = port
        if len(_cache) > 1024:  # specs come from a fixed catalog; this only bounds odd callers
            _cache.clear()
        found = _cache[key] = (model, attributes)
    return found[0], dict(found[1])
