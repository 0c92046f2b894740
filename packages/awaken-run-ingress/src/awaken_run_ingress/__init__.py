"""A durable multi-worker run ingress for Awaken on PostgreSQL (pgqueuer).

::

    from awaken_run_ingress import RunIngress

    async with RunIngress("postgresql://app@db/awaken") as ingress:
        submitted = await ingress.submit("assistant", "hello", thread_id="t-1")

and on any number of machines, ``awaken worker --queue postgresql://app@db/awaken
--store postgresql://app@db/awaken --setup myapp.agents:configure``.

The names load on first use: the ``awaken`` command imports this package to
add its ``worker`` subcommand, and the queue's libraries (pgqueuer, the
PostgreSQL driver) take a quarter of a second to import, which no other
subcommand should pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awaken_runtime._lazy import lazy_names

if TYPE_CHECKING:
    from ._ingress import RunIngress, Submitted, run_entrypoint
    from ._jobs import CANCEL, DECISION, RUN, DecisionJob, RunJob
    from ._worker import Worker

_HOMES = {
    "CANCEL": "._jobs",
    "DECISION": "._jobs",
    "DecisionJob": "._jobs",
    "RUN": "._jobs",
    "RunIngress": "._ingress",
    "RunJob": "._jobs",
    "Submitted": "._ingress",
    "Worker": "._worker",
    "run_entrypoint": "._ingress",
}

__all__ = [
    "CANCEL",
    "DECISION",
    "RUN",
    "DecisionJob",
    "RunIngress",
    "RunJob",
    "Submitted",
    "Worker",
    "run_entrypoint",
]

__version__ = "0.1.0"

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
