"""Every distribution under packages/ publishes correctly: license, authors, classifiers,
one pin on awaken-runtime, and a README that reads right on a package index."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent for p in ROOT.glob("packages/*/pyproject.toml"))
LICENSE = (ROOT / "LICENSE").read_text(encoding="utf-8")
PYTHONS = ("3.11", "3.12", "3.13")
RUNTIME_PIN = "awaken-runtime~=0.1.0"
# A markdown link or image whose target is neither a URL nor an anchor.
RELATIVE_LINK = re.compile(r"!?\[[^\]]*\]\((?!https?://|mailto:|#)([^)\s]+)\)")


def project(package: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))
    return data


def test_the_root_license_is_mit() -> None:
    assert LICENSE.startswith("MIT License\n")


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_license_and_authors(package: Path) -> None:
    meta = project(package)["project"]
    assert meta["license"] == "MIT"
    assert meta["license-files"] == ["LICENSE"]
    assert (package / "LICENSE").read_text(encoding="utf-8") == LICENSE
    assert meta["authors"] and all(a.get("name") for a in meta["authors"])
    sdist = project(package)["tool"]["hatch"]["build"]["targets"].get("sdist", {})
    if "include" in sdist:
        assert "LICENSE" in sdist["include"], "the sdist must carry the LICENSE"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_python_versions(package: Path) -> None:
    meta = project(package)["project"]
    assert meta["requires-python"] == ">=3.11"
    listed = {c.rsplit(" :: ", 1)[1] for c in meta["classifiers"] if "Python :: 3." in c}
    assert listed == set(PYTHONS)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_one_compatible_release_pin_on_the_runtime(package: Path) -> None:
    deps = project(package)["project"].get("dependencies", [])
    on_runtime = [d for d in deps if re.match(r"awaken-runtime\b", d)]
    if package.name == "awaken-runtime":
        assert on_runtime == []
    else:
        assert on_runtime == [RUNTIME_PIN]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_readme_has_no_relative_links(package: Path) -> None:
    readme = project(package)["project"]["readme"]
    text = (package / readme).read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code may hold anything
    assert RELATIVE_LINK.findall(text) == [], "use absolute URLs: a package index has no folders"


def test_the_link_check_catches_sibling_links() -> None:
    found = RELATIVE_LINK.findall(
        "[a](../awaken-runtime/README.md) [b](https://x.org) [c](#top) ![d](docs/x.png)"
    )
    assert found == ["../awaken-runtime/README.md", "docs/x.png"]
