"""Text output fits the terminal: 100 columns when not a tty; colour only on a tty, honouring
NO_COLOR and FORCE_COLOR (issue 13, 'Reading it')."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from memledger.render.tables import Table, fit_columns, text_table
from memledger.render.terminal import (
    DEFAULT_WIDTH,
    FAIL,
    Terminal,
    fit_lines,
    shorten_long_tokens,
    shorten_middle,
)
from tests.conftest import SAMPLES, real_log, real_log_paths, require_real_logs, run_cli

REAL = ["single/001", "single/007", "single/013", "complex/001", "complex/014"]
"""Five real logs: a ready one, a crash in capture, a Mamba log, a multi-node MTP log, a fork."""


def real_logs() -> list[Path]:
    require_real_logs()
    paths = real_log_paths()
    chosen = [next(p for p in paths if f"{p.parent.name}/{p.name}".startswith(k)) for k in REAL]
    assert len(chosen) == 5
    return chosen


SHORT_SAMPLES = Path("samples")
"""The samples as the tests below name them: a link in the test's own folder, which is the
working directory, so the paths the headers print do not depend on where the checkout or the
corpus sits (a checkout in a long directory printed past 100 columns)."""


def in_short_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, log: Path) -> Path:
    """Work in `tmp_path` with `samples` and `log` linked into it; the log's short name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / SHORT_SAMPLES).symlink_to(SAMPLES, target_is_directory=True)
    if log.parent == SAMPLES:
        return SHORT_SAMPLES / log.name
    (tmp_path / log.name).symlink_to(log)
    return Path(log.name)


def commands(log: Path) -> list[list[str | Path]]:
    """Every text output of one log: the short views, the `--full` ones, the rank table, the
    fleet view (this log beside a sample), the diagnosis and a what-if."""
    budget = SHORT_SAMPLES / "budget.toml"
    return [
        ["parse", log],
        ["parse", log, "--coverage"],
        ["parse", log, "--all-ranks"],
        ["ledger", log],
        ["ledger", log, "--full"],
        ["ledger", log, SHORT_SAMPLES / "dp2.log"],
        ["check", log, "--budget", budget],
        ["check", log, "--budget", budget, "--full"],
        ["diff", SHORT_SAMPLES / "dp16.log", log],
        ["diff", SHORT_SAMPLES / "dp16.log", log, "--full"],
        ["diagnose", log],
        ["whatif", log, "--set", "mem_fraction_static=0.8"],
        ["whatif", log, "--set", "max_running_requests=64", "--set", "gpu_memory_mib=294912"],
    ]


def widest(text: str) -> tuple[int, str]:
    return max((len(line), line) for line in text.split("\n"))


