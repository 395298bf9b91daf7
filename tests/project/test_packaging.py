"""The distribution's name and the install instructions: never the unrelated PyPI `memledger`."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import PROJECT_ROOT

PYPROJECT = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
REPOSITORY = PYPROJECT["urls"]["Repository"]
DOCUMENTS = [
    PROJECT_ROOT / "README.md",
    *sorted((PROJECT_ROOT / "docs").glob("*.md")),
    *sorted((PROJECT_ROOT / "examples").rglob("*.yml")),
]
# pip / pipx / uv installs of a named distribution (not of a path, an option or an extra)
INSTALL = re.compile(
    r"\b(?:pip3?|pipx|uv tool|uv pip)[ \t]+install[ \t]+((?:-\S+[ \t]+)*)(['\"]?)(\S+)"
)


def test_distribution_has_its_own_name_and_keeps_the_command() -> None:
    assert PYPROJECT["name"] == "memledger-sglang"
    assert PYPROJECT["scripts"] == {"memledger": "memledger.cli:main"}
    assert (PROJECT_ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert PYPROJECT["license"] == "Apache-2.0" and PYPROJECT["license-files"] == ["LICENSE"]


def test_every_install_instruction_uses_the_name_a_git_url_or_a_checkout() -> None:
    seen = 0
    for document in DOCUMENTS:
        for match in INSTALL.finditer(document.read_text()):
            target = match.group(3).strip("'\"")
            seen += 1
            where = f"{document.relative_to(PROJECT_ROOT)}: {match.group(0)}"
            if target.startswith("git+"):
                assert target.startswith(f"git+{REPOSITORY}"), where
            elif target.startswith(("$", '"$')):
                continue  # a variable: its value is checked where it is set (the workflow env)
            else:
                assert target.startswith((".", "/")) or target.startswith("memledger-sglang"), where
            assert not re.fullmatch(r"memledger(?:[=<>~!\[].*)?", target), where
    assert seen >= 3


def test_workflow_installs_memledger_from_the_repository_url() -> None:
    text = (PROJECT_ROOT / "examples" / "github-actions" / "memledger.yml").read_text()
    specs = re.findall(r"MEMLEDGER_SPEC:\s*(\S+)", text)
    assert specs and all(spec.startswith(f"git+{REPOSITORY}@") for spec in specs)
    # setup-python would put a Python without SGLang first on PATH, unless told not to
    assert text.count("setup-python@") == 1 and "update-environment: false" in text


def test_readme_links_work_on_pypi() -> None:
    # review m18: the README is the PyPI long description, where a relative link points at
    # pypi.org; every link is to the repository (or an anchor on the page)
    readme = (PROJECT_ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert len(targets) >= 10
    for target in targets:
        assert target.startswith((f"{REPOSITORY}/blob/main/", "https://", "#")), target
        if target.startswith(f"{REPOSITORY}/blob/main/"):
            assert (PROJECT_ROOT / target.removeprefix(f"{REPOSITORY}/blob/main/")).is_file()


def test_requires_python_matches_the_classifiers() -> None:
    assert PYPROJECT["requires-python"] == ">=3.11"
    python = "Programming Language :: Python :: "
    versions = [c.removeprefix(python) for c in PYPROJECT["classifiers"] if c.startswith(python)]
    assert versions[0] == "3" and all(v.startswith("3.") and v >= "3.11" for v in versions[1:])
