"""How much CPU the provider client (litellm, the OpenAI client, httpx) spends in this process.

``ClientMeter`` wraps ``litellm.acompletion``: the main thread's CPU inside
the call and inside each streamed chunk's ``__anext__`` (and ``aclose``)
is the client's; so is the CPU of litellm's own threads (its logging pool,
AnyIO's workers), of the tasks litellm starts on the loop, and of what it
runs in the loop's default executor (``install_task_meter``). A ``Mode``
says how the client is treated: as it is (``REAL``), with the stream's end
waiting for those background tasks inside the client's window (``settle``,
then ``quiet``: asleep so the other process and threads can finish too), or
replayed from the one real stream ``record`` kept, with no client work at
all (``evict``: after sweeping the caches). What litellm keeps of a request
(its stream, its logging record) is held until the next request and freed
inside its window.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import contextlib
import dataclasses
import functools
import gc
import threading
import time
import types
from typing import Any

from _section import cpu_seconds

__all__ = ["REAL", "ClientMeter", "Mode", "install_task_meter", "record"]


@dataclasses.dataclass(frozen=True)
class Mode:
    """How the meter treats the provider client for one cell."""

    settle: bool = False
    """At the stream's end, wait (inside the client's window) for the background tasks
    litellm started, so its logging does not run beside awaken's next window."""
    quiet: float = 0.0
    """Then sleep this many seconds, once per request, still inside the client's window,
    so the server process and the client's threads can finish what the request left."""
    replay: bool = False
    """Replay the recorded stream instead of calling litellm (no client work at all)."""
    evict: bool = False
    """A replayed call first sweeps a buffer larger than the last-level cache, leaving
    awaken's next window cold as a real request's passage does."""


REAL = Mode()
"""The client as it is."""


class _ThreadsClock:
    """The CPU of the threads whose name starts with one of ``prefixes``, summed so far.

    Threads come and go (a store's I/O thread ends when idle and the next job starts a
    new one): each thread's last reading is kept after it ends, and a thread id reused
    by a new thread (its clock went back) starts a new account.
    """

    def __init__(self, *prefixes: str) -> None:
        self._prefixes = prefixes
        self._last: dict[int, float] = {}
        self._ended = 0.0

    def __call__(self) -> float:
        for thread in threading.enumerate():
            ident = thread.ident
            if ident is None or not thread.name.startswith(self._prefixes):
                continue
            with contextlib.suppress(OSError, OverflowError):  # the thread just ended
                now = time.clock_gettime(time.pthread_getcpuclockid(ident))
                last = self._last.get(ident, 0.0)
                if now < last:
                    self._ended += last
                self._last[ident] = now
        return self._ended + sum(self._last.values())


