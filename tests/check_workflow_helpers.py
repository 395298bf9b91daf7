"""Read the example GitHub Actions workflow without a YAML library (no new dependency).

The workflow is written in a plain block style (two-space indents, `key: value`, `run: |`
blocks), which is all these helpers understand; the tests check it stays that way.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = PROJECT_ROOT / "examples" / "github-actions" / "memledger.yml"


def workflow_text() -> str:
    """The example workflow file."""
    return WORKFLOW.read_text(encoding="utf-8")


def top_level_keys(text: str) -> list[str]:
    """Keys at indentation 0 (comments and blank lines skipped)."""
    return [
        line.split(":", 1)[0]
        for line in text.splitlines()
        if line and not line.startswith((" ", "#")) and ":" in line
    ]


def mapping(text: str, key: str) -> dict[str, str]:
    """The `KEY: value` pairs of a top-level block mapping (values without trailing comments)."""
    pairs: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if not line.startswith(" ") and line.strip():
            inside = line.startswith(f"{key}:")
            continue
        match = re.match(r"^  ([\w-]+): (.*?)(\s+#.*)?$", line)
        if inside and match:
            pairs[match.group(1)] = match.group(2).strip().strip('"')
    return pairs


def run_blocks(text: str) -> list[str]:
    """The shell script of every `run:` step (block scalars joined, one-liners as is)."""
    lines = text.splitlines()
    blocks: list[str] = []
    index = 0
    while index < len(lines):
        match = re.match(r"^(\s*)(?:- )?run: (.*)$", lines[index])
        index += 1
        if not match:
            continue
        indent, value = len(match.group(1)), match.group(2)
        if value.strip() != "|":
            blocks.append(value)
            continue
        body: list[str] = []
        while index < len(lines) and (
            not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > indent
        ):
            body.append(lines[index].strip())
            index += 1
        blocks.append("\n".join(body))
    return blocks


def memledger_commands(text: str, env: dict[str, str]) -> list[list[str]]:
    """Every `memledger ...` command of the run steps, variables expanded, as argv (no `memledger`).

    Shell continuations are joined; `|| true` and anything after `||`/`;` is dropped.
    """
    commands: list[list[str]] = []
    for block in run_blocks(text):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            if not line.startswith("memledger "):
                continue
            expanded = _expand(line, env)
            words = shlex.split(expanded, comments=True)
            for stop in ("||", "&&", ";"):
                if stop in words:
                    words = words[: words.index(stop)]
            commands.append(words[1:])
    return commands


def _expand(line: str, env: dict[str, str]) -> str:
    """Replace `$NAME` / `${NAME}` with env values (unknown names stay as written)."""
    return re.sub(r"\$\{?(\w+)\}?", lambda match: env.get(match.group(1), match.group(0)), line)
