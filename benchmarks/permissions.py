"""Permissions benchmark: cost of one tool-gate check with 1,000 rules.

Every scenario calls the plugin's real gate (``PermissionsPlugin().resolve(...)
.tool_gates[0]``) with a ``PhaseContext`` over a store, exactly as the loop
does, and reports the median and p90 per call over ``--rounds`` rounds of
``--calls`` calls (each round's mean is one sample). Rule sets, 1,000 rules each:

* ``mixed``: 600 exact-id rules over 300 tools (1-2 conditions each, every
  operator), 250 globs and 150 regexes over the tool id; calls rotate over 50
  tools with arguments that hit allow, deny, ask and no rule.
* ``mixed + 200 remembered``: the same with 100 thread and 100 profile
  remembered decisions in the store (each call then hashes its arguments).
* ``cold tool ids``: every call names a tool id never seen before, so the
  per-tool candidate cache misses and all 400 glob/regex patterns are tested.
* ``1,000 "=" rules on one tool``: every rule names ``shell`` with an ``=``
  condition that does not match (answered by the equality index).
* ``worst: 1,000 "~" on one tool``: the same with glob conditions, which no
  index covers: each call tests all 1,000 patterns (the linear worst case).
* ``worst: 1,000 "=~" on one tool``: 1,000 regex conditions, none matching.
* ``worst: 1,000 leading-* globs, 200-char arg``: ``*x{i}*y`` globs against a
  200-character command (``fnmatch`` patterns are linear: no backtracking).
* ``shell-aware, 4-part command``: 1,000 prefixed ``shell`` globs, ``command``
  declared a shell argument, a compound command with ``$(...)`` (its split is
  cached, as the gate and the audit hook both check each call); ``new ...
  each`` rows send a command never seen before on every check: a ``$(...)``
  line, an ``&&``/``|``/``;`` list of plain words and a quoted line take the
  fast path (no parser), a line with redirections and ``"$P"`` pays the
  bashlex parse (the documented worst case); ``plain command`` is one command.
* ``path-aware, 1,000 path rules``: ``write_file(path ~ "src/{i}/*")`` with a
  declared, normalized path (``src/./12/../12//a.py``); ``case-insensitive``
  the same with ``path_case_insensitive`` and an upper-case spelling.

Also timed once (milliseconds, best of 5): compiling the 1,000 mixed rules
(new rule text each time), and on that fresh policy the first check of a tool
the rules name exactly, of one only a glob names and of one no rule names.

Usage: ``hatch run python benchmarks/permissions.py [--quick] [--clock cpu]``.
Writes ``benchmarks/results/permissions.json`` (``permissions_quick.json`` with
--quick; ``_cpu`` before ``.json`` with ``--clock cpu``, which times this
process's CPU time instead of wall time, so that other processes on a shared
machine do not inflate the figures; the JSON records the load average).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awaken_ext_permissions import REMEMBERED_KEY, PermissionsConfig, PermissionsPlugin, call_key
from awaken_runtime import (
    PhaseContext,
    RunInfo,
    Scope,
    Store,
    ToolCall,
    Transcript,
)

RESULTS = Path(__file__).resolve().parent / "results"
CLOCK = [time.perf_counter_ns]
"""Wall time by default; ``--clock cpu`` uses this process's CPU time, which the other
processes of a shared machine do not inflate (the cost of the check itself)."""
TARGET_US = 50.0
BOUNDS_US = {"regex": 250.0, "leading": 250.0, "leading_dense": 500.0, "bashlex": 1500.0}
"""The documented bounds of the pathological rows (the package README), on this machine."""

_CONDITIONS = [
    'path ~ "src/{i}/**"',
    'command =~ "^git (status|log) {i}"',
    'mode in ["r", "w{i}"]',
    "size < {i}",
    "size > {j}",
    'path !~ "*.env{i}"',
    'user = "u{i}"',
    'opts.flags[*] = "f{i}"',
    'command != "x{i}"',
    'path !=~ "^/etc/{i}"',
]


def mixed_rules(salt: str = "") -> list[str]:
    """1,000 rule lines: 600 exact (300 tools), 250 globs, 150 regexes.

    ``salt`` goes into every exact tool id, so a timed compile parses new text
    (rule parsing is cached per text across configs).
    """
    rules: list[str] = []
    behaviors = ["allow", "ask", "deny"]
    for i in range(600):
        tool = f"tool_{i % 300}{salt}"
        conds = [_CONDITIONS[i % 10].format(i=i, j=i * 10)]
        if i % 3 == 0:
            conds.append(_CONDITIONS[(i + 3) % 10].format(i=i, j=i * 10))
        rules.append(f"{behaviors[i % 3]} {tool}({', '.join(conds)})")
    for i in range(250):
        cond = "" if i % 5 else f'(path ~ "data/{i}/*")'
        rules.append(f"{behaviors[i % 3]} ns{i}_*{cond}")
    for i in range(150):
        rules.append(f"{behaviors[i % 3]} /^mcp_{i}_(read|write)$/")
    return rules


def mixed_calls() -> list[ToolCall]:
    """50 tools x 4 argument shapes, hitting allow/deny/ask rules and the default."""
    calls = []
    for t in range(50):
        i = t * 6
        shapes = [
            {"path": f"src/{i}/a.py", "command": f"git status {i}", "size": 5},
            {"mode": "r", "user": f"u{i}", "opts": {"flags": ["a", f"f{i}"]}},
            {"command": "rm -rf /", "path": "/etc/passwd", "size": 10_000},
            {},
        ]
        for n, args in enumerate(shapes):
            calls.append(ToolCall(id=f"c{t}-{n}", name=f"tool_{t * 6 % 300}", arguments=args))
    return calls


def context(store: Store) -> PhaseContext:
    info = RunInfo("run", "thread", "agent", "default", "default", 1)
    return PhaseContext("tool_gate", store, info, Transcript().view(), plugin_id="permissions")


OWNER_AGENT = "agent"


def gate_for(rules: list[str], **options: Any) -> Callable[[PhaseContext, ToolCall], Any]:
    config = PermissionsConfig(rules=rules, default="ask", **options)
    gate: Callable[[PhaseContext, ToolCall], Any] = (
        PermissionsPlugin().resolve(config).tool_gates[0]
    )
    return gate


def remembered_store(calls: list[ToolCall], rules: list[str]) -> Store:
    # Remembered decisions belong to an agent and its config (see the plugin README).
    owner = f"{OWNER_AGENT}#{PermissionsConfig(rules=rules, default='ask').fingerprint()}"

    def table(offset: int) -> dict[str, Any]:
        out = {}
        for k in range(100):
            args = {"path": f"remembered/{offset + k}"}
            out[call_key("tool_1", args, owner)] = {
                "tool": "tool_1",
                "arguments": args,
                "behavior": "allow",
            }
        return out

    first = calls[0]
    thread = table(0)
    thread[call_key(first.name, first.arguments, owner)] = {
        "tool": first.name,
        "arguments": first.arguments,
        "behavior": "allow",
    }
    return Store(
        {(Scope.THREAD, REMEMBERED_KEY): thread, (Scope.PROFILE, REMEMBERED_KEY): table(1000)}
    )


def time_gate(
    gate: Callable[[PhaseContext, ToolCall], Any],
    store: Store,
    calls: list[ToolCall],
    rounds: int,
    per_round: int,
    fresh: Callable[[int], ToolCall] | None = None,
) -> dict[str, float]:
    ctx = context(store)
    for c in calls:  # warm the per-tool caches (except for the cold scenario)
        gate(ctx, c)
    samples = []
    counter = 0
    for _ in range(rounds):
        if fresh is not None:
            batch = [fresh(counter + k) for k in range(per_round)]
            counter += per_round
        else:
            batch = [calls[k % len(calls)] for k in range(per_round)]
        start = CLOCK[0]()
        for call in batch:
            gate(ctx, call)
        samples.append((CLOCK[0]() - start) / per_round / 1e3)
    samples.sort()
    return {
        "median_us": statistics.median(samples),
        "p90_us": samples[int(len(samples) * 0.9) - 1 if len(samples) > 1 else 0],
        "min_us": samples[0],
    }


def measure(rounds: int, per_round: int) -> list[dict[str, Any]]:
    rules = mixed_rules()
    calls = mixed_calls()
    gate = gate_for(rules)
    empty = Store({})
    rows = [
        {
            "scenario": "mixed",
            "rules": len(rules),
            **time_gate(gate, empty, calls, rounds, per_round),
        }
    ]
    rows.append(
        {
            "scenario": "mixed + 200 remembered",
            "rules": len(rules),
            **time_gate(gate, remembered_store(calls, rules), calls, rounds, per_round),
        }
    )

    def cold(n: int) -> ToolCall:
        return ToolCall(id=f"k{n}", name=f"fresh_tool_{n}", arguments={"path": "src/a"})

    rows.append(
        {
            "scenario": "cold tool ids (cache miss)",
            "rules": len(rules),
            **time_gate(gate, empty, calls, rounds, max(1, per_round // 10), cold),
        }
    )
    kinds = ("allow", "ask", "deny")
    shell = [ToolCall(id="w", name="shell", arguments={"command": "ls -la"})]
    equal = [f'{kinds[i % 3]} shell(command = "never {i}")' for i in range(1000)]
    rows.append(
        {
            "scenario": '1,000 "=" rules on one tool',
            "rules": len(equal),
            **time_gate(gate_for(equal), empty, shell, rounds, per_round),
        }
    )
    globs = [f'{kinds[i % 3]} shell(command ~ "never {i} *")' for i in range(1000)]
    rows.append(
        {
            "scenario": '1,000 prefixed "~" on one tool',
            "rules": len(globs),
            **time_gate(gate_for(globs), empty, shell, rounds, max(1, per_round // 10)),
        }
    )
    regexes = [f'{kinds[i % 3]} shell(command =~ "^never {i} [a-z]+$")' for i in range(1000)]
    rows.append(
        {
            "scenario": 'worst: 1,000 "=~" on one tool',
            "rules": len(regexes),
            "target_us": BOUNDS_US["regex"],
            **time_gate(gate_for(regexes), empty, shell, rounds, max(1, per_round // 10)),
        }
    )
    leading = [f'{kinds[i % 3]} shell(command ~ "*x{i}*y")' for i in range(1000)]
    long_call = [ToolCall(id="l", name="shell", arguments={"command": "ab" * 100})]
    rows.append(
        {
            "scenario": "worst: 1,000 leading-* globs, 200-char arg",
            "rules": len(leading),
            "target_us": BOUNDS_US["leading"],
            **time_gate(gate_for(leading), empty, long_call, rounds, max(1, per_round // 10)),
        }
    )
    # Adversarial: the argument holds the literal text of ~100 of the globs, so their
    # regexes run too (none matches: no "y" follows).
    literals = "".join(f"x{i}" for i in range(0, 1000, 17))[:200]
    dense = [ToolCall(id="d", name="shell", arguments={"command": literals})]
    rows.append(
        {
            "scenario": "worst: leading-* globs, literals in the arg",
            "rules": len(leading),
            "target_us": BOUNDS_US["leading_dense"],
            **time_gate(gate_for(leading), empty, dense, rounds, max(1, per_round // 10)),
        }
    )
    declared = {"shell_arguments": {"shell": ["command"]}}
    prefixed = [f'{kinds[i % 3]} shell(command ~ "tool{i} *")' for i in range(999)]
    prefixed.append('allow shell(command ~ "git *")')
    compound = "git status && git log -n 3 | git grep x; git show $(git rev-parse HEAD)"
    shell_call = [ToolCall(id="s", name="shell", arguments={"command": compound})]
    rows.append(
        {
            "scenario": "shell-aware, 4-part command",
            "rules": len(prefixed),
            **time_gate(gate_for(prefixed, **declared), empty, shell_call, rounds, per_round),
        }
    )
    shell_gate = gate_for(prefixed, **declared)

    def fresh_compound(n: int) -> ToolCall:
        return ToolCall(id=f"f{n}", name="shell", arguments={"command": f"{compound} {n}"})

    rows.append(
        {
            "scenario": "shell-aware, new $(...) command each (fast)",
            "rules": len(prefixed),
            **time_gate(shell_gate, empty, shell_call, rounds, 20, fresh_compound),
        }
    )
    listed = "git status && git log -n {n} | git grep x; git show HEAD"

    def fresh_list(n: int) -> ToolCall:
        return ToolCall(id=f"g{n}", name="shell", arguments={"command": listed.format(n=n)})

    rows.append(
        {
            "scenario": "shell-aware, new 4-part list each (fast)",
            "rules": len(prefixed),
            **time_gate(shell_gate, empty, shell_call, rounds, per_round, fresh_list),
        }
    )
    quoted = "git commit -m 'fix {n}: a; b' && git push origin \"main\""

    def fresh_quoted(n: int) -> ToolCall:
        return ToolCall(id=f"h{n}", name="shell", arguments={"command": quoted.format(n=n)})

    rows.append(
        {
            "scenario": "shell-aware, new quoted command each (fast)",
            "rules": len(prefixed),
            **time_gate(shell_gate, empty, shell_call, rounds, per_round, fresh_quoted),
        }
    )
    redirected = 'git log -n {n} > /tmp/log 2>&1 && grep "$P" /tmp/log'

    def fresh_redirected(n: int) -> ToolCall:
        return ToolCall(id=f"r{n}", name="shell", arguments={"command": redirected.format(n=n)})

    rows.append(
        {
            "scenario": "worst: new redirected command each (bashlex)",
            "rules": len(prefixed),
            "target_us": BOUNDS_US["bashlex"],
            **time_gate(shell_gate, empty, shell_call, rounds, 20, fresh_redirected),
        }
    )
    plain = [ToolCall(id="q", name="shell", arguments={"command": "git status --short -b"})]
    rows.append(
        {
            "scenario": "shell-aware, plain command (no parser)",
            "rules": len(prefixed),
            **time_gate(shell_gate, empty, plain, rounds, per_round),
        }
    )
    paths = [f'{kinds[i % 3]} write_file(path ~ "src/{i}/*")' for i in range(1000)]
    path_call = [ToolCall(id="p", name="write_file", arguments={"path": "src/./12/../12//a.py"})]
    path_gate = gate_for(paths, path_arguments={"write_file": ["path"]})
    rows.append(
        {
            "scenario": "path-aware, 1,000 path rules",
            "rules": len(paths),
            **time_gate(path_gate, empty, path_call, rounds, per_round),
        }
    )
    folding = gate_for(paths, path_arguments={"write_file": ["path"]}, path_case_insensitive=True)
    upper = [ToolCall(id="u", name="write_file", arguments={"path": "SRC/./12/../12//A.py"})]
    rows.append(
        {
            "scenario": "path-aware, case-insensitive",
            "rules": len(paths),
            **time_gate(folding, empty, upper, rounds, per_round),
        }
    )
    return rows


def one_off() -> list[dict[str, Any]]:
    """Compiling 1,000 rules, and the first check per tool (milliseconds, best of 5).

    Each round compiles new rule text (``salt``), then checks three tools once
    each on the fresh policy: one the rules name exactly (its index was built
    at compile time), one only a glob names, and one no rule names.
    """
    ctx = context(Store({}))
    firsts = {
        "first check: a tool named exactly": lambda salt: f"tool_0{salt}",
        "first check: a tool only a glob names": lambda salt: "ns5_tool",
        "first check: a tool no rule names": lambda salt: f"unknown{salt}",
    }
    timings: dict[str, list[float]] = {"compile 1,000 rules": [], **{k: [] for k in firsts}}
    for n in range(5):
        rules = mixed_rules(salt=f"_r{n}")
        start = CLOCK[0]()
        gate = gate_for(rules)
        timings["compile 1,000 rules"].append((CLOCK[0]() - start) / 1e6)
        for label, name in firsts.items():
            call = ToolCall(id="c", name=name(f"_r{n}"), arguments={"path": "data/5/x"})
            start = CLOCK[0]()
            gate(ctx, call)
            timings[label].append((CLOCK[0]() - start) / 1e6)
    return [{"scenario": label, "ms": min(ms)} for label, ms in timings.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None, help="gate calls per round")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args()
    if args.clock == "cpu":
        CLOCK[0] = time.process_time_ns
    rounds = args.rounds or (10 if args.quick else 50)
    per_round = args.calls or (200 if args.quick else 2000)
    rows = measure(rounds, per_round)
    once = one_off()
    header = f"{'scenario':<44} {'rules':>6} {'median':>10} {'p90':>10} {'min':>10}  target"
    print(header)
    print("-" * len(header))
    for r in rows:
        target = r.setdefault("target_us", TARGET_US)
        ok = "ok" if r["median_us"] < target else "over"
        print(
            f"{r['scenario']:<44} {r['rules']:>6} {r['median_us']:>7.2f} us "
            f"{r['p90_us']:>7.2f} us {r['min_us']:>7.2f} us  <{target:.0f} us {ok}"
        )
    for o in once:
        print(f"{o['scenario']:<44} {o['ms']:>10.2f} ms (once, best of 5)")
    RESULTS.mkdir(exist_ok=True)
    name = "permissions_quick" if args.quick else "permissions"
    out = RESULTS / (f"{name}_cpu.json" if args.clock == "cpu" else f"{name}.json")
    out.write_text(
        json.dumps(
            {
                "benchmark": "permissions",
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "cpus": __import__("os").cpu_count(),
                "quick": args.quick,
                "clock": args.clock,
                "load_average": __import__("os").getloadavg(),
                "target_median_us": TARGET_US,
                "rounds": rounds,
                "calls_per_round": per_round,
                "rows": rows,
                "once": once,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
