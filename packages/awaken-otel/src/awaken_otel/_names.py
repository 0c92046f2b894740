"""The attribute, span and metric names this package emits.

GenAI names follow the OpenTelemetry GenAI semantic conventions. They are
defined here, not imported: ``opentelemetry-semantic-conventions`` marks its
``gen_ai`` constants as moved to the separate GenAI conventions project and
deprecated. Names under ``awaken.`` are this runtime's own.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AGENT_NAME",
    "AWAKEN_CANCELLED",
    "AWAKEN_END_CAUSE",
    "AWAKEN_LEG",
    "AWAKEN_LINK",
    "AWAKEN_PARENT_RUN_ID",
    "AWAKEN_PHASE",
    "AWAKEN_PROVIDER_ID",
    "AWAKEN_RUNS",
    "AWAKEN_RUN_ID",
    "AWAKEN_STEP",
    "AWAKEN_STEPS",
    "AWAKEN_TOOL_OUTCOME",
    "CHAT",
    "CLIENT_OPERATION_DURATION",
    "CLIENT_TOKEN_USAGE",
    "CONVERSATION_ID",
    "DURATION_BUCKETS",
    "ERROR_TYPE",
    "EXECUTE_TOOL",
    "INPUT_MESSAGES",
    "INVOKE_AGENT",
    "OPERATION_NAME",
    "OUTPUT_MESSAGES",
    "PROVIDER_NAME",
    "REQUEST_MAX_TOKENS",
    "REQUEST_MODEL",
    "REQUEST_STOP_SEQUENCES",
    "REQUEST_STREAM",
    "REQUEST_TEMPERATURE",
    "REQUEST_TOP_P",
    "RESPONSE_FINISH_REASONS",
    "RESPONSE_ID",
    "RESPONSE_MODEL",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "TOKEN_BUCKETS",
    "TOKEN_TYPE",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_CALL_RESULT",
    "TOOL_NAME",
    "TOOL_TYPE",
    "USAGE_CACHE_READ_INPUT_TOKENS",
    "USAGE_INPUT_TOKENS",
    "USAGE_OUTPUT_TOKENS",
    "USAGE_REASONING_OUTPUT_TOKENS",
]

# -- operation names (also the first word of each span name) -----------------
INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"

# -- GenAI attributes -----------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_TOP_P: Final = "gen_ai.request.top_p"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
REQUEST_STREAM: Final = "gen_ai.request.stream"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOKEN_TYPE: Final = "gen_ai.token.type"
# Content: recorded only with ``capture_content=True`` (may hold personal data).
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

# -- general attributes ---------------------------------------------------------
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# -- this runtime's own attributes ---------------------------------------------
AWAKEN_RUN_ID: Final = "awaken.run.id"
AWAKEN_PARENT_RUN_ID: Final = "awaken.run.parent_id"
AWAKEN_LEG: Final = "awaken.run.leg"
"""``start``, ``resume`` or ``cancel``: how this leg of the run began."""
AWAKEN_PHASE: Final = "awaken.run.phase"
"""``ended`` or ``waiting`` (parked for decisions)."""
AWAKEN_END_CAUSE: Final = "awaken.run.end_cause"
"""The end cause's kind (``natural_end``, ``error``, ...) or ``waiting`` for a park."""
AWAKEN_STEPS: Final = "awaken.run.steps"
AWAKEN_STEP: Final = "awaken.step"
AWAKEN_PROVIDER_ID: Final = "awaken.provider.id"
"""The runtime's provider registry id (``litellm``, ``scripted``, ...)."""
AWAKEN_TOOL_OUTCOME: Final = "awaken.tool.outcome"
"""``success``, ``error`` (a model-visible error result), ``suspended`` or ``failed``."""
AWAKEN_CANCELLED: Final = "cancelled"
"""``error.type`` of an inference or tool call the run's cancellation interrupted."""
AWAKEN_LINK: Final = "awaken.link"
"""On span links: ``parked_leg`` (the leg that parked what this leg resumes) or
``resumed_by`` (the span current where the resume was called, in another trace)."""

# -- metrics ----------------------------------------------------------------------
CLIENT_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
CLIENT_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
AWAKEN_RUNS: Final = "awaken.agent.runs"
"""Counter: run legs that ended, by ``awaken.run.end_cause`` (a park counts ``waiting``)."""

TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
"""The bucket boundaries the conventions advise for ``gen_ai.client.token.usage``."""
DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""The bucket boundaries the conventions advise for ``gen_ai.client.operation.duration``."""
