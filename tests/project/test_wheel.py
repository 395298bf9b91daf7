"""A wheel built from the repo, installed in a fresh venv: its name, licence and URLs, and that it
parses a sample and a real log (grammars inside).

Runs in the normal suite: offline (`--no-isolation`, hatchling from the dev venv; the fresh venv
borrows the dev venv's dependencies through a .pth path line and installs only the wheel), ~10 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT, SAMPLES
from tests.input.helpers import real_log, truth_facts

DISTRIBUTION = "memledger-sglang"


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@dataclass(frozen=True)
class InstalledWheel:
    wheel: Path
    venv: Path
    env: dict[str, str]

    def memledger(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _run([str(self.venv / "bin" / "memledger"), *args], self.venv, self.env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> InstalledWheel:
    tmp_path = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["MEMLEDGER_NO_GRAMMAR_CACHE"] = "1"  # build the tables from the wheel's own grammar
    dist = tmp_path / "dist"
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(dist),
            str(PROJECT_ROOT),
        ],
        tmp_path,
        env,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = dist.glob("memledger_sglang-*.whl")

    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    # dependencies (lark, pydantic, click, tabulate) from the dev venv, appended after the new
    # venv's own site-packages; a plain path line does not run the dev venv's editable hook
    purelib = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            tmp_path,
            env,
        ).stdout.strip()
    )
    (purelib / "dev-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        tmp_path,
        env,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    return InstalledWheel(wheel, target, env)


def test_wheel_has_its_own_name_the_licence_it_declares_and_project_urls(
    installed: InstalledWheel,
) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        names = archive.namelist()
        [metadata_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        [licence_name] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        licence = archive.read(licence_name).decode()
        entry_points = archive.read(metadata_name.replace("METADATA", "entry_points.txt")).decode()
    # `memledger` on PyPI is an unrelated project: the distribution must not claim that name
    assert metadata["Name"] == DISTRIBUTION
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["License-File"] == "LICENSE"
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert licence == (PROJECT_ROOT / "LICENSE").read_text()
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL") or [])
    assert set(urls) >= {"Repository", "Issues", "Documentation"}
    assert all(url.startswith(urls["Repository"]) for url in urls.values())
    # the import package and the command keep the tool's name
    assert "memledger = memledger.cli:main" in entry_points
    assert any(n.startswith("memledger/") for n in names)
    assert not any(n.startswith("memledger_sglang/") for n in names)
    declared = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    assert declared["urls"] == urls


def test_wheel_in_fresh_venv_uses_its_own_grammars_and_reads_a_sample(
    installed: InstalledWheel,
) -> None:
    where = _run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "import memledger, memledger.input.linegrammar as g; "
            "print(memledger.__file__); print(g.grammar_dir())",
        ],
        installed.venv,
        installed.env,
    )
    module_file, grammar_dir = where.stdout.split()
    assert Path(module_file).is_relative_to(installed.venv), "memledger must come from the wheel"
    assert (
        Path(grammar_dir).is_relative_to(installed.venv)
        and (Path(grammar_dir) / "sglang.lark").is_file()
    )
    parsed = installed.memledger("parse", str(SAMPLES / "dp16.log"), "--format", "json")
    assert parsed.returncode == 0, parsed.stderr
    assert json.loads(parsed.stdout)["facts"]["load_begin_avail"] is not None


def test_wheel_in_fresh_venv_parses_a_real_log(installed: InstalledWheel) -> None:
    log = real_log("complex/004")
    parsed = installed.memledger("parse", str(log), "--format", "json")
    assert parsed.returncode == 0, parsed.stderr
    assert json.loads(parsed.stdout)["facts"] == truth_facts(log)