class ClientMeter:
    """CPU spent inside the provider client, and when each inference started."""

    def __init__(self) -> None:
        self.client = 0.0
        self.inside = False
        self.threads = 0.0  # litellm's work in the loop's default executor, finished
        # litellm's work in the default executor still running: thread id -> its CPU at
        # the start. A sample between two inferences counts what these did so far, so a
        # long piece of client work in flight at a window's edge is not billed to awaken.
        self.inflight: dict[int, tuple[float, bool]] = {}  # (CPU at start, client's?)
        self.awaken_threads = 0.0  # awaken's work in the default executor, finished
        self.client_threads = _ThreadsClock("litellm", "AnyIO worker")  # litellm's own
        self.awaken_threads_cpu = _ThreadsClock("awaken")  # a durable store's I/O thread
        self.lock = threading.Lock()
        self.gc = 0.0  # the collector's CPU on the main thread outside client windows
        self.gc_at_start: list[float] = []
        self._gc_start = 0.0
        self.starts: list[float] = []
        # awaken's own CPU: the main thread's outside client windows, awaken's threads (the
        # store's I/O thread) and awaken's work in the default executor (sync tools)
        self.awaken_at_start: list[float] = []
        self.store_at_start: list[float] = []  # awaken's threads alone (the store's I/O)
        self.client_at_start: list[float] = []
        self.body: list[dict[str, Any]] | None = None
        self.mode = REAL
        self.chunks: list[Any] = []  # the recorded stream a replaying mode plays back
        # litellm's objects of the last request (its stream, its logging record with the
        # copies of the messages), freed at the start of the next client window: a free
        # that falls in awaken's window (the last reference dropped by a finishing logging
        # task or a chunk) would bill the client's garbage to awaken
        self.held: list[Any] = []
        self.background: set[asyncio.Task[Any]] = set()
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if threading.current_thread() is not threading.main_thread() or self.inside:
            return
        if phase == "start":
            self._gc_start = time.thread_time()
        else:
            self.gc += time.thread_time() - self._gc_start

    async def settled(self, *, quiet: bool) -> None:
        """With ``settle`` set, wait for litellm's background tasks, then (``quiet``) sleep
        the mode's ``quiet`` seconds; called inside a client window, at the stream's end."""
        while self.mode.settle and self.background:
            await asyncio.gather(*self.background, return_exceptions=True)
        if quiet and self.mode.quiet:
            time.sleep(self.mode.quiet)  # blocking on purpose: the loop runs nothing meanwhile

    def executor_cpu(self) -> tuple[float, float]:
        """CPU in the default executor so far, work still running included: (the client's,
        awaken's)."""
        with self.lock:
            client, awaken = self.threads, self.awaken_threads
            for ident, (start, is_client) in self.inflight.items():
                with contextlib.suppress(OSError, OverflowError):
                    spent = time.clock_gettime(time.pthread_getcpuclockid(ident)) - start
                    if is_client:
                        client += spent
                    else:
                        awaken += spent
        return client, awaken

    def install(self, litellm: Any) -> None:
        real = litellm.acompletion
        meter = self

        async def acompletion(**kwargs: Any) -> Any:
            meter.starts.append(cpu_seconds())
            main = time.thread_time() - meter.client
            meter.gc_at_start.append(meter.gc)
            threads, awaken = meter.executor_cpu()
            meter.client_at_start.append(meter.client + threads + meter.client_threads())
            store = meter.awaken_threads_cpu()
            meter.store_at_start.append(store)
            meter.awaken_at_start.append(main + awaken + store)
            start = time.thread_time()  # the client's threads are counted apart
            meter.held.clear()
            meter.body = kwargs.get("messages")
            meter.inside = True
            try:
                if meter.mode.replay:
                    response = _Replay(meter.chunks, evict=meter.mode.evict)
                else:
                    response = await real(**kwargs)
            finally:
                meter.inside = False
            meter.client += time.thread_time() - start
            return _TimedStream(response, meter)

        litellm.acompletion = acompletion


class _MeteredCoroutine(collections.abc.Coroutine[Any, Any, Any]):
    """A background task litellm started (its logging): each resumption is client CPU."""

    def __init__(self, coro: Any, meter: ClientMeter) -> None:
        self._coro = coro
        self._meter = meter

    def send(self, value: Any) -> Any:
        return self._metered(self._coro.send, value)

    def throw(self, *exc: Any) -> Any:
        return self._metered(self._coro.throw, *exc)

    def _metered(self, fn: Any, *args: Any) -> Any:
        meter = self._meter
        if meter.inside:  # a client window is open: it counts this already
            return fn(*args)
        start = time.thread_time()
        try:
            return fn(*args)
        finally:
            meter.client += time.thread_time() - start

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Any:
        return self._coro.__await__()


def _is_client(fn: Any, args: tuple[Any, ...]) -> bool:
    while True:  # run_in_executor(partial(ctx.run, partial(func, ...)))
        if isinstance(fn, functools.partial):
            fn, args = fn.func, (*fn.args, *args)
        elif isinstance(fn, types.BuiltinMethodType) and fn.__name__ == "run" and args:
            fn, args = args[0], args[1:]  # Context.run(func, ...)
        else:
            break
    fn = getattr(fn, "__func__", fn)
    return "litellm" in str(getattr(fn, "__module__", ""))


