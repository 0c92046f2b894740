"""The package's surface: every public name loads, and the ``awaken`` command does not
pay for ``acp``'s import unless ``awaken acp`` runs."""

from __future__ import annotations

import subprocess
import sys

import awaken_protocol_acp


def test_every_public_name_loads() -> None:
    for name in awaken_protocol_acp.__all__:
        assert getattr(awaken_protocol_acp, name) is not None, name


def test_adding_the_subcommand_does_not_import_acp() -> None:
    code = (
        "import sys; from awaken_runtime.cli._main import build_parser; build_parser(); "
        "import awaken_protocol_acp._cli; print('acp' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"
