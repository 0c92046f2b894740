"""A plain install, offline: wheels of awaken-runtime and awaken-ext-compact only.

The test builds both wheels, installs just those two (plus their declared
dependencies, from a local wheelhouse) into a fresh venv with pip
``--no-index``, and runs an agent with ``plugin_ids=["compact"]`` (found
through the entry point) through a compaction, in a network namespace of
its own where ``unshare`` allows it. No litellm, no encoding file: counting
falls back to the estimate, warned once, and the run does not fail.

``AWAKEN_TEST_WHEELHOUSE`` names the folder of dependency wheels (and
hatchling, to build offline); ``.ci/run`` fills it with ``pip download``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = os.environ.get("AWAKEN_TEST_WHEELHOUSE")

pytestmark = pytest.mark.skipif(
    not WHEELHOUSE and not os.environ.get("CI"),  # CI never skips: it fails without one
    reason="AWAKEN_TEST_WHEELHOUSE is unset: point it at a folder of the dependency wheels "
    "(.ci/run makes one with pip download)",
)

SCRIPT = r"""
import asyncio, importlib.util, json, warnings
from awaken_runtime import AgentConfig, AgentRuntimeBuilder, ModelSpec, ScriptedExecutor, Scope

assert importlib.util.find_spec("litellm") is None, "litellm is installed"
warnings.simplefilter("always")
executor = ScriptedExecutor(["An answer with quite a few words in it. " * 15], repeat=True)
runtime = (
    AgentRuntimeBuilder()  # discovery on: "compact" comes from the installed entry point
    .with_model(ModelSpec(id="m", provider="p", model="gpt-4o", context_window=3000,
                          max_output_tokens=300))
    .with_provider("p", executor)
    .with_agent_spec(AgentConfig(id="a", model_binding="m", instructions="Be helpful.",
                                 plugin_ids=["compact"],
                                 plugin_config={"compact": {"min_gain_tokens": 100}}))
    .build()
)

async def main():
    with warnings.catch_warnings(record=True) as caught:
        states = [await runtime.run("a", f"question {i}: " + "some detail " * 40,
                                    thread_id="t") for i in range(20)]
    kinds = [s.end_cause.kind for s in states]
    stats = states[-1].state.get((Scope.RUN, "compact.stats")) or {}
    compactions = 0
    for s in states:
        compactions += (s.state.get((Scope.RUN, "compact.stats")) or {}).get("compactions", 0)
    summary = states[-1].state.get((Scope.THREAD, "compact.summary"))
    estimate_warnings = [str(w.message) for w in caught if "estimate" in str(w.message)]
    print(json.dumps({"kinds": sorted(set(kinds)), "compactions": compactions,
                      "summary": summary is not None, "warnings": estimate_warnings,
                      "requests": len(executor.requests)}))

asyncio.run(main())
"""


def _offline_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "TIKTOKEN"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull,  # no machine-wide index, find-links or constraints
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        TIKTOKEN_CACHE_DIR=str(tmp / "no-cache"),  # no encoding file from earlier downloads
        TMPDIR=str(tmp),
        PYTHONNOUSERSITE="1",
    )
    env.pop("PYTHONPATH", None)
    env.pop("DATA_GYM_CACHE_DIR", None)
    return env


def _no_network_prefix() -> list[str]:
    """``unshare -n`` (a network namespace with only a down loopback) when permitted."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, check=False)
    return [unshare, "-n"] if probe.returncode == 0 else []


def _run(cmd: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, f"{cmd[:4]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_wheels_installed_offline_run_a_compaction(tmp_path: Path) -> None:
    assert WHEELHOUSE, "AWAKEN_TEST_WHEELHOUSE must name the dependency wheelhouse"
    env = _offline_env(tmp_path)
    (tmp_path / "no-cache").mkdir()
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip"]
    for package in ("awaken-runtime", "awaken-ext-compact"):
        _run(
            [*pip, "wheel", "--quiet", "--no-deps", "--find-links", WHEELHOUSE, "-w", str(dist),
             str(ROOT / "packages" / package)],
            env,
        )  # fmt: skip
    built = sorted(p.name for p in dist.glob("*.whl"))
    assert [n.split("-")[0] for n in built] == ["awaken_ext_compact", "awaken_runtime"]
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    python = str(target / "bin" / "python")
    _run(
        [*pip, "--python", python, "install", "--quiet", "--find-links", str(dist),
         "--find-links", WHEELHOUSE, "awaken-runtime", "awaken-ext-compact"],
        env,
    )  # fmt: skip
    installed = _run([*pip, "--python", python, "list", "--format=json"], env)
    names = {d["name"].lower() for d in json.loads(installed)}
    assert {"awaken-runtime", "awaken-ext-compact", "tiktoken"} <= names
    assert "litellm" not in names
    out = _run([*_no_network_prefix(), python, "-c", SCRIPT], env)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["kinds"] == ["natural_end"]  # no run failed
    assert result["compactions"] >= 1 and result["summary"]
    assert result["requests"] > 20  # 20 answers plus the built-in summarizer's calls
    (warning,) = result["warnings"]  # warned once, in 20 runs
    assert "counting tokens with an estimate instead of 'o200k_base'" in warning