class _MeteredExecutor(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor; what litellm runs in it is client CPU."""

    def __init__(self, meter: ClientMeter) -> None:
        super().__init__()
        self._meter = meter

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        client = _is_client(fn, args)  # else awaken's own (a sync tool's asyncio.to_thread)
        meter = self._meter

        def run() -> Any:
            ident = threading.get_ident()
            with meter.lock:
                start = time.thread_time()
                meter.inflight[ident] = (start, client)
            try:
                return fn(*args, **kwargs)
            finally:
                with meter.lock:
                    del meter.inflight[ident]
                    spent = time.thread_time() - start
                    if client:
                        meter.threads += spent
                    else:
                        meter.awaken_threads += spent

        return super().submit(run)


def install_task_meter(meter: ClientMeter) -> None:
    """Count the CPU of tasks whose coroutine is litellm's (and what litellm runs in the
    loop's default executor) as the client's."""
    asyncio.get_running_loop().set_default_executor(_MeteredExecutor(meter))

    def factory(loop: Any, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        code = getattr(coro, "cr_code", None)
        if code is None or "litellm" not in code.co_filename:
            return asyncio.Task(coro, loop=loop, **kwargs)
        task = asyncio.Task(_MeteredCoroutine(coro, meter), loop=loop, **kwargs)
        meter.background.add(task)
        task.add_done_callback(meter.background.discard)
        return task

    asyncio.get_running_loop().set_task_factory(factory)


_SWEPT: list[bytearray] = []
_SWEEP_BYTES = 48 * 1024 * 1024  # copied into another as large: 3x this machine's L3


class _Replay:
    """A recorded litellm stream, replayed: the client does no work at all (``evict``: but
    the caches are swept first)."""

    def __init__(self, chunks: list[Any], *, evict: bool = False) -> None:
        self._chunks = iter(chunks)
        if evict:
            if not _SWEPT:
                _SWEPT.extend((bytearray(_SWEEP_BYTES), bytearray(b"x" * _SWEEP_BYTES)))
            _SWEPT[0][:] = _SWEPT[1]  # memory the caches then hold instead of awaken's

    def __aiter__(self) -> _Replay:
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None


async def record(litellm: Any, base: str) -> list[Any]:
    """One real streamed answer (a tool call) of the server, as litellm's chunks."""
    response = await litellm.acompletion(
        model="openai/local-model",
        api_base=base,
        api_key="sk-local",
        messages=[{"role": "user", "content": "go"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    return [chunk async for chunk in response]


class _TimedStream:
    """The streamed response, each chunk's wait counted as client CPU."""

    def __init__(self, inner: Any, meter: ClientMeter) -> None:
        self._inner = inner
        self._iter = inner.__aiter__()
        self._meter = meter
        self._quieted = False  # the stream's end and its close both settle; one sleep
        meter.held += (inner, getattr(inner, "logging_obj", None))

    def __aiter__(self) -> _TimedStream:
        return self

    async def __anext__(self) -> Any:
        start = time.thread_time()
        self._meter.inside = True
        try:
            try:
                return await self._iter.__anext__()
            except StopAsyncIteration:
                await self._settled()
                raise
        finally:
            self._meter.inside = False
            self._meter.client += time.thread_time() - start

    async def _settled(self) -> None:
        await self._meter.settled(quiet=not self._quieted)
        self._quieted = True

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        start = time.thread_time()
        self._meter.inside = True
        try:
            if close is not None:
                await close()
            await self._settled()
            self._inner = self._iter = None  # only ``held`` keeps litellm's stream now
        finally:
            self._meter.inside = False
            self._meter.client += time.thread_time() - start