@pytest.mark.parametrize("log", [SAMPLES / "dp16.log", SAMPLES / "dp2.log"], ids=lambda p: p.name)
def test_every_text_output_of_the_samples_fits_100_columns(
    log: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    log = in_short_folder(monkeypatch, tmp_path, log)
    config = SHORT_SAMPLES / "k3-config.json"
    sample_diff: list[str | Path] = ["diff", SHORT_SAMPLES / "dp16.log", SHORT_SAMPLES / "dp2.log"]
    argvs = [*commands(log), [*sample_diff, "--model-config", config]]
    for argv in argvs:
        code, out, err = run_cli(argv, capsys)
        assert code in (0, 1, 3), err
        width, line = widest(out)
        assert width <= DEFAULT_WIDTH, f"{argv[0]}: {width} columns: {line!r}"


@pytest.mark.real_logs
def test_every_text_output_of_five_real_logs_fits_100_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    for n, real in enumerate(real_logs()):
        folder = tmp_path / str(n)
        folder.mkdir()
        log = in_short_folder(monkeypatch, folder, real)
        for argv in commands(log):
            code, out, err = run_cli(argv, capsys)
            assert code in (0, 1, 3), err
            width, line = widest(out)
            assert width <= DEFAULT_WIDTH, f"{log.name} {argv[0]}: {width} columns: {line!r}"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_width_and_colour_follow_the_terminal_and_the_environment() -> None:
    assert Terminal.detect(io.StringIO(), {}) == Terminal(width=100, colour=False)
    assert Terminal.detect(io.StringIO(), {"COLUMNS": "160"}).width == 160
    assert Terminal.detect(io.StringIO(), {"FORCE_COLOR": "1"}).colour is True
    assert Terminal.detect(Tty(), {"COLUMNS": "120"}) == Terminal(width=120, colour=True)
    assert Terminal.detect(Tty(), {"NO_COLOR": "1", "FORCE_COLOR": "1"}).colour is False
    assert Terminal(colour=True).paint("FAIL", FAIL) == "\x1b[1;31mFAIL\x1b[0m"
    assert Terminal().paint("FAIL", FAIL) == "FAIL"


def test_colour_reaches_check_text_only_when_forced(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv: list[str | Path] = ["check", SAMPLES / "dp2.log", "--budget", SAMPLES / "budget.toml"]
    _, plain, _ = run_cli(argv, capsys)
    assert "\x1b[" not in plain
    monkeypatch.setenv("FORCE_COLOR", "1")
    _, coloured, _ = run_cli(argv, capsys)
    assert "\x1b[1;31mFAIL\x1b[0m kv_tokens_per_instance" in coloured
    assert "\x1b[33mWARN\x1b[0m cuda_graph" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert run_cli(argv, capsys)[1] == plain


def test_tables_give_way_in_their_long_text_columns_never_in_kept_ones() -> None:
    table = Table(
        ["id", "GiB", "what"],
        [["a_long_row_identifier_kept_whole", "1.00", "x" * 200]],
        keep=(0,),
    )
    fitted = fit_columns(table, 60)
    assert fitted.rows[0][0] == "a_long_row_identifier_kept_whole"
    assert fitted.rows[0][2].endswith("…")
    assert max(len(line) for line in text_table(table, width=60).split("\n")) <= 60
    optional = Table(["id", "what"], [["x" * 50, "y" * 50]], keep=(0,), optional=(1,))
    assert fit_columns(optional, 56).headers == ["id"]


def test_prose_wraps_under_its_indentation() -> None:
    text = "  " + " ".join(["word"] * 40)
    lines = fit_lines(text, 40).split("\n")
    assert all(len(line) <= 40 for line in lines)
    assert lines[0].startswith("  word") and lines[1].startswith("    word")


def test_the_diff_composition_legend_fits_a_narrow_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the legend's entries are spaced like table cells, so the wrapper left an 86-column line
    monkeypatch.setenv("COLUMNS", "80")
    _, out, _ = run_cli(["diff", SAMPLES / "dp16.log", SAMPLES / "dp2.log"], capsys)
    legend = out[out.index("  legend (base|head GiB):") :].split("\n\n")[0].split("\n")[1:]
    assert legend and all(len(line) <= 80 for line in legend), legend
    assert sum(line.count("|") for line in legend) == 9  # every group's entry is still there


def test_whatif_follows_the_terminal_width_and_never_cuts_a_number(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # it wrapped and laid out at a fixed 100 columns: 91 columns at COLUMNS=80 (issue 13, M4)
    monkeypatch.setenv("COLUMNS", "80")
    argv: list[str | Path] = ["whatif", SAMPLES / "dp16.log"]
    code, out, err = run_cli([*argv, "--set", "disaggregation_decode_extra_slots=2"], capsys)
    assert code == 0, err
    width, line = widest(out)
    assert width <= 80, f"{width} columns: {line!r}"
    assert "+4,785,152 (+9.37 %)" in out  # the names give way, never a figure


@pytest.mark.real_logs
def test_diagnose_follows_the_terminal_width(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # its prose wrapped at a fixed 100 columns: 99 columns at COLUMNS=80 on this OOM at load
    log = real_log("single/015")
    for columns in (80, 130):
        monkeypatch.setenv("COLUMNS", str(columns))
        code, out, err = run_cli(["diagnose", log], capsys)
        assert code in (0, 1, 3), err
        prose = [line for line in out.split("\n") if " " in line.strip()]  # not a bare path
        assert max(len(line) for line in prose) <= columns
        if columns > DEFAULT_WIDTH:  # and it uses the room it has
            assert max(len(line) for line in prose) > DEFAULT_WIDTH


def test_a_long_token_is_cut_in_its_middle_keeping_its_start_and_end() -> None:
    token = "/models/" + "x" * 80 + "/snapshots/5e092ebca197"
    cut = shorten_middle(token, 40)
    assert len(cut) == 40 and cut.count("…") == 1
    assert token.startswith(cut.split("…")[0]) and token.endswith(cut.split("…")[1])
    assert shorten_middle("short", 40) == "short"
    text = f"the path ({token!r}), and  two spaces"
    shortened = shorten_long_tokens(text, 40)
    assert shortened.endswith(" and  two spaces")  # only the long token changes
    assert max(len(word) for word in shortened.split(" ")) == 40


MODEL_DIR = (
    "/home/someone/.cache/huggingface/hub/models--google--gemma-3n-E2B-it/snapshots/"
    "0123456789abcdef0123456789abcdef01234567"
)
PASTED_COMMAND_LOG = f"""$ python3 -m sglang.launch_server --model-path {MODEL_DIR}

[2025-07-16 05:13:21] Init torch distributed ends. mem usage=0.00 GB
[2025-07-16 05:13:21] Load weight begin. avail mem=78.50 GB
"""


@pytest.mark.parametrize("command", ["ledger", "diagnose"])
def test_a_note_naming_a_long_model_path_fits_100_columns(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the note quoting the pasted command's model_path was one 116-column line in `ledger` (a
    # word is never broken) and split mid-path in `diagnose`; it is now cut in the middle
    monkeypatch.delenv("COLUMNS", raising=False)
    log = tmp_path / "paste.log"
    log.write_text(PASTED_COMMAND_LOG)
    code, out, err = run_cli([command, log], capsys)
    assert code == 0, err
    cut = next(line for line in out.split("\n") if "…" in line)
    assert "'/home/someone/.cache" in cut and "0123456789abcdef01234567'" in cut
    width, line = widest(out.replace(str(log), "LOG"))  # the user's own path stays whole
    assert width <= DEFAULT_WIDTH, f"{width} columns: {line!r}"
