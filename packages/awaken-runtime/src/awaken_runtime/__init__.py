"""Awaken: an embeddable agent runtime with a plugin ecosystem.

Build a :class:`Runtime` with :class:`AgentRuntimeBuilder`, register agents,
tools, models, providers and plugins, then ``await runtime.run(agent_id, text)``.
Everything public is importable from this module.

Submodules load on first attribute access (PEP 562), so ``import awaken_runtime``
stays light; ``from awaken_runtime import X`` loads what ``X`` needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The public modules: type checkers read each one's ``__all__`` (all of it is
# public); at run time ``_exports.py``, written from the same ``__all__``s by
# ``python -m awaken_runtime._public``, says where each name lives.
if TYPE_CHECKING:
    from ._errors import *  # noqa: F403
    from .agents._config import *  # noqa: F403
    from .agents._file import *  # noqa: F403
    from .agents._resolve import *  # noqa: F403
    from .agents._stop import *  # noqa: F403
    from .delegation._delegation import *  # noqa: F403
    from .delegation._service import *  # noqa: F403
    from .delegation._tool import *  # noqa: F403
    from .lifecycle._events import *  # noqa: F403
    from .lifecycle._failures import *  # noqa: F403
    from .lifecycle._observer import *  # noqa: F403
    from .lifecycle._run_state import *  # noqa: F403
    from .messages._message import *  # noqa: F403
    from .messages._transcript import *  # noqa: F403
    from .models._errors import *  # noqa: F403
    from .models._model import *  # noqa: F403
    from .models._output import *  # noqa: F403
    from .models._scripted import *  # noqa: F403
    from .models.litellm._errors import *  # noqa: F403
    from .models.litellm._executor import *  # noqa: F403
    from .models.litellm._retry import *  # noqa: F403
    from .plugins._actions import *  # noqa: F403
    from .plugins._await import *  # noqa: F403
    from .plugins._context import *  # noqa: F403
    from .plugins._declarative import *  # noqa: F403
    from .plugins._discovery import *  # noqa: F403
    from .plugins._gates import *  # noqa: F403
    from .plugins._plugin import *  # noqa: F403
    from .runtime._builder import *  # noqa: F403
    from .runtime._log_repair import *  # noqa: F403
    from .runtime._runtime import *  # noqa: F403
    from .state._effects import *  # noqa: F403
    from .state._engine import *  # noqa: F403
    from .state._state_key import *  # noqa: F403
    from .stores._thread_store import *  # noqa: F403
    from .stores.memory import *  # noqa: F403
    from .suspension._decisions import *  # noqa: F403
    from .suspension._suspension import *  # noqa: F403
    from .tools._cancel import *  # noqa: F403
    from .tools._function_tool import *  # noqa: F403
    from .tools._tool import *  # noqa: F403

__version__ = "0.1.0"

from ._exports import ALL as _ALL
from ._exports import LAZY as _LAZY
from ._lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {name: f".{home}" for name, home in _LAZY.items()})


__all__ = list(_ALL)
