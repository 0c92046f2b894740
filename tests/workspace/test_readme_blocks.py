"""Every code block of every README runs (or parses) as written, so the READMEs cannot rot.

Blocks are found generically, in the root README and every ``packages/*/README.md``:

- ```` ```python ```` blocks run as scripts, in order, in one scratch folder per README
  (a block may use a file an earlier block of the same README wrote);
- ```` ```toml ```` and ```` ```json ```` blocks must parse; a TOML or JSON block holding an
  agent (``model_binding`` at the top level or an ``agent`` table) must load as an agent
  file, import paths included;
- in ```` ```sh ```` / ```` ```bash ```` blocks, every ``awaken ...``, ``hatch run ...`` and
  ``python3 dev.py ...`` line must name a real subcommand, options and script (they are
  parsed, not run: they install things, need keys or start servers).

Markers, an HTML comment on the line right above the fence (invisible on a package index):

- ``<!-- readme-test: skip: REASON -->`` leaves the block out (a fragment, a sketch);
- ``<!-- readme-test: file NAME -->`` writes the block to ``NAME`` in the scratch folder
  instead of running it (a module an agent file imports, a skill file).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READMES = sorted([ROOT / "README.md", *ROOT.glob("packages/*/README.md")])
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*readme-test:\s*(skip|file)\b:?\s*(.*?)\s*-->\s*$")
SHELLS = ("sh", "bash", "shell", "console")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, text, line in the README and marker."""

    lang: str
    text: str
    line: int
    marker: tuple[str, str] | None

    def where(self, readme: Path) -> str:
        return f"{readme.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks(readme: Path) -> list[Block]:
    text = readme.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = MARKER.search(before)
        marker = (marked.group(1), marked.group(2)) if marked else None
        found.append(Block(match.group(1).lower(), match.group(2), line, marker))
    return found


def _is_agent(data: object) -> bool:
    return isinstance(data, dict) and ("model_binding" in data or "agent" in data)


def _load_agent(path: Path, folder: Path) -> str | None:
    code = (
        "import sys; from awaken_runtime import AgentFile; "
        "f = AgentFile.load(sys.argv[1]); print(f.config.id)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(folder),
    )
    return None if done.returncode == 0 else done.stderr.strip().splitlines()[-1]


def _env(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "AWAKEN_STORE": "memory://",
        "PYTHONPATH": str(folder),
        "HOME": str(folder),  # nothing a block writes lands in the real home
    }


def _run_python(block: Block, folder: Path, index: int) -> str | None:
    script = folder / f"_readme_block_{index}.py"
    script.write_text(block.text, encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=180,
            env=_env(folder),
        )
    except subprocess.TimeoutExpired:
        return "did not finish within 180 s (a server? mark it skip with a reason)"
    if done.returncode != 0:
        tail = "\n    ".join(done.stderr.strip().splitlines()[-6:])
        return f"exit status {done.returncode}:\n    {tail}"
    return None


