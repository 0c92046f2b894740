"""The public API is exactly the recorded one: every name, in every public module.

``data/public_api.json`` was written before the runtime moved into folders by
concept; the move may change private module paths only. Each public name must
still resolve, to an object of the same kind and qualified name (or the same
constant value). A deliberate change of the API updates the record too.

A public name is written once, in its module's ``__all__``: the package's lazy
table (``_exports.py``) is written from those by ``python -m awaken_runtime._public``.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

import awaken_runtime
from awaken_runtime import _public
from awaken_runtime._exports import LAZY

RECORDED = json.loads((Path(__file__).parent / "data" / "public_api.json").read_text())


def _describe(value: Any) -> dict[str, Any]:
    if isinstance(value, type):
        return {"kind": "class", "qualname": value.__qualname__}
    if callable(value) and hasattr(value, "__qualname__"):
        return {"kind": type(value).__name__, "qualname": value.__qualname__}
    if isinstance(value, frozenset):  # its repr's order depends on the hash seed
        return {"kind": "frozenset", "value": repr(sorted(value))}
    if isinstance(value, (str, int, float, bool, tuple)):
        return {"kind": type(value).__name__, "value": repr(value)}
    return {"kind": type(value).__name__}


def _names(module: Any) -> list[str]:
    return list(getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]))


@pytest.mark.parametrize("module_name", sorted(RECORDED))
def test_public_names_unchanged(module_name: str) -> None:
    module = importlib.import_module(module_name)
    recorded = RECORDED[module_name]
    assert _names(module) == recorded["__all__"]
    described = {name: _describe(getattr(module, name)) for name in _names(module)}
    assert described == recorded["names"]


def test_the_export_table_is_the_one_the_modules_all_make() -> None:
    written = (Path(_public.__file__).parent / "_exports.py").read_text()
    assert written == _public.render(_public.derive()), (
        "awaken_runtime/_exports.py is stale: run `python -m awaken_runtime._public`"
    )
    for name, module in LAZY.items():
        defined = importlib.import_module(f"awaken_runtime.{module}")
        assert getattr(defined, name) is getattr(awaken_runtime, name), name


def test_a_name_in_two_public_modules_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from awaken_runtime.tools import _cancel

    monkeypatch.setattr(_cancel, "__all__", [*_cancel.__all__, "Runtime"])
    with pytest.raises(ValueError, match=r"'Runtime' is in the __all__ of both .* drop it"):
        _public.derive()


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        awaken_runtime.Nope  # noqa: B018
