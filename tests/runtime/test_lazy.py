"""LazyModule: imported on the first name read, then read like any attribute."""

from __future__ import annotations

import subprocess
import sys

import pytest

from awaken_runtime._lazy import LazyModule


def test_the_module_loads_on_first_read_and_its_names_are_then_plain_attributes() -> None:
    code = """
import sys
from awaken_runtime._lazy import LazyModule
lazy = LazyModule("awaken_runtime.plugins._gates")
assert "awaken_runtime.plugins._gates" not in sys.modules
block = lazy.Block
import awaken_runtime.plugins._gates as real
assert block is real.Block and lazy.winner is real.winner
assert "Block" in vars(lazy)  # copied: later reads never reach __getattr__
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_name_the_module_lacks_is_an_attribute_error() -> None:
    lazy = LazyModule("json")
    with pytest.raises(AttributeError, match="nope"):
        lazy.nope  # noqa: B018
    assert lazy.dumps([1]) == "[1]"
    assert "json" in repr(lazy)


def test_lazy_names_import_a_name_on_first_read_then_keep_it() -> None:
    code = """
import sys, types
from awaken_runtime._lazy import lazy_names
pkg = types.ModuleType("fake_pkg")
pkg.__path__ = []
sys.modules["fake_pkg"] = pkg
sys.modules["fake_pkg._json"] = __import__("json")
pkg.__getattr__, pkg.__dir__ = lazy_names("fake_pkg", {"dumps": "._json"})
assert "dumps" not in vars(pkg) and "dumps" in dir(pkg)
from fake_pkg import dumps
import json
assert dumps is json.dumps and vars(pkg)["dumps"] is json.dumps
try:
    pkg.loads
except AttributeError as exc:
    assert "module 'fake_pkg' has no attribute 'loads'" in str(exc), exc
else:
    raise AssertionError("a name not listed must not load")
"""
    subprocess.run([sys.executable, "-c", code], check=True)
