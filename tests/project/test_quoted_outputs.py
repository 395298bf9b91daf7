"""The outputs README.md and docs/ quote are memledger's real outputs (review 2, m1: the README's
numbers and the diff verdict had drifted from what the commands print).

A fenced block whose first line is `$ memledger ARGS` quotes that command: it is run from the
checkout at 100 columns, and every quoted line must be a line of the output, in order; `...`
alone on a line stands for lines left out. A command naming a file that is not in the
checkout (a user's `server.log`, a paste, the corpus beside it) is not run.
"""

from __future__ import annotations

import os
import re
import shlex

import pytest

from memledger.cli import main
from tests.conftest import PROJECT_ROOT

DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(\$ memledger [^\n]*)\n(.*?)^```", re.M | re.S)
ELLIPSIS = "..."


def _argv(command: str) -> list[str] | None:
    """memledger's arguments in `$ memledger ARGS [| head ...] [# comment]`, or None when an
    argument names a file the checkout does not have (a user's log, a paste)."""
    argv = shlex.split(command.split("#", 1)[0].split("|", 1)[0])[2:]
    files = [a for a in argv if not a.startswith("-") and re.search(r"[./]", a) and "=" not in a]
    files = [a for a in files if not a[0].isdigit()]
    inside = all(not a.startswith(("/", "..", "~")) for a in files)  # the corpus is not here
    if not inside or not all((PROJECT_ROOT / a).exists() for a in files):
        return None
    return argv


def _quoted() -> list[tuple[str, int, list[str], list[str]]]:
    """(document, line, argv, quoted lines) of every runnable quoted command."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            argv = _argv(match.group(1))
            if argv is None:
                continue
            quoted = match.group(2).rstrip("\n").split("\n")
            # a second command in the same block quotes its own output: the first one's ends
            end = next((i for i, line in enumerate(quoted) if line.startswith("$ ")), None)
            line = text[: match.start()].count("\n") + 1
            found.append((document.name, line, argv, quoted[:end]))
            while end is not None:
                rest = quoted[end:]
                nxt = next((i for i, s in enumerate(rest[1:], 1) if s.startswith("$ ")), None)
                argv2 = _argv(rest[0])
                if argv2 is not None:
                    found.append((document.name, line + end + 1, argv2, rest[1:nxt]))
                quoted, end = rest, nxt
    return found


QUOTED = _quoted()


def _in_order(quoted: list[str], output: list[str]) -> str | None:
    """None when every quoted line is an output line, in order, each run of lines between
    `...` contiguous; else the first quoted line that is not where it should be."""
    while quoted and not quoted[-1].strip():
        quoted = quoted[:-1]  # the blank line before the next quoted command
    at = 0
    first_of_run = True
    for line in quoted:
        if line.strip() == ELLIPSIS:
            first_of_run = True
            continue
        if first_of_run:
            try:
                at = output.index(line, at) + 1
            except ValueError:
                return line
            first_of_run = False
        elif at < len(output) and output[at] == line:
            at += 1
        else:
            return line
    return None


def test_the_documents_quote_commands() -> None:
    documents = {name for name, *_ in QUOTED}
    assert "README.md" in documents and len(QUOTED) >= 5, QUOTED


@pytest.mark.parametrize(
    ("document", "line", "argv", "quoted"),
    QUOTED,
    ids=[f"{name}:{line}" for name, line, *_ in QUOTED],
)
def test_a_quoted_output_is_the_real_output(
    document: str,
    line: int,
    argv: list[str],
    quoted: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    main(argv)
    output = capsys.readouterr().out.splitlines()
    missing = _in_order(quoted, output)
    assert missing is None, (
        f"{document}:{line}: `memledger {' '.join(argv)}` does not print this quoted line "
        f"(where it is quoted): {missing!r}\n--- actual output:\n" + "\n".join(output[:80])
    )
    assert os.getcwd() == str(PROJECT_ROOT)
