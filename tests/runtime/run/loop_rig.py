"""The agent-loop tests' helpers (imported by the ``test_*`` files here): recording
tools, plugins that inject context or narrow tools, and readers of requests,
failures and events.
"""

from __future__ import annotations

from awaken_runtime import (
    Band,
    Contributions,
    Error,
    HookReaction,
    PhaseHookPoint,
    ToolCallDone,
    inject,
    tool,
)

BI = PhaseHookPoint.BEFORE_INFERENCE
ALL_BANDS = set(Band)


def counted_tools():
    """Three zero-argument tools that record their calls."""
    calls: list[str] = []

    def make(name):
        def fn() -> str:
            calls.append(name)
            return f"{name} ran"

        fn.__doc__ = f"The {name} tool."
        return tool(name=name)(fn)

    return [make("alpha"), make("beta"), make("gamma")], calls


def injector(plugin_id, make_plugin, *messages, bands=ALL_BANDS, when=None):
    """A plugin that injects ``messages`` at every BEFORE_INFERENCE (or when ``when(ctx)``)."""

    async def hook(ctx):
        if when is not None and not when(ctx):
            return None
        return HookReaction(commands=[inject(*messages)])

    return make_plugin(
        plugin_id,
        {"phase_hooks": {BI}, "context_bands": bands},
        Contributions(phase_hooks={BI: hook}),
    )


def narrower(plugin_id, make_plugin, flt, *, entry_id=None):
    async def hook(ctx):
        return HookReaction(commands=[flt.command(entry_id or plugin_id)])

    return make_plugin(
        plugin_id,
        {"phase_hooks": {BI}, "narrows_tools": True},
        Contributions(phase_hooks={BI: hook}),
    )


def request_summary(request):
    """``(role, content)`` of every request message, context entries tagged by key."""
    out = []
    for m in request.messages:
        key = m.metadata.get("context_key")
        out.append((m.role, f"<{key}>" if key else m.text))
    return out


def context_keys(request):
    return [m.metadata["context_key"] for m in request.messages if "context_key" in m.metadata]


def tool_ids(request):
    return [t.id for t in request.tools]


def failure_of(state):
    assert isinstance(state.end_cause, Error), state.end_cause
    return state.end_cause.failure


def done_events(events):
    return [e for e in events if isinstance(e, ToolCallDone)]
