"""Store backends and ports: memory, file (JSONL) and SQLite, opened by URL.

===========================  ==============================================
``memory://``                :class:`InMemoryStore` (tests, notebooks, demo)
``file:///abs/dir``          :class:`FileStore`: append-only JSONL per thread
``sqlite:///rel.db``         :class:`SQLiteStore`: the embedded default (WAL)
``sqlite:////abs/awaken.db``  (an absolute path: four slashes)
``postgresql://...``         with awaken-store-postgres installed (any scheme
                             registered in the ``awaken.stores`` entry points)
===========================  ==============================================

``open_store(url)`` returns a backend implementing every port (:class:`FullStore`);
pass it to ``AgentRuntimeBuilder.with_store``. ``?lease_ttl=SECONDS`` sets how
long a crashed run keeps its thread locked. The CLI reads ``--store`` or
``AWAKEN_STORE``. Third-party backends are checked with the
``awaken-store-conformance`` pytest plugin; a database backend can keep the
threads it decoded with :class:`KeptThreads`, as the SQLite one does, and hand out
its rows undecoded as :class:`StoredMessages` (each decoded when a run first reads it),
decoding them with :func:`decode_message_rows` or handing them out with
:func:`lazy_message_rows` (a damaged row is ``StoreCorrupt`` naming it), and any
other row with :func:`decode_stored_row`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ..messages._stored import StoredMessages
from ._errors import (
    ConfigNotFound,
    DuplicateMessageId,
    InvalidCommit,
    LeaseLost,
    RunRecordError,
    StoreCorrupt,
    StoreError,
    StoreIOError,
    StoreSchemaError,
    UnmatchedToolResult,
)
from ._lease import DEFAULT_LEASE_TTL, hold_lease, new_holder
from ._ports import (
    CheckpointReader,
    ConfigRegistry,
    FullStore,
    Lease,
    LeaseStore,
    ProfileStore,
    Retention,
    RunStore,
    StreamCheckpointStore,
    ThreadAdmin,
)
from ._thread_store import (
    CommittedThreadView,
    Coordinator,
    RunRecord,
    ScopeBinding,
    ThreadSnapshot,
    ThreadStore,
)
from .memory import InMemoryStore

# The file and SQLite backends load on first use (PEP 562): `import awaken_runtime`
# imports this package for the in-memory store and must not pay for sqlite3 & co;
# nor a run for the records of listings, event logs, configs and pruning.
_LAZY = {
    "ConfigVersion": "._records",
    "Page": "._records",
    "PruneReport": "._records",
    "StreamEvent": "._records",
    "ThreadInfo": "._records",
    "FileStore": ".file",
    "KeptThread": "._kept",
    "KeptThreads": "._kept",
    "SQLiteStore": ".sqlite",
    "SCHEMA_VERSION": ".sqlite",
    "decode_message_rows": "._rows",
    "decode_stored_row": "._rows",
    "lazy_message_rows": "._rows",
    "STORE_ENV": "._url",
    "STORE_GROUP": "._url",
    "default_store_url": "._url",
    "open_store": "._url",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)


if TYPE_CHECKING:
    from ._kept import KeptThread, KeptThreads
    from ._records import ConfigVersion, Page, PruneReport, StreamEvent, ThreadInfo
    from ._rows import decode_message_rows, decode_stored_row, lazy_message_rows
    from ._url import STORE_ENV, STORE_GROUP, default_store_url, open_store
    from .file import FileStore
    from .sqlite import SCHEMA_VERSION, SQLiteStore

__all__ = [
    "DEFAULT_LEASE_TTL",
    "SCHEMA_VERSION",
    "STORE_ENV",
    "STORE_GROUP",
    "CheckpointReader",
    "CommittedThreadView",
    "ConfigNotFound",
    "ConfigRegistry",
    "ConfigVersion",
    "Coordinator",
    "DuplicateMessageId",
    "FileStore",
    "FullStore",
    "InMemoryStore",
    "InvalidCommit",
    "KeptThread",
    "KeptThreads",
    "Lease",
    "LeaseLost",
    "LeaseStore",
    "Page",
    "ProfileStore",
    "PruneReport",
    "Retention",
    "RunRecord",
    "RunRecordError",
    "RunStore",
    "SQLiteStore",
    "ScopeBinding",
    "StoreCorrupt",
    "StoreError",
    "StoreIOError",
    "StoreSchemaError",
    "StoredMessages",
    "StreamCheckpointStore",
    "StreamEvent",
    "ThreadAdmin",
    "ThreadInfo",
    "ThreadSnapshot",
    "ThreadStore",
    "UnmatchedToolResult",
    "decode_message_rows",
    "decode_stored_row",
    "default_store_url",
    "hold_lease",
    "lazy_message_rows",
    "new_holder",
    "open_store",
]
