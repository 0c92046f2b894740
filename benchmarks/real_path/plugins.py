"""Plugin dispatch: the step's CPU with 0, 1, 4 and 16 no-op plugins, and the shipped extensions.

Every variant runs the same agent on its own runtime: S tool-calling steps
(one no-op tool call each) and a final answer, scripted model, in-memory
store, on a thread that already holds 1,000 messages. A no-op plugin has two
hooks (``BEFORE_INFERENCE`` and ``AFTER_INFERENCE``) that return ``None``.
"4 extensions" enables memory (hashing embedder, no memories stored yet),
skills (three skills, none active), permissions (an allow rule for the tool)
and compact (a 128k-token window, so it counts the request but never
summarizes) together; each is also measured alone.

Each repetition seeds a fresh thread, runs once (the "first run": caches
cold for that thread) and once more on the same thread (the "warm run"); the
CPU time (user + system) of each run is divided by its model calls (S + 1).
Variants are interleaved round-robin; medians are reported, and each ratio is
the median of the per-round ratios (a variant against the 0-plugin run of the
same round), so that load drifting on the shared machine cancels out.
Checks: 16 no-op plugins <= 2x the 0-plugin warm step; the four extensions
together <= 3x.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _section import cpu_seconds, emit, parse

import awaken_runtime as aw

HISTORY = 1000
PLUGIN_COUNTS = (0, 1, 4, 16)
BI = aw.PhaseHookPoint.BEFORE_INFERENCE
AI = aw.PhaseHookPoint.AFTER_INFERENCE
SKILL = """---
name: {name}
description: Benchmark skill number {i}, for writing {name} documents.
---

# {name}