def _check_data(block: Block, folder: Path, index: int) -> str | None:
    try:
        data = tomllib.loads(block.text) if block.lang == "toml" else json.loads(block.text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        return f"does not parse: {exc}"
    if not _is_agent(data):
        return None
    path = folder / f"_readme_agent_{index}.{block.lang}"
    path.write_text(block.text, encoding="utf-8")
    return _load_agent(path, folder)


def _hatch_scripts() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    envs = config["tool"]["hatch"]["envs"]
    # Commands any env with the workspace installed has, besides the scripts.
    names = {"awaken", "python", "pytest", *envs["default"].get("scripts", {})}
    for env, table in envs.items():
        names |= {f"{env}:{script}" for script in table.get("scripts", {})}
        names.add(f"{env}:awaken")  # every env with the runtime has the console script
    return names


def _check_shell(block: Block) -> list[str]:
    from awaken_runtime.cli._main import build_parser

    problems = []
    for raw in block.text.splitlines():
        line = raw.split(" #", 1)[0].strip().removeprefix("$ ")
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:
            problems.append(f"{line!r}: {exc}")
            continue
        if words[0] == "awaken":
            parser = build_parser()
            parser.exit = lambda status=0, message=None: (_ for _ in ()).throw(  # type: ignore[method-assign]
                ValueError(message or f"exit {status}")
            )
            parser.error = lambda message: (_ for _ in ()).throw(ValueError(message))  # type: ignore[method-assign]
            try:
                parser.parse_args(words[1:])
            except (ValueError, SystemExit) as exc:
                problems.append(f"{line!r}: {exc}".strip())
        elif words[:2] == ["hatch", "run"] and len(words) > 2:
            if words[2] not in _hatch_scripts():
                problems.append(f"{line!r}: no hatch script {words[2]!r} in pyproject.toml")
        elif (
            words[0].startswith("python")
            and words[1:2] == ["dev.py"]
            and words[2:3] not in (["demo"], ["test"], ["hatch"])
        ):
            problems.append(f"{line!r}: dev.py takes demo, test or hatch")
    return problems


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_code_blocks_run_as_written(readme: Path, tmp_path: Path) -> None:
    problems: list[str] = []
    for index, block in enumerate(blocks(readme)):
        if block.marker is not None:
            kind, arg = block.marker
            if not arg:
                problems.append(f"{block.where(readme)}: the {kind} marker needs a reason/name")
            elif kind == "file":
                (tmp_path / arg).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / arg).write_text(block.text, encoding="utf-8")
            continue
        if block.lang == "python":
            problem = _run_python(block, tmp_path, index)
        elif block.lang in ("toml", "json"):
            problem = _check_data(block, tmp_path, index)
        elif block.lang in SHELLS:
            problem = "; ".join(_check_shell(block)) or None
        else:
            continue
        if problem:
            problems.append(f"{block.where(readme)}: {problem}")
    assert not problems, "README blocks that do not run as written:\n" + "\n".join(problems)


# --- the checker itself ---------------------------------------------------------------


def test_blocks_and_markers_are_found(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n\n```python\nprint(1)\n```\n\n<!-- readme-test: skip: a fragment -->\n"
        "```python\nawait x\n```\n\n<!-- readme-test: file tools.py -->\n```python\n"
        "def f(): ...\n```\n\n```sh\nawaken demo\n```\n",
        encoding="utf-8",
    )
    found = blocks(readme)
    assert [(b.lang, b.line, b.marker) for b in found] == [
        ("python", 3, None),
        ("python", 8, ("skip", "a fragment")),
        ("python", 13, ("file", "tools.py")),
        ("sh", 17, None),
    ]


def test_a_broken_python_block_is_reported(tmp_path: Path) -> None:
    block = Block("python", "import nonexistent_module_xyz\n", 1, None)
    problem = _run_python(block, tmp_path, 0)
    assert problem is not None and "nonexistent_module_xyz" in problem


def test_a_bad_agent_toml_block_is_reported(tmp_path: Path) -> None:
    bad = Block("toml", 'id = "a"\nmodel_binding = "m"\ntool_ids = ["nomod_xyz:f"]\n', 1, None)
    problem = _check_data(bad, tmp_path, 0)
    assert problem is not None and "no module named 'nomod_xyz'" in problem
    assert _check_data(Block("toml", "a = [", 1, None), tmp_path, 1) is not None
    assert _check_data(Block("toml", 'plain = "data"\n', 1, None), tmp_path, 2) is None


@pytest.mark.parametrize(
    ("line", "ok"),
    [
        ("awaken demo", True),
        ('awaken demo "Weather in Paris?"', True),
        ("awaken run --agent a.toml hi", True),
        ("awaken run --agnet a.toml hi", False),
        ("awaken fly", False),
        ("hatch run test -k state", True),
        ("hatch run demo:awaken demo", True),
        ("hatch run nope", False),
        ("python3 dev.py demo", True),
        ("python3 dev.py tset", False),
        ("pip install awaken-runtime", True),
    ],
)
def test_shell_lines_are_checked(line: str, ok: bool) -> None:
    assert (not _check_shell(Block("sh", line + "\n", 1, None))) is ok
