"""`memledger parse`: output formats, rank/startup selection, coverage, errors, exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.input.facts import FACT_KEYS, facts_of
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from memledger.model.parse import ParseDocument
from memledger.record import validate_json
from tests.conftest import run_cli
from tests.input.helpers import parse_json, real_log, truth_facts

DOCS = Path(__file__).resolve().parents[2] / "docs" / "parse.md"


def test_json_document_is_versioned_and_carries_facts(capsys: pytest.CaptureFixture[str]) -> None:
    log = real_log("complex/001")
    document = parse_json([str(log)], capsys)
    assert document["schema_version"] == 1
    assert list(document["facts"]) == list(FACT_KEYS)
    assert document["facts"] == truth_facts(log)
    assert document["rank"] == "DP0 TP0 EP0"
    # the document validates against its own model (round trip)
    validate_json(ParseDocument, json.dumps(document))
    load_begin = next(e for e in document["events"] if e["kind"] == "load_begin")
    assert load_begin["sizes"]["avail"]["bytes"] == round(60.78 * 2**30)
    assert load_begin["sizes"]["avail"]["half_ulp"] == round(0.005 * 2**30)


def test_text_output_summarises(capsys: pytest.CaptureFixture[str]) -> None:
    log = real_log("complex/006")
    code, out, err = run_cli(["parse", str(log)], capsys)
    assert code == EXIT_OK and err == ""
    assert "startups:  1" in out
    assert "rank:      TP0" in out
    assert re.search(r"outcome:   crash \(line \d+: ", out)
    assert "memory-looking line" in out
    assert re.search(r"^\s+\d+\s+load_end\s+TP0\s+avail=51.46 GB, usage=8.96 GB", out, re.M)


def test_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "parsed.json"
    code, out, _ = run_cli(
        ["parse", str(real_log("single/013")), "--format", "json", "-o", str(target)], capsys
    )
    assert code == EXIT_OK and out == ""
    assert json.loads(target.read_text())["facts"]["kv_tokens"] == 399740


def _lines_of(log: Path, tag: str, message: str) -> list[str]:
    pattern = re.compile(rf"\[[\d\- :]+ {re.escape(tag)}\] {re.escape(message)}(.*)")
    return [m.group(1) for m in pattern.finditer(log.read_text(errors="replace"))]


@pytest.mark.parametrize("spec, tag", [("TP3", "DP0 TP3 EP3"), ("DP1 TP4 EP4", "DP1 TP4 EP4")])
def test_rank_option(spec: str, tag: str, capsys: pytest.CaptureFixture[str]) -> None:
    log = real_log("complex/001")
    document = parse_json([str(log), "--rank", spec], capsys)
    assert document["rank"] == tag
    # server_args, ready, the launcher's bare ENV_VAR lines and what ServerArgs changed while it
    # was built (DP attention's chunked prefill size) carry no rank
    rankless = ("server_args", "ready", "env_var", "setting_adjusted")
    ranks = {e["rank"] for e in document["events"] if e["kind"] not in rankless}
    assert ranks <= {tag}
    begin = _lines_of(log, tag, "Load weight begin. avail mem=")[0]
    assert document["facts"]["load_begin_avail"] == float(begin.split()[0])


def test_all_ranks_shows_skew(capsys: pytest.CaptureFixture[str]) -> None:
    log = real_log("single/003")
    code, out, _ = run_cli(["parse", str(log), "--all-ranks"], capsys)
    assert code == EXIT_OK
    # the truth notes: TP1 prints 19.15 / 17.64 / 6.86 while TP0 prints 18.73 / 17.22 / 6.44
    # a rank's values may span the split rank tables (each repeats the rank column)
    row_tp0 = " ".join(line for line in out.splitlines() if line.startswith("TP0 "))
    row_tp1 = " ".join(line for line in out.splitlines() if line.startswith("TP1 "))
    assert "18.73" in row_tp0 and "6.44" in row_tp0
    assert "19.15" in row_tp1 and "6.86" in row_tp1


def test_unknown_rank_lists_ranks_in_numeric_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "tp16.log"
    log.write_text(
        "".join(
            f"[2031-02-03 04:05:06 TP{rank}] Load weight begin. avail mem=126.35 GB\n"
            for rank in (10, 2, 0, 1)
        )
    )
    code, _, err = run_cli(["parse", str(log), "--rank", "TP7"], capsys)
    assert code == EXIT_INPUT
    assert "ranks seen: 'TP0', 'TP1', 'TP2', 'TP10')" in err


def test_unknown_or_ambiguous_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["parse", str(real_log("single/022")), "--rank", "TP9"], capsys)
    assert code == EXIT_INPUT
    assert err.count("\n") == 1 and "rank 'TP9' does not occur" in err
    assert "022-" in err.split("rank")[0]  # the file is named before the message
    pp = tmp_path / "pp.log"
    pp.write_text(
        "[2031-02-03 04:05:06 PP0 TP1 EP1] Load weight begin. avail mem=126.35 GB\n"
        "[2031-02-03 04:05:06 PP3 TP1 EP1] Load weight begin. avail mem=126.28 GB\n"
    )
    code, _, err = run_cli(["parse", str(pp), "--rank", "TP1"], capsys)
    assert code == EXIT_INPUT and "ambiguous" in err
    document = parse_json([str(pp), "--rank", "PP3 TP1 EP1"], capsys)
    assert document["facts"]["load_begin_avail"] == 126.28


def _two_startups(tmp_path: Path) -> tuple[Path, Path, Path]:
    # both tagged (TP0): untagged lines of a tp=1 log would stop being rank 0 in a tagged file
    first, second = real_log("single/001"), real_log("single/022")
    both = tmp_path / "restarts.log"
    both.write_bytes(first.read_bytes() + second.read_bytes())
    return both, first, second


def test_startups_default_to_the_last(tmp_path: Path) -> None:
    both, first, second = _two_startups(tmp_path)
    parsed = parse_log(both)
    assert parsed.n_startups == 2 and parsed.selected == 1
    offset = len(first.read_bytes().split(b"\n")) - 1
    assert parsed.startup.first_line > offset
    expected = truth_facts(second) | {"n_startups": 2}
    assert facts_of(parsed) == expected


def test_startup_option_picks_another(tmp_path: Path) -> None:
    both, first, _ = _two_startups(tmp_path)
    parsed = parse_log(both, startup=0)
    assert parsed.selected == 0
    assert facts_of(parsed) == truth_facts(first) | {"n_startups": 2}
    assert parse_log(both, startup=-2).startup == parsed.startup


def test_startup_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    both, _, _ = _two_startups(tmp_path)
    code, _, err = run_cli(["parse", str(both), "--startup", "2"], capsys)
    assert code == EXIT_INPUT and "2 startup(s)" in err


def test_startups_from_init_lines_without_server_args(tmp_path: Path) -> None:
    # bench_one_batch prints no server_args: rank-0 `Init torch distributed begin` starts one
    log = real_log("single/013")
    doubled = tmp_path / "twice.log"
    doubled.write_bytes(log.read_bytes() * 2)
    assert parse_log(doubled).n_startups == 2


def test_coverage_lists_unrecognised_lines(capsys: pytest.CaptureFixture[str]) -> None:
    log = real_log("complex/014")
    parsed = parse_log(log)
    assert parsed.startup.unrecognised_count >= len(parsed.startup.unrecognised) > 0
    lines = log.read_text(errors="replace").split("\n")
    for item in parsed.startup.unrecognised:
        assert item.text[:30] in lines[item.line - 1]
    code, out, _ = run_cli(["parse", str(log), "--coverage"], capsys)
    assert code == EXIT_OK and "Not recognised" in out


@pytest.mark.parametrize(
    "garbage, reason",
    [
        ("avail mem=nan GB", "not a number"),
        ("avail mem=1e309 GB", "malformed number"),
        ("avail mem=47.8", "no memory unit"),
    ],
)
def test_malformed_known_lines_are_reported_not_guessed(
    garbage: str, reason: str, tmp_path: Path
) -> None:
    log = tmp_path / "garbage.log"
    log.write_text(
        "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.50 GB\n"
        f"[2026-01-01 10:00:09 TP0] Load weight end. type=X, {garbage}, mem usage=30.00 GB.\n"
    )
    parsed = parse_log(log)
    facts = facts_of(parsed)
    assert facts["load_end_avail"] is None
    assert facts["load_end_mem_usage"] == 30.00
    [problem] = parsed.startup.unrecognised
    assert problem.line == 2 and reason in problem.reason


def test_cut_summary_line_keeps_what_is_complete() -> None:
    # complex/014 ends its summary with `, .20 GB`: available_gpu_mem stays null, reported
    parsed = parse_log(real_log("complex/014"))
    summary = next(e for e in parsed.startup.events if e.kind is EventKind.SUMMARY)
    assert "available_gpu_mem" not in summary.sizes
    assert any(
        u.line == summary.line and "'.20 GB'" in u.reason for u in parsed.startup.unrecognised
    )


def test_server_args_typed_parameters() -> None:
    parsed = parse_log(real_log("single/022"))
    params = parsed.startup.server_args
    assert params["model_path"] == "/models/grok-2"
    assert params["tp_size"] == 8 and isinstance(params["tp_size"], int)
    assert isinstance(params["mem_fraction_static"], float)
    assert params["trust_remote_code"] is False
    assert params["context_length"] is None


def test_server_args_dict_form(tmp_path: Path) -> None:
    log = tmp_path / "dict.log"
    log.write_text(
        "[2026-10-01 10:00:00] server_args={'model_path': 'org/m', 'tp_size': 2, "
        "'mem_fraction_static': 0.871, 'cuda_graph_config': {'decode': [1, 2, 4]}, "
        "'dtype': <DType.AUTO: 'auto'>, 'ratio': 1e309, 'tail': 'cut mid-va\n"
        "[2026-10-01 10:00:05] Load weight begin. avail mem=78.50 GB\n"
    )
    params = parse_log(log).startup.server_args
    assert params["tp_size"] == 2 and params["mem_fraction_static"] == 0.871
    assert params["cuda_graph_config"] == {"decode": [1, 2, 4]}
    assert params["dtype"] == "<DType.AUTO: 'auto'>"  # not a literal: kept as text
    assert params["ratio"] == "inf"
    assert "tail" not in params  # cut mid-value: never guessed


def test_extension_grammar_from_the_docs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = DOCS.read_text()
    grammar = re.search(r"```lark\n(.*?)```", docs, re.S)
    sample = re.search(r"^(\[2026-11-05 10:12:50 TP0\] MyFork .*)$", docs, re.M)
    assert grammar and sample
    (tmp_path / "extra.lark").write_text(grammar.group(1))
    log = tmp_path / "fork.log"
    log.write_text(sample.group(1) + "\n")
    plain = parse_log(log)
    assert plain.startup.unrecognised_count == 1
    extended = parse_log(log, extra_grammars=[tmp_path / "extra.lark"])
    [event] = extended.startup.events
    assert event.kind is EventKind.STAGING_POOL
    assert event.sizes["total"].bytes == 512 * 2**20
    assert event.values == {"role": "target", "buffers": 2}
    code, out, _ = run_cli(["parse", str(log), "--grammar", str(tmp_path / "extra.lark")], capsys)
    assert code == EXIT_OK and "staging_pool" in out


@pytest.mark.parametrize(
    "content, message",
    [
        ("start: x\nx: 'a'\n", "grammar does not build"),
        ("%extend message: nothing_defined\n", "grammar does not build"),
    ],
)
def test_broken_grammar_is_a_config_error(
    content: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.lark").write_text(content)
    code, _, err = run_cli(
        ["parse", str(real_log("single/017")), "--grammar", str(tmp_path / "bad.lark")], capsys
    )
    assert code == EXIT_USAGE
    assert message in err and "bad.lark" in err and "Traceback" not in err


def _binary(tmp_path: Path) -> str:
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40)
    return str(path)


def _empty(tmp_path: Path) -> str:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    return str(path)


def _not_sglang(tmp_path: Path) -> str:
    path = tmp_path / "nginx.log"
    path.write_text('127.0.0.1 - - [05/Nov/2026:10:12:03 +0000] "GET / HTTP/1.1" 200 612\n' * 50)
    return str(path)


@pytest.mark.parametrize(
    "make, args, code, message",
    [
        (lambda t: str(t / "missing.log"), [], EXIT_INPUT, "no such file"),
        (lambda t: str(t), [], EXIT_INPUT, "is a directory"),
        (_empty, [], EXIT_INPUT, "empty file"),
        (_binary, [], EXIT_INPUT, "binary file"),
        (_not_sglang, [], EXIT_INPUT, "no SGLang log lines"),
        (lambda t: str(real_log("single/017")), ["--format", "xml"], EXIT_USAGE, "xml"),
        (lambda t: str(real_log("single/017")), ["--startup", "x"], EXIT_USAGE, "x"),
        (
            lambda t: str(real_log("single/017")),
            ["--grammar", "/nonexistent/extra.lark"],
            EXIT_USAGE,
            "grammar file not found",
        ),
    ],
    ids=["missing", "directory", "empty", "binary", "not-sglang", "format", "startup", "grammar"],
)
def test_errors_are_one_line_with_documented_codes(
    make: object,
    args: list[str],
    code: int,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert callable(make)
    exit_code, out, err = run_cli(["parse", make(tmp_path), *args], capsys)
    assert exit_code == code
    assert message in err
    assert "Traceback" not in err and out == ""
    if code == EXIT_INPUT:
        assert err.startswith("memledger: error: ") and err.count("\n") == 1


def test_progress_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    import memledger.input.reader as reader

    data = real_log("single/022").read_bytes()
    monkeypatch.setattr(reader, "PROGRESS_EVERY", 1024)
    parse_log(io.BytesIO(data))
    assert capsys.readouterr().err == ""
    parse_log(io.BytesIO(data), progress=True)
    assert "memledger: read" in capsys.readouterr().err


def test_repeated_runtime_lines_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memledger.input.parsing as parsing

    monkeypatch.setattr(parsing, "EVENTS_PER_KIND_CAP", 5)
    log = tmp_path / "lora.log"
    startup = real_log("single/017").read_text()
    lora = "[2024-12-13 01:50:00 TP0] LoRA adapter loading starts: a. avail mem=2.00 GB\n"
    log.write_text(startup + lora * 12)
    parsed = parse_log(log)
    kept = [e for e in parsed.startup.events if e.kind is EventKind.LORA]
    assert len(kept) == 5
    dropped = [u for u in parsed.startup.unrecognised if u.reason.startswith("not kept")]
    assert len(dropped) == 7 and parsed.startup.unrecognised_count == 7
    assert facts_of(parsed) == truth_facts(real_log("single/017"))


def test_text_collapses_progress_states(capsys: pytest.CaptureFixture[str]) -> None:
    # single/005's target verify capture counts bs 8 down to 1; JSON keeps every state
    log = real_log("single/005")
    code, out, _ = run_cli(["parse", str(log)], capsys)
    assert code == EXIT_OK
    assert "avail=7.19 GB -> 6.72 GB" in out and "bs 8 -> 1 (8 states)" in out
    document = parse_json([str(log)], capsys)
    states = [e for e in document["events"] if e["kind"] == "capture_progress" and e["line"] == 163]
    assert [e["values"]["bs"] for e in states] == [8, 7, 6, 5, 4, 3, 2, 1]
