"""How the CLI reports problems: one line with the fix, the traceback only with ``--verbose``."""

from __future__ import annotations

import logging
import sys
from pathlib import PurePath
from typing import Any

__all__ = ["VERBOSE_HINT", "failure_line", "setup_logging"]

VERBOSE_HINT = "(--verbose shows the traceback)"

# Exceptions the run's own modules log are also turned into an end cause or a
# model-visible tool result, both of which the CLI prints: without --verbose
# the log line would only repeat them.
_RUN_FOLDER = ("awaken_runtime", "run")
_HANDLER = "awaken-cli"


class _OneLine(logging.Formatter):
    """``awaken: <level>: <message>[: <exception>]``, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"awaken: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f": {type(exc).__name__}: {exc} {VERBOSE_HINT}"
        return text


def _quiet(record: logging.LogRecord) -> bool:
    folder = PurePath(record.pathname).parent
    return not (record.exc_info and (folder.parent.name, folder.name) == _RUN_FOLDER)


def setup_logging(verbose: bool) -> None:
    """Send library warnings to stderr: one line each, or in full with ``verbose``."""
    handler = logging.StreamHandler(sys.stderr)
    if verbose:
        handler.setFormatter(logging.Formatter("awaken: %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(_OneLine())
        handler.addFilter(_quiet)
    handler.set_name(_HANDLER)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER]:
        root.removeHandler(old)  # main() called again in one process (tests, embedding)
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


def failure_line(failure: Any, *, verbose: bool) -> str:
    """The ``error:`` line for a run that ended in ``Error(failure)``, naming what to fix."""
    kind = failure.kind
    hint = "" if verbose else f" {VERBOSE_HINT}"
    if kind == "plugin":
        return (
            f"error: plugin {failure.plugin_id!r} failed in {failure.hook}: {failure.message}; "
            f"fix the plugin or remove {failure.plugin_id!r} from the agent's plugin_ids{hint}"
        )
    if kind == "capability_bound":
        return (
            f"error: plugin {failure.plugin_id!r} went past its capability bound "
            f"({failure.item}): {failure.message}"
        )
    if kind == "tool":
        return f"error: tool {failure.tool_id!r} stopped the run: {failure.message}{hint}"
    if kind == "internal":
        return f"error: internal error (a bug in awaken): {failure.message}{hint}"
    # Provider, config, state and lease failures already name the thing and the fix.
    return f"error: {failure.message}"
