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

from awaken_ext_permissions._matchers import _regex, glob_regex
from awaken_ext_permissions._vouch import _plain

RIG_PATH = Path(__file__).with_name("perm_rig.py")


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("awaken_perm_rig", RIG_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_RIG = _load()


@pytest.fixture(autouse=True)
def _cold_caches() -> None:
    """Each test sees the matchers' module caches empty, so what it checks is computed
    by the code under test, not remembered from an earlier test (or, in a mutation
    run, from the unmutated code in the parent process)."""
    _plain.cache_clear()
    glob_regex.cache_clear()
    _regex.cache_clear()


@pytest.fixture
def rig() -> Any:
    """The ``perm_rig`` module: ``build``, ``call``, ``calls``, tools, ``coder``."""
    return _RIG


@pytest.fixture
def rig_path() -> Path:
    """Path of ``perm_rig.py`` (for subprocesses)."""
    return RIG_PATH
