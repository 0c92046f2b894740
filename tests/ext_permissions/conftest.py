"""Shared rig for the awaken_ext_permissions tests.

Test modules run under ``--import-mode=importlib`` and cannot import each
other, so the scripted agents live in ``perm_rig.py`` (also run as a
subprocess by the cross-process and terminal tests) and reach the tests
through the ``rig`` fixture.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

RIG_PATH = Path(__file__).with_name("perm_rig.py")


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("awaken_perm_rig", RIG_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_RIG = _load()


@pytest.fixture
def rig() -> Any:
    """The ``perm_rig`` module: ``build``, ``call``, ``calls``, tools, ``coder``."""
    return _RIG


@pytest.fixture
def rig_path() -> Path:
    """Path of ``perm_rig.py`` (for subprocesses)."""
    return RIG_PATH
