"""Per-thread locks do not accumulate in a long-lived runtime."""

from __future__ import annotations

import gc


async def test_thread_locks_are_released_after_runs(make_runtime) -> None:
    rig = make_runtime(["ok"], repeat=True)
    for i in range(50):
        await rig.run(f"message {i}", thread_id=f"thread-{i}")
    gc.collect()
    assert len(rig.runtime._thread_locks) == 0
