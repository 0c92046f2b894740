"""A durable multi-worker run ingress for Awaken on PostgreSQL (pgqueuer).

::

    from awaken_run_ingress import RunIngress

    async with RunIngress("postgresql://app@db/awaken") as ingress:
        submitted = await ingress.submit("assistant", "hello", thread_id="t-1")

and on any number of machines, ``awaken worker --queue postgresql://app@db/awaken
--store postgresql://app@db/awaken --setup myapp.agents:configure``.
"""

from __future__ import annotations

from ._ingress import RunIngress, Submitted, run_entrypoint
from ._jobs import CANCEL, DECISION, RUN, DecisionJob, RunJob
from ._worker import Worker

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
