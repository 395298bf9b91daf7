"""The project's standards as tests (CI runs only pytest): ruff lint, ruff format, strict mypy.

Each tool runs under this interpreter from the project root with the pyproject configuration;
mypy keeps its (gitignored) cache in .mypy_cache, so a warm run takes well under a second.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

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


PACKAGE = PROJECT_ROOT / "memledger"
FACADES = {"memledger/testing.py"}
"""Public modules whose whole job is to hand on the API under another name (`memledger.testing`
for pytest users); every other module defines what it exports."""


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py"))


def _listed(package: Path) -> set[str]:
    """The modules a package's `__init__` docstring lists under `Modules:`, one line each
    ("- `name`: what it holds")."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    _, _, listing = doc.partition("\nModules:\n")
    return set(re.findall(r"^- `(\w+)`", listing, re.M))


def _members(package: Path) -> set[str]:
    modules = {p.stem for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    return modules | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}


@pytest.mark.parametrize(
    "package", _packages(), ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix()
)
def test_each_package_says_what_each_of_its_modules_holds(package: Path) -> None:
    """The house rule in place of a line cap: a module holds one subject, which its package's
    `__init__` docstring names in one line; a module missing from the list (or a listed one
    that is gone) fails here, so a split or a merge has to say what the new module is about."""
    assert _listed(package) == _members(package)


def test_nothing_outside_a_package_init_re_exports() -> None:
    """A name is imported from the module that defines it: no `import X as X` and no `__all__`
    naming an imported name, except in a package `__init__` (and the public facades)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PROJECT_ROOT).as_posix()
        if path.name == "__init__.py" or where in FACADES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    imported.add(name)
                    if alias.asname is not None and alias.asname == alias.name.split(".")[-1]:
                        found.append(f"{where}:{node.lineno}: {alias.name} as {alias.asname}")
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
            ):
                names = ast.literal_eval(node.value)
                found += [f"{where}: __all__ names imported {n}" for n in names if n in imported]
    assert not found, "\n".join(found)
