"""Awaken: an embeddable agent runtime with a plugin ecosystem.

Build a :class:`Runtime` with :class:`AgentRuntimeBuilder`, register agents,
tools, models, providers and plugins, then ``await runtime.run(agent_id, text)``.
Everything public is importable from this module.

Submodules load on first attribute access (PEP 562), so ``import awaken_runtime``
stays light; ``from awaken_runtime import X`` loads what ``X`` needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import (
        MAX_ID_LENGTH,
        AgentConfigError,
        AwakenError,
        CapabilityBoundError,
        DuplicateIdError,
        InvalidId,
        InvalidInput,
        PluginDefinitionError,
        PluginLoadError,
        ResolutionError,
        StateConflictError,
        StateValueError,
        ToolError,
        VersionConflict,
        check_id,
    )
    from .agents._config import AgentConfig
    from .agents._file import AgentFile
    from .agents._resolve import CatalogFingerprint, ExecutableAgentSnapshot, ResolvedPlugin
    from .agents._stop import LoopDetection, StopConfig
    from .delegation._delegation import ChildOutcome, DelegationRequest
    from .delegation._service import (
        AGENT_RUN,
        ChildRunner,
        NativeDelegationService,
        RunDelegationService,
    )
    from .delegation._tool import run_child_agent
    from .lifecycle._events import (
        AgentEvent,
        RunFinish,
        RunStart,
        StepEnd,
        StepStart,
        TextDelta,
        ToolCallDone,
        ToolCallReady,
        event_adapter,
    )
    from .lifecycle._failures import (
        AbandonedFailure,
        Cancelled,
        CapabilityBoundFailure,
        ConfigFailure,
        EndCause,
        Error,
        Failure,
        InternalFailure,
        LeaseLostFailure,
        MaxSteps,
        NaturalEnd,
        OutputFailure,
        Phase,
        PluginFailure,
        ProviderFailure,
        StateConflictFailure,
        Stopped,
        ToolFailure,
    )
    from .lifecycle._run_state import RunState
    from .messages._message import ContentPart, Message, ToolCall, from_openai, to_openai
    from .messages._transcript import ContextPolicy, KeepAll, KeepLast, MessageView, Transcript
    from .models._errors import (
        ErrorClass,
        ProviderAuthError,
        ProviderBadRequest,
        ProviderConnectionError,
        ProviderContentFiltered,
        ProviderContextLength,
        ProviderError,
        ProviderRateLimited,
        ProviderTimeout,
        ProviderUnavailable,
        UnknownModelError,
    )
    from .models._model import (
        InferenceParams,
        InferenceRequest,
        InferenceResponse,
        LlmExecutor,
        ModelSpec,
        Pricing,
        StreamDelta,
        TokenUsage,
    )
    from .models._output import OutputSpec
    from .models._scripted import ScriptedExecutor, ScriptedTurn, ScriptExhausted
    from .models.litellm._errors import LiteLLMNotInstalled
    from .models.litellm._executor import LITELLM_PROVIDER, LiteLLMExecutor, litellm_pricing
    from .models.litellm._retry import RetryPolicy
    from .plugins._actions import ActionHandler, EffectHandler, ScheduledAction
    from .plugins._await import AwaitReason
    from .plugins._context import (
        CONTEXT_MESSAGES,
        INFERENCE_PARAMS,
        REQUEST_WINDOW,
        REQUEST_WINDOW_FIELDS,
        STANDING_CONTEXT,
        TOOL_FILTER,
        Band,
        ContextMessage,
        ToolFilter,
        inject,
        override_params,
        request_context,
        start_window_after,
    )
    from .plugins._declarative import (
        PluginBase,
        action_handler,
        effect_handler,
        phase_hook,
        run_end_guard,
        stop_condition,
        tool_gate,
        tool_observer,
        tool_source,
    )
    from .plugins._discovery import Discovered, Discovery, discover
    from .plugins._gates import (
        Block,
        Complete,
        GateDecision,
        RunEndDecision,
        Schedule,
        ShortCircuit,
        Steer,
        Suspend,
    )
    from .plugins._plugin import (
        CapabilityBound,
        Contributions,
        HookReaction,
        PhaseContext,
        PhaseHook,
        PhaseHookPoint,
        Plugin,
        PluginManifest,
        RunEndGuard,
        RunInfo,
        StateKeyDecl,
        ToolCatalog,
        ToolGateHook,
        ToolObserver,
    )
    from .runtime._builder import AgentRuntimeBuilder
    from .runtime._runtime import OnAwait, RunInput, Runtime
    from .state._effects import Effect
    from .state._engine import (
        Command,
        CommittedBatch,
        Key,
        MergePolicy,
        Remove,
        Scope,
        Set,
        StagedCommand,
        StateEngine,
        Store,
        replay,
    )
    from .state._state_key import FoldStateKey, StateKey
    from .stores._memory import InMemoryStore
    from .stores._thread_store import (
        RunRecord,
        ScopeBinding,
        ThreadSnapshot,
        ThreadStore,
    )
    from .suspension._decisions import Approve, Decision, Deny, Remember, Replay, Respond
    from .suspension._suspension import (
        ANSWER_TO_TOOL,
        ParkedRun,
        ResumeRejected,
        ResumeTicket,
        SuspendCall,
        ThreadBusy,
    )
    from .tools._cancel import CancellationToken
    from .tools._function_tool import FunctionTool, tool
    from .tools._tool import Tool, ToolCallContext, ToolDescriptor, ToolOutput

__version__ = "0.1.0"

from ._exports import LAZY as _LAZY


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AGENT_RUN",
    "ANSWER_TO_TOOL",
    "CONTEXT_MESSAGES",
    "INFERENCE_PARAMS",
    "LITELLM_PROVIDER",
    "MAX_ID_LENGTH",
    "REQUEST_WINDOW",
    "REQUEST_WINDOW_FIELDS",
    "STANDING_CONTEXT",
    "TOOL_FILTER",
    "AbandonedFailure",
    "ActionHandler",
    "AgentConfig",
    "AgentConfigError",
    "AgentEvent",
    "AgentFile",
    "AgentRuntimeBuilder",
    "Approve",
    "AwaitReason",
    "AwakenError",
    "Band",
    "Block",
    "CancellationToken",
    "Cancelled",
    "CapabilityBound",
    "CapabilityBoundError",
    "CapabilityBoundFailure",
    "CatalogFingerprint",
    "ChildOutcome",
    "ChildRunner",
    "Command",
    "CommittedBatch",
    "Complete",
    "ConfigFailure",
    "ContentPart",
    "ContextMessage",
    "ContextPolicy",
    "Contributions",
    "Decision",
    "DelegationRequest",
    "Deny",
    "Discovered",
    "Discovery",
    "DuplicateIdError",
    "Effect",
    "EffectHandler",
    "EndCause",
    "Error",
    "ErrorClass",
    "ExecutableAgentSnapshot",
    "Failure",
    "FoldStateKey",
    "FunctionTool",
    "GateDecision",
    "HookReaction",
    "InMemoryStore",
    "InferenceObservation",
    "InferenceParams",
    "InferenceRequest",
    "InferenceResponse",
    "InternalFailure",
    "InvalidId",
    "InvalidInput",
    "KeepAll",
    "KeepLast",
    "Key",
    "LeaseLostFailure",
    "LiteLLMExecutor",
    "LiteLLMNotInstalled",
    "LlmExecutor",
    "LoopDetection",
    "MaxSteps",
    "MergePolicy",
    "Message",
    "MessageView",
    "ModelSpec",
    "NativeDelegationService",
    "NaturalEnd",
    "ObservedRun",
    "OnAwait",
    "OutputFailure",
    "OutputSpec",
    "ParkedRun",
    "Phase",
    "PhaseContext",
    "PhaseHook",
    "PhaseHookPoint",
    "Plugin",
    "PluginBase",
    "PluginDefinitionError",
    "PluginFailure",
    "PluginLoadError",
    "PluginManifest",
    "Pricing",
    "ProviderAuthError",
    "ProviderBadRequest",
    "ProviderConnectionError",
    "ProviderContentFiltered",
    "ProviderContextLength",
    "ProviderError",
    "ProviderFailure",
    "ProviderRateLimited",
    "ProviderTimeout",
    "ProviderUnavailable",
    "Remember",
    "Remove",
    "Replay",
    "ResolutionError",
    "ResolvedPlugin",
    "Respond",
    "ResumeRejected",
    "ResumeTicket",
    "RetryPolicy",
    "RunDelegationService",
    "RunEndDecision",
    "RunEndGuard",
    "RunFinish",
    "RunInfo",
    "RunInput",
    "RunObservation",
    "RunObserver",
    "RunRecord",
    "RunStart",
    "RunState",
    "Runtime",
    "Schedule",
    "ScheduledAction",
    "Scope",
    "ScopeBinding",
    "ScriptExhausted",
    "ScriptedExecutor",
    "ScriptedTurn",
    "Set",
    "ShortCircuit",
    "StagedCommand",
    "StateConflictError",
    "StateConflictFailure",
    "StateEngine",
    "StateKey",
    "StateKeyDecl",
    "StateValueError",
    "Steer",
    "StepEnd",
    "StepStart",
    "StopConditionHook",
    "StopConfig",
    "Stopped",
    "Store",
    "StreamDelta",
    "Suspend",
    "SuspendCall",
    "TextDelta",
    "ThreadBusy",
    "ThreadSnapshot",
    "ThreadStore",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallContext",
    "ToolCallDone",
    "ToolCallReady",
    "ToolCatalog",
    "ToolDescriptor",
    "ToolError",
    "ToolFailure",
    "ToolFilter",
    "ToolGateHook",
    "ToolObservation",
    "ToolObserver",
    "ToolOutput",
    "Transcript",
    "UnknownModelError",
    "VersionConflict",
    "__version__",
    "action_handler",
    "check_id",
    "discover",
    "effect_handler",
    "event_adapter",
    "from_openai",
    "inject",
    "litellm_pricing",
    "override_params",
    "phase_hook",
    "replay",
    "request_context",
    "run_child_agent",
    "run_end_guard",
    "start_window_after",
    "stop_condition",
    "to_openai",
    "tool",
    "tool_gate",
    "tool_observer",
    "tool_source",
]
