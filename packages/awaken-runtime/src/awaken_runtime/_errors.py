"""Exceptions a user of the runtime can meet, each naming the thing and the fix."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "MAX_ID_LENGTH",
    "AgentConfigError",
    "AwakenError",
    "CapabilityBoundError",
    "DuplicateIdError",
    "InvalidId",
    "InvalidInput",
    "LeaseFenced",
    "PluginDefinitionError",
    "PluginLoadError",
    "ResolutionError",
    "StateConflictError",
    "StateValueError",
    "ToolError",
    "VersionConflict",
    "check_id",
]


class AwakenError(Exception):
    """Base class of every error raised by awaken."""


class ToolError(AwakenError):
    """Raised by a tool for a hard failure: the run ends with ``Error(ToolFailure)``.

    For an error the model should see and react to, return
    ``ToolOutput.error(...)`` instead.
    """


class StateConflictError(AwakenError):
    """Writes in one batch broke a key's merge policy."""

    def __init__(self, *, key: str, scope: str, producers: tuple[str, str], reason: str) -> None:
        self.key = key
        self.scope = scope
        self.producers = producers
        self.reason = reason
        super().__init__(
            f"state conflict on {scope}:{key!r} between {producers[0]!r} and "
            f"{producers[1]!r}: {reason}; give each producer its own key or use "
            f"MergePolicy.COMMUTATIVE for object values"
        )


class StateValueError(AwakenError):
    """A value does not match the type a ``StateKey`` declares."""


class CapabilityBoundError(AwakenError):
    """A plugin contributed or wrote something outside its ``CapabilityBound``."""

    def __init__(self, plugin_id: str, item: str, detail: str) -> None:
        self.plugin_id = plugin_id
        self.item = item
        super().__init__(
            f"plugin {plugin_id!r} exceeded its capability bound: {detail}; "
            f"declare {item} in the plugin's CapabilityBound or stop contributing it"
        )


class AgentConfigError(AwakenError):
    """An agent's configuration (or a plugin's config table) is invalid."""


class ResolutionError(AwakenError):
    """An agent names a tool, model, provider, plugin or delegate that is not registered."""

    def __init__(self, agent_id: str, kind: str, missing: str, available: Iterable[str]) -> None:
        self.agent_id = agent_id
        self.kind = kind
        self.missing = missing
        names = sorted(available)
        shown = ", ".join(repr(n) for n in names) if names else "none"
        super().__init__(
            f"agent {agent_id!r} names unknown {kind} {missing!r}; registered {kind}s: {shown}"
        )


class PluginDefinitionError(AwakenError, TypeError):
    """A ``PluginBase`` subclass declares something invalid (raised when the class is defined)."""


class PluginLoadError(AwakenError):
    """A discovered plugin distribution failed to import or register."""

    def __init__(self, source: str, distribution: str | None, error: BaseException | str) -> None:
        self.source = source
        self.distribution = distribution
        self.error = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        where = f" (distribution {distribution!r})" if distribution else ""
        super().__init__(f"plugin entry point {source!r}{where} failed to load: {self.error}")


class DuplicateIdError(AwakenError):
    """Two sources register the same id (plugin, tool, provider, model or agent)."""

    def __init__(self, kind: str, item_id: str, first: str, second: str) -> None:
        self.kind = kind
        self.item_id = item_id
        self.sources = (first, second)
        super().__init__(
            f"{kind} id {item_id!r} is registered by both {first!r} and {second!r}; "
            f"uninstall one, or disable one with AWAKEN_DISABLE_PLUGINS"
        )


class VersionConflict(AwakenError):
    """A thread commit expected a version the store no longer has."""

    def __init__(self, thread_id: str, expected: int, actual: int) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"thread {thread_id!r} is at version {actual}, commit expected {expected}; "
            f"another run committed first: reload the thread and retry"
        )


class LeaseFenced(VersionConflict):
    """A commit made under a lease the thread no longer holds: nothing was written.

    The holder's lease lapsed and another run took the thread (or it was
    released). A ``VersionConflict`` as far as the run is concerned: the run
    that made the commit stops (``LeaseLostFailure``) and the holder that took
    the thread over carries it on.
    """

    def __init__(self, thread_id: str, expected: int, holder: str) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.actual = expected
        self.holder = holder
        AwakenError.__init__(
            self,
            f"thread {thread_id!r}: the lease of {holder!r} no longer holds the thread (it "
            f"lapsed and another run took it); the commit was refused and nothing was "
            f"written - this run must stop",
        )


MAX_ID_LENGTH = 256
"""The longest thread, run, profile or namespace id the runtime accepts (characters)."""


class InvalidId(AwakenError, ValueError):
    """A thread, run, profile or namespace id that cannot be stored.

    Raised before anything runs, so a bad id never leaves a half-written thread.
    """

    def __init__(self, kind: str, value: str, problem: str, fix: str) -> None:
        self.kind = kind
        self.value = value
        shown = value if len(value) <= 60 else value[:57] + "..."
        super().__init__(f"{kind} {shown!r} {problem}; {fix}")


class InvalidInput(AwakenError, ValueError):
    """Run input that cannot be stored (for example text with a lone surrogate)."""


def check_id(kind: str, value: str) -> str:
    """``value`` if it is a storable ``kind`` id (non-empty, at most
    :data:`MAX_ID_LENGTH` characters, valid Unicode); else raise :class:`InvalidId`."""
    if not isinstance(value, str) or not value:
        raise InvalidId(kind, str(value), "is empty or not a string", "pass a non-empty string")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidId(
            kind,
            value,
            f"is {len(value)} characters long",
            f"ids are at most {MAX_ID_LENGTH} characters: hash a longer key into an id",
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidId(
                kind,
                value,
                f"holds a lone surrogate at index {exc.start} (not valid Unicode)",
                "decode the id's bytes with errors='replace', or use another id",
            ) from None
    return value
