"""The project's standards as tests (CI runs only pytest): ruff lint, ruff format, strict mypy.

Each tool runs under this interpreter from the project root with the pyproject configuration;
mypy keeps its (gitignored) cache in .mypy_cache, so a warm run takes well under a second.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import PROJECT_ROOT

CHECKS = {
    "ruff check": ("ruff", ["check", "."]),
    "ruff format": ("ruff", ["format", "--check", "."]),
    "mypy": ("mypy", []),  # files, strictness and plugins come from [tool.mypy]
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_tool_is_clean(name: str) -> None:
    module, args = CHECKS[name]
    if importlib.util.find_spec(module) is None:
        pytest.fail(
            f"{module} is not installed for {sys.executable}; "
            "install the test extra: pip install -e '.[test]'"
        )
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        pytest.fail(f"`{name}` exited {result.returncode}:\n{output}", pytrace=False)


MAX_MODULE_LINES = 600
"""The house rule: a module past this is split by what it is about, not grown."""


def test_no_module_over_the_line_limit() -> None:
    """Every module in memledger/ stays at or under MAX_MODULE_LINES lines."""
    too_long = {
        path.relative_to(PROJECT_ROOT).as_posix(): count
        for path in sorted((PROJECT_ROOT / "memledger").rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines: {too_long}"