Follow the steps for {name}.
"""


@aw.tool
def noop(q: str) -> str:
    """Look something up (does nothing)."""
    return "ok"


async def _nothing(ctx: aw.PhaseContext) -> None:
    return None


def noop_plugin(i: int) -> Any:
    """A plugin with two hooks that do nothing (the form with a manifest and contributions)."""
    manifest = aw.PluginManifest(
        id=f"noop-{i}", bound=aw.CapabilityBound(phase_hooks=frozenset({BI, AI}))
    )

    class NoopPlugin:
        def __init__(self) -> None:
            self.manifest = manifest

        def resolve(self, config: Any) -> aw.Contributions:
            return aw.Contributions(phase_hooks={BI: _nothing, AI: _nothing})

    return NoopPlugin()


def history() -> tuple[aw.Message, ...]:
    words = [
        "the",
        "order",
        "shipped",
        "yesterday",
        "and",
        "arrives",
        "on",
        "friday",
        "by",
        "courier",
    ]
    out = []
    for i in range(HISTORY):
        text = " ".join(words[(i + j) % len(words)] for j in range(12))
        out.append(aw.Message.user(text) if i % 2 == 0 else aw.Message.assistant(text))
    return tuple(out)


def extensions(skills_dir: Path) -> tuple[list[Any], dict[str, Any]]:
    from awaken_ext_compact import CompactPlugin
    from awaken_ext_memory import MemoryPlugin
    from awaken_ext_permissions import PermissionsPlugin
    from awaken_ext_skills import SkillsPlugin

    for i, name in enumerate(("release-notes", "triage", "summary")):
        folder = skills_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(SKILL.format(name=name, i=i))
    plugins = [MemoryPlugin(), SkillsPlugin(), PermissionsPlugin(), CompactPlugin()]
    config = {
        "memory": {"embedder": "hashing"},
        "skills": {"paths": [str(skills_dir)]},
        "permissions": {"allow": ["noop"], "default": "deny"},
        "compact": {"context_window": 128_000},
    }
    return plugins, config


Run = Callable[[str], Awaitable[None]]


def prepare(steps: int, plugins: list[Any], config: dict[str, Any]) -> Run:
    turns = [aw.ScriptedTurn.call("noop", {"q": "order 4471"}) for _ in range(steps)]
    executor = aw.ScriptedExecutor([*turns, "Order 4471 arrives on Friday."], repeat=True)
    executor.record_requests = False
    builder = (
        aw.AgentRuntimeBuilder(discover=False)
        .with_tool(noop)
        .with_model(aw.ModelSpec(id="m", provider="scripted", model="scripted"))
        .with_provider("scripted", executor)
    )
    for plugin in plugins:
        builder.with_plugin(plugin)
    agent = aw.AgentConfig(
        id="a",
        instructions="You are a helpful assistant. Use tools when needed.",
        model_binding="m",
        tool_ids=["noop"],
        plugin_ids=[p.manifest.id for p in plugins],
        plugin_config=config,
        max_steps=steps + 10,
    )
    runtime = builder.with_agent_spec(agent).build()
    runtime.resolve("a")

    async def run(thread_id: str) -> None:
        state = await runtime.run("a", "Where is order 4471?", thread_id=thread_id)
        assert state.final_text == "Order 4471 arrives on Friday.", state.end_cause

    async def seed(thread_id: str) -> None:
        binding = aw.ScopeBinding(thread_id, "default", "default")
        await runtime.store.commit(binding, 0, history(), [])

    run.seed = seed  # type: ignore[attr-defined]
    return run


async def measure(steps: int, reps: int) -> dict[str, dict[str, list[float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        variants: dict[str, Run] = {}
        for n in PLUGIN_COUNTS:
            variants[f"{n} no-op plugins"] = prepare(steps, [noop_plugin(i) for i in range(n)], {})
        ext_plugins, ext_config = extensions(Path(tmp) / "skills")
        variants["4 extensions"] = prepare(steps, ext_plugins, ext_config)
        for plugin in extensions(Path(tmp) / "skills-alone")[0]:  # fresh objects: own caches
            pid = plugin.manifest.id
            variants[f"{pid} alone"] = prepare(steps, [plugin], {pid: ext_config[pid]})
        samples: dict[str, dict[str, list[float]]] = {
            name: {"first": [], "warm": []} for name in variants
        }
        names = list(variants)
        for rep in range(reps + 1):  # rep 0 warms every variant's code paths; not kept
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                run = variants[name]
                thread = f"t-{rep}"
                await run.seed(thread)  # type: ignore[attr-defined]
                gc.collect()
                gc.disable()
                try:
                    for which in ("first", "warm"):
                        start = cpu_seconds()
                        await run(thread)
                        spent = cpu_seconds() - start
                        if rep:
                            samples[name][which].append(spent / (steps + 1))
                finally:
                    gc.enable()
        return samples


def main() -> None:
    args = parse(__doc__)
    steps, reps = (10, 3) if args.quick else (20, 15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # memory's hashing-embedder warning
        samples = asyncio.run(measure(steps, reps))
    medians = {
        name: {k: statistics.median(v) * 1e6 for k, v in by.items()} for name, by in samples.items()
    }
    zero = samples["0 no-op plugins"]["warm"]
    ratios = {
        name: statistics.median(v / z for v, z in zip(by["warm"], zero, strict=True))
        for name, by in samples.items()
    }
    variants_hooks = {f"{n} no-op plugins": str(2 * n) for n in PLUGIN_COUNTS}
    rows = []
    for name, m in medians.items():
        hooks = variants_hooks.get(name, name.split()[0])
        if name == "4 extensions":
            hooks = "memory, skills, permissions, compact"
        rows.append([name, hooks, m["first"], m["warm"], ratios[name]])
    ratio16, ratio_ext = ratios["16 no-op plugins"], ratios["4 extensions"]
    emit(
        args,
        title=f"plugin dispatch: CPU per step, {HISTORY}-message thread, S={steps}, "
        f"{reps} interleaved reps",
        columns=["variant", "hooks", "first run us/step", "warm us/step", "x 0 plugins (paired)"],
        rows=rows,
        checks=[
            (f"16 no-op plugins <= 2x the 0-plugin step ({ratio16:.2f}x)", ratio16 <= 2.0),
            (
                f"the four extensions together <= 3x the 0-plugin step ({ratio_ext:.2f}x)",
                ratio_ext <= 3.0,
            ),
        ],
        notes=[
            "a no-op plugin: BEFORE_INFERENCE and AFTER_INFERENCE hooks returning None",
            "first run: a freshly seeded thread; warm run: the same thread once more",
            "'X alone': one extension by itself, to show where the extensions' cost comes from",
        ],
    )


if __name__ == "__main__":
    main()
