"""MCP servers that fail at start, for the process-lifecycle tests.

``hang``: reads stdin, never answers the handshake. ``stubborn``: the same,
ignoring SIGTERM (only SIGKILL ends it), with a child process in its group.
``crash``: writes to stderr and exits with status 7 before answering.
``garbage``: answers the handshake with a line that is not JSON-RPC.
Each writes its pid to ``$BROKEN_PIDS`` first (one per line, children too).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

mode = sys.argv[1]
with open(os.environ["BROKEN_PIDS"], "a", encoding="utf-8") as f:
    f.write(f"{os.getpid()}\n")
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["BROKEN_PIDS"], "a", encoding="utf-8") as f:
        f.write(f"{child.pid}\n")
if mode in ("hang", "stubborn"):
    sys.stderr.write(f"{mode}: listening, never answering\n")
    sys.stderr.flush()
    while True:
        if not sys.stdin.readline() and mode == "hang":
            time.sleep(600)  # even a closed stdin does not end it: only a signal does
        time.sleep(0.01)
if mode == "crash":
    sys.stderr.write("loading config\nfatal: no such config file /etc/broken.toml\n")
    sys.stderr.flush()
    sys.exit(7)
if mode == "garbage":
    sys.stdin.readline()
    sys.stdout.write("Welcome to the broken server! v1.0\n")
    sys.stdout.flush()
    time.sleep(600)
