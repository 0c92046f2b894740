"""Deriving ``_exports.LAZY`` (each public name's home module) from the modules' ``__all__``.

Not imported at run time. ``awaken_runtime/__init__.py`` star-imports each
public module under ``TYPE_CHECKING`` (type checkers read the module's
``__all__``); this module finds those imports, imports each module and
writes every name of its ``__all__`` into the table the package's lazy
``__getattr__`` and ``__all__`` read. To add a public name, add it to its
module's ``__all__`` and run::

    python -m awaken_runtime._public

``tests/runtime/test_public_api.py`` fails, naming this command, while the
written table differs from the derived one.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

__all__ = ["derive", "public_modules", "render"]

_HERE = Path(__file__).parent


def public_modules() -> list[str]:
    """The modules ``__init__`` star-imports for type checkers, in its order."""
    tree = ast.parse((_HERE / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            return [
                stmt.module
                for stmt in node.body
                if isinstance(stmt, ast.ImportFrom)
                and stmt.level == 1
                and stmt.module is not None
                and [a.name for a in stmt.names] == ["*"]
            ]
    raise LookupError("awaken_runtime/__init__.py has no `if TYPE_CHECKING:` block")


def _order(name: str) -> tuple[int, str]:
    # The order ruff's RUF022 keeps an ``__all__`` in: CONSTANTS, Classes, functions.
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def derive() -> dict[str, str]:
    """Every public name and its module (relative to ``awaken_runtime``), sorted.

    Raises ``ValueError`` if two public modules export the same name.
    """
    table: dict[str, str] = {}
    for module in public_modules():
        for name in importlib.import_module(f"awaken_runtime.{module}").__all__:
            if name in table:
                raise ValueError(
                    f"{name!r} is in the __all__ of both {table[name]} and {module}; "
                    f"a public name has one home: drop it from one of them"
                )
            table[name] = module
    return {name: table[name] for name in sorted(table, key=_order)}


def render(table: dict[str, str]) -> str:
    """The text of ``_exports.py`` holding ``table``."""
    names = sorted([*table, "__version__"], key=_order)
    return (
        '"""Where each public name of ``awaken_runtime`` lives (for its lazy ``__getattr__``).\n'
        "\n"
        "Written by ``python -m awaken_runtime._public`` from the ``__all__`` of the\n"
        "modules ``__init__`` star-imports for type checkers; do not edit.\n"
        '"""\n'
        "\n"
        "from __future__ import annotations\n"
        "\n"
        '__all__ = ["ALL", "LAZY"]\n'
        "\n"
        "LAZY: dict[str, str] = {\n"
        + "".join(f'    "{name}": "{module}",\n' for name, module in table.items())
        + "}\n"
        '"""Each public name and its module, relative to ``awaken_runtime``."""\n'
        "\n"
        "ALL = (\n" + "".join(f'    "{name}",\n' for name in names) + ")\n"
        '"""``awaken_runtime.__all__``: every public name and ``__version__``."""\n'
    )


if __name__ == "__main__":
    (_HERE / "_exports.py").write_text(render(derive()))
