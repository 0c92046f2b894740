"""The file backend (``file:///dir``): append-only JSONL files, fsynced, under a lock file.

``_store.py`` is :class:`FileStore` (the layout of its directory is in its
docstring); ``_mirror.py`` the locked in-process mirror (a ``memory.Core``)
of what the files hold; ``_commit.py`` one thread commit's lines;
``_lines.py`` their framing; ``_io.py`` the I/O thread and its fsync rounds;
``_leases.py`` the lease log; ``_retention.py`` pruning; ``_jsonl.py`` the
durable append, lock and torn-tail primitives.
"""

from __future__ import annotations

from ._store import FileStore

__all__ = ["FileStore"]
