"""Running the producers of one point: eagerly, and concurrently only once one of them waits.

Most hooks read the snapshot, stage a command or nothing, and return without
ever suspending. Each is started in the calling task with
``coroutine.send(None)``: one that returns there costs no Task and no
event-loop round. The first producer that does suspend continues in the
calling task, so a cancel scope it entered (``asyncio.timeout``, a
``TaskGroup``) belongs to the task that runs it to the end; every producer
after it starts in a Task of its own, as all producers of a point did before,
and those run concurrently with it. A task group ties them together: the first
failure cancels the rest, and cancelling the caller cancels them all.

A producer that raises ends the phase there with its ``PluginFailure``; the
ones after it never start. Results come back in producer order. A stored
message that does not decode when a producer reads it (``StoreCorrupt``) is
the store's failure, not the producer's: it goes through as it is.
"""

from __future__ import annotations

import asyncio
import inspect
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeAlias

from ..lifecycle._failures import PluginFailure
from ..stores._errors import StoreCorrupt
from ._signals import End, fail, log

__all__ = ["Producer", "call_all", "start_all"]

Producer: TypeAlias = tuple[str, Callable[[Any], Any], Any]
"""``(producer id, fn, arg)``: one producer of a point, run as ``fn(arg)``."""

_THROUGH = (End, StoreCorrupt)
"""What a producer raises that is not its own failure."""

_Coroutine = types.CoroutineType


def _failure(plugin_id: str, label: str, exc: Exception) -> End:
    log.exception("plugin %r raised in %s", plugin_id, label, exc_info=exc)
    return fail(
        PluginFailure(plugin_id=plugin_id, hook=label, message=f"{type(exc).__name__}: {exc}")
    )


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Await ``coro`` on from its first suspension (``yielded``: what it yielded there).

    ``await coro`` would send it a value before the future it waits on is done;
    this hands ``yielded`` to the running task first, then passes every value
    and exception (a cancellation included) through, as ``await`` does.
    """
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                yielded = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                yielded = coro.send(sent)
            except StopIteration as stop:
                return stop.value


async def _finish(plugin_id: str, label: str, pending: Any) -> Any:
    """Await a producer's remainder, turning what it raises into its ``PluginFailure``."""
    try:
        return await pending
    except _THROUGH:
        raise
    except Exception as exc:
        raise _failure(plugin_id, label, exc) from exc


async def _task(plugin_id: str, label: str, fn: Callable[[Any], Any], arg: Any) -> Any:
    """One producer started in a Task of its own (after another one suspended)."""
    try:
        result = fn(arg)
        if inspect.isawaitable(result):
            result = await result
        return result
    except _THROUGH:
        raise
    except Exception as exc:
        raise _failure(plugin_id, label, exc) from exc


def start_all(
    label: str, calls: list[Producer]
) -> list[tuple[str, Any]] | Coroutine[Any, Any, list[tuple[str, Any]]]:
    """Start every producer ``fn(arg)`` in the calling task; ``(producer, result)`` in order.

    When none of them suspends (the usual phase), the results come back as a
    list and the caller awaits nothing; otherwise the rest of the point is a
    coroutine to await. A producer is ``(producer id, fn, arg)``: a hook and
    its context go in as they are, with no thunk made per hook.
    """
    results: list[tuple[str, Any]] = []
    for plugin_id, fn, arg in calls:
        try:
            result = fn(arg)
            if type(result) is _Coroutine:
                try:
                    yielded = result.send(None)
                except StopIteration as stop:
                    result = stop.value
                else:
                    pending: Any = _resume(result, yielded)
                    break
            elif inspect.isawaitable(result):
                pending = result
                break
        except _THROUGH:
            raise
        except Exception as exc:
            raise _failure(plugin_id, label, exc) from exc
        results.append((plugin_id, result))
    else:
        return results
    return _suspended(label, calls, results, pending)


async def call_all(label: str, calls: list[Producer]) -> list[tuple[str, Any]]:
    """``start_all`` as one awaitable; ``(producer, result)`` in order."""
    results = start_all(label, calls)
    if isinstance(results, list):
        return results
    return await results


async def _suspended(
    label: str,
    calls: list[Producer],
    results: list[tuple[str, Any]],
    pending: Any,
) -> list[tuple[str, Any]]:
    """Finish the phase once the producer after ``results`` suspended (``pending``: its rest)."""
    index = len(results)
    plugin_id = calls[index][0]
    rest = calls[index + 1 :]
    if not rest:
        results.append((plugin_id, await _finish(plugin_id, label, pending)))
        return results
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_task(pid, label, fn, arg)) for pid, fn, arg in rest]
            value = await _finish(plugin_id, label, pending)
    except BaseExceptionGroup as errors:
        # Producers raise End (their failure) or something that is not an Exception;
        # report the first, as the first failing producer ended the phase before.
        raise errors.exceptions[0]  # noqa: B904 (keep the End's own cause)
    results.append((plugin_id, value))
    results.extend((pid, task.result()) for (pid, _fn, _arg), task in zip(rest, tasks, strict=True))
    return results
