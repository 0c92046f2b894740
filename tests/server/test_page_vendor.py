"""The chat page's vendored libraries are the files of the npm packages the lockfile pins.

``python3 dev.py test`` runs ``npm ci`` in ``tests/server/page_js`` (a committed
lockfile); the page serves copies under ``static/vendor/`` (no build step, no CDN).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import awaken_server

JS = Path(__file__).parent / "page_js"
VENDOR = Path(awaken_server.__file__).parent / "static" / "vendor"
COPIES = {
    "marked.umd.js": ("marked", "lib/marked.umd.js"),
    "purify.min.js": ("dompurify", "dist/purify.min.js"),
    "marked.LICENSE": ("marked", "LICENSE"),
    "dompurify.LICENSE": ("dompurify", "LICENSE"),
}


@pytest.fixture(scope="module")
def modules() -> Path:
    folder = JS / "node_modules"
    if not (folder / ".package-lock.json").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{folder} missing: python3 dev.py test runs npm ci there")
        pytest.skip(f"run npm ci --prefix {JS}")
    return folder


@pytest.mark.parametrize("name", sorted(COPIES))
def test_vendored_file_equals_the_pinned_package(modules: Path, name: str) -> None:
    package, path = COPIES[name]
    assert (VENDOR / name).read_bytes() == (modules / package / path).read_bytes(), (
        f"static/vendor/{name} differs from {package}/{path}: copy it again"
    )


def test_the_readme_names_the_pinned_versions(modules: Path) -> None:
    readme = (VENDOR / "README.md").read_text()
    lock = json.loads((JS / "package-lock.json").read_text())["packages"]
    for package in {p for p, _ in COPIES.values()}:
        version = lock[f"node_modules/{package}"]["version"]
        assert json.loads((modules / package / "package.json").read_text())["version"] == version
        assert f"`{package}`" in readme and version in readme, f"README: {package} {version}"


def test_every_vendored_script_is_checked() -> None:
    scripts = {p.name for p in VENDOR.iterdir() if p.suffix == ".js"}
    assert scripts <= set(COPIES), f"unchecked vendored files: {scripts - set(COPIES)}"
