"""A wheel built from the repo, installed in a fresh venv, parses a real log (grammars inside).

Runs in the normal suite: offline (`--no-isolation`, hatchling from the dev venv; the fresh venv
borrows the dev venv's dependencies through a .pth path line and installs only the wheel), ~10 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from tests.conftest import PROJECT_ROOT
from tests.parse_helpers import real_log, truth_facts


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_wheel_in_fresh_venv_parses_a_log(tmp_path: Path) -> None:
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
    [wheel] = dist.glob("memledger-*.whl")

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

    where = _run(
        [
            str(python),
            "-c",
            "import memledger, memledger.input.linegrammar as g; "
            "print(memledger.__file__); print(g.grammar_dir())",
        ],
        tmp_path,
        env,
    )
    module_file, grammar_dir = where.stdout.split()
    assert Path(module_file).is_relative_to(target), "memledger must come from the wheel"
    assert (
        Path(grammar_dir).is_relative_to(target) and (Path(grammar_dir) / "sglang.lark").is_file()
    )

    log = real_log("complex/004")
    parsed = _run(
        [str(target / "bin" / "memledger"), "parse", str(log), "--format", "json"], tmp_path, env
    )
    assert parsed.returncode == 0, parsed.stderr
    assert json.loads(parsed.stdout)["facts"] == truth_facts(log)
