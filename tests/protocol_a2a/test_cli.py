"""``awaken a2a serve`` refuses what it cannot serve safely, before binding a port."""

from __future__ import annotations

import os
import subprocess
import sys

from a2a_rig import HERE

MAIN = "from awaken_runtime.cli._main import main; raise SystemExit(main())"


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AWAKEN_SERVER_KEYS"}
    env["PYTHONPATH"] = f"{HERE}{os.pathsep}{env.get('PYTHONPATH', '')}"
    cmd = [sys.executable, "-c", MAIN, "a2a", "serve", "--agents", str(HERE / "agents")]
    cmd += ["--setup", "setup_child:setup", "--store", "memory://", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_no_auth_is_refused_off_loopback_and_keys_are_required() -> None:
    open_host = serve("--no-auth", "--host", "0.0.0.0")
    assert open_host.returncode == 2
    assert "--no-auth is refused on '0.0.0.0'" in open_host.stderr
    no_keys = serve()
    assert no_keys.returncode == 2
    assert "no keys: give --keys FILE or set AWAKEN_SERVER_KEYS" in no_keys.stderr


def test_an_unknown_agent_is_named_with_the_known_ones() -> None:
    done = serve("--no-auth", "--agent", "nobody")
    assert done.returncode == 2
    assert "no agent 'nobody'; the agent files define child" in done.stderr
