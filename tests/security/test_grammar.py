"""F22 and F23: user grammar extensions (`--grammar`) cannot hang a run with a backtracking
regexp, report errors at their own lines, and their regexp-only lines reach the parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memledger.errors import EXIT_OK, EXIT_USAGE, ConfigError
from memledger.input.extension_regex import backtracking_problem, regexp_literals
from memledger.input.linegrammar import LineGrammar, extra_keywords, load_grammar
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from tests.security.helpers import log_text, run, write_log

# Shapes whose backtracking is exponential or polynomial on a 4096-character message.
CATASTROPHIC = [
    r"(a+)+b",  # the review's reproduction
    r"(a*)*",
    r"(a|ab)*c",
    r"(\w+\s?)+$",
    r"(.*,){9}",
    r"(x+x+)+y",
    r"(\d+)*\d",
    r"([^,]+)+,",
    r".*.*.*x",
    r"\s*.*\s*x",
    r"a*a*b",
    r"\s*.*x",
]
# Shapes a fork's line really needs: fenced repeats, disjoint alternatives and neighbours.
SAFE = [
    r"MyFork staging buffer ready",
    r"\d+(\.\d+)?",
    r"(?:GB|MB)+",
    r"[0-9]+\s*GB",
    r"\d+\.\d+\.\d+\.\d+",
    r"(\d+\.){3}\d+",
    r"(\d+,\s*)*",
    r"(?:\s|,)+",
    r"[^,]+,\s*[^,]+",
    r"\s*.*\s*",  # nothing after the repeats can fail, so nothing backtracks into them
    r"[A-Za-z_#][\w#+\-\/]*(?:\.[\w#+\-\/]+)*",
]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_F22_catastrophic_shapes_are_named(pattern: str) -> None:
    assert backtracking_problem(pattern) is not None


@pytest.mark.parametrize("pattern", SAFE)
def test_F22_safe_shapes_pass(pattern: str) -> None:
    assert backtracking_problem(pattern) is None


def test_F22_no_packaged_terminal_is_refused() -> None:
    # the check runs on extensions only, but a packaged regexp it flagged would refuse every
    # extension: each one passes
    grammar = load_grammar()
    grammar.line_rules()  # builds the parser when the shape store served every line so far
    packaged = grammar._lark.terminals
    regexps = [t.pattern.to_regexp() for t in packaged if t.pattern.type == "re"]
    assert regexps and [r for r in regexps if backtracking_problem(r)] == []


@pytest.mark.parametrize(
    ("regexp", "probe", "reason"),
    [
        ("(a+)+b", "a" * 40 + "c", "backtrack catastrophically"),  # the first review's
        ("(a?){28}a{28}b", "a" * 28 + "c", "can match empty"),  # a counted repeat (13.5 s)
    ],
)
def test_F22_review_reproductions_are_refused_at_load_and_never_hang(
    tmp_path: Path, regexp: str, probe: str, reason: str
) -> None:
    grammar = tmp_path / "redos.lark"
    grammar.write_text(
        "%extend message: staging_pool__redos\n"
        f'staging_pool__redos: "ReDoS" "probe" EVIL\nEVIL: /{regexp}/\n',
        encoding="utf-8",
    )
    log = tmp_path / "redos.log"
    log.write_text(log_text() + "[2025-02-04 05:29:22 TP0] ReDoS probe " + probe + "\n")
    # a subprocess with a timeout: a regression fails here instead of hanging the suite
    done = subprocess.run(
        [sys.executable, "-m", "memledger", "parse", str(log), "--grammar", str(grammar)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert done.stderr.count("\n") == 1 and f"{grammar}: regexp /{regexp}/" in done.stderr
    assert reason in done.stderr and "Traceback" not in done.stderr


def test_F23_grammar_errors_name_the_line_of_the_users_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notgrammar.lark"
    bad.write_text("// a comment\nthis is not a grammar {{{\n", encoding="utf-8")
    code, _, err = run(capsys, "parse", write_log(tmp_path), "--grammar", bad)
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert f"{bad}:2: grammar does not build" in err and "at line 2, column" in err


def test_F23_a_line_matched_only_by_a_regexp_terminal_reaches_the_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grammar = tmp_path / "fork.lark"
    grammar.write_text(
        '%extend message: staging_pool__myfork\nstaging_pool__myfork: XFORK ":" fields\n'
        "XFORK.5: /Xfork_buf\\d/\n",
        encoding="utf-8",
    )
    # no quoted word of four letters and nothing memory-looking: only the regexp's literal
    # run `Xfork_buf` can bring this line past the prefilter
    extra = "[2025-02-04 05:29:21 TP0] Xfork_buf7: role=target, count=2\n"
    log = write_log(tmp_path, extra=extra)
    code, out, _ = run(capsys, "parse", log, "--grammar", grammar)
    assert code == EXIT_OK
    assert any(" staging_pool " in line and "count=2" in line for line in out.splitlines())


def test_F23_regexp_literals_are_the_runs_a_match_always_contains() -> None:
    text = (
        "// /a commented regexp/\n"
        "A: /Xfork_buf\\d+ ready/\n"
        "B: /(?i)case blind/\n"
        "C: /abc/i\n"
        "D: /total=\\d+ bytes/\n"
    )
    assert regexp_literals(text) == ["Xfork_buf", " ready", "total=", " bytes"]


# What the example check cannot see: an extension that changes only built-in lines unlike any
# example (big loads, a chosen avail) is accepted at load, so at run time a line the packaged
# grammar knows always parses as the packaged grammar says.
BITES_SOME_LINES = {
    "ignore": "%ignore /, mem usage=9\\d\\.\\d\\d GB/\n",
    "override": (
        '%override load_end: "Load" "weight" "end" fields?'
        ' | "Load" "weight" "end" "." BIG fields?\n'
        "BIG.9: /type=\\S+ dtype=\\S+ avail mem=\\S+ GB, mem usage=9\\d/\n"
    ),
    "priority": (
        "%extend message: staging_pool__steal\n"
        "staging_pool__steal: STEAL fields?\n"
        "STEAL.9: /Load weight end\\. [^\\n]*mem usage=9\\d\\.\\d\\d GB/\n"
    ),
}
BIG_LOAD = (
    "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=8.37 GB, "
    "mem usage=93.20 GB."
)


@pytest.mark.parametrize("case", list(BITES_SOME_LINES))
def test_an_extension_cannot_change_a_built_in_line_no_example_shows(
    tmp_path: Path, case: str
) -> None:
    extra = tmp_path / "extra.lark"
    extra.write_text(BITES_SOME_LINES[case], encoding="utf-8")
    try:
        extended = LineGrammar([extra], stored=False)
    except ConfigError as refused:  # refused at load is fine too: it changed an example
        assert "changes how a built-in line parses" in refused.one_line()
        return
    packaged = LineGrammar(stored=False).parse(BIG_LOAD)
    assert packaged is not None and packaged.sizes["usage"].text == "93.20 GB"
    raw = extended._own_parse(BIG_LOAD)
    assert raw != packaged  # the extension alone would change the line ...
    assert extended.parse(BIG_LOAD) == packaged  # ... but the packaged grammar wins
    assert extended.parse_uncached(BIG_LOAD) == packaged


def test_an_extension_still_parses_its_own_lines_beside_a_hidden_ignore(tmp_path: Path) -> None:
    extra = tmp_path / "extra.lark"
    extra.write_text(
        BITES_SOME_LINES["ignore"]
        + "%extend message: staging_pool__myfork\n"
        + 'staging_pool__myfork: "MyFork" "staging" "buffer" "ready" ":" fields\n',
        encoding="utf-8",
    )
    grammar = LineGrammar([extra], stored=False)
    mine = grammar.parse("MyFork staging buffer ready: role=target, buffers=2, total=512.0 MiB")
    assert mine is not None and mine.variant == "myfork" and mine.sizes["total"].text == "512.0 MiB"


def test_a_hidden_ignore_changes_no_figure_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = tmp_path / "extra.lark"
    extra.write_text(BITES_SOME_LINES["ignore"], encoding="utf-8")
    log = write_log(tmp_path)
    text = Path(log).read_text().replace("mem usage=14.00 GB", "mem usage=93.20 GB")
    Path(log).write_text(text)
    plain = run(capsys, "ledger", log, "--format", "json")
    extended = run(capsys, "ledger", log, "--format", "json", "--grammar", str(extra))
    assert plain[0] == extended[0] == EXIT_OK
    weights = [r for r in json.loads(plain[1])["rows"] if r["id"] == "weights"]
    assert weights and weights[0]["bytes"] == round(93.20 * (1 << 30))
    assert json.loads(extended[1])["rows"] == json.loads(plain[1])["rows"]


# F23, re-checked: a fork line the user's grammar was written for, but which no rule parses (a
# quoted phrase that Lark lexes as a generic WORD, a missing `:`), is listed in coverage with the
# rule it starts as; and a rule of short words still gets its lines past the prefilter.
FORK_LINE = "MyFork staging buffer ready: role=target, buffers=2, total=536870912 B"


def _unrecognised(tmp_path: Path, grammar_text: str, message: str) -> list[tuple[int, str]]:
    grammar = tmp_path / "fork.lark"
    grammar.write_text("%extend message: staging_pool__myfork\n" + grammar_text, encoding="utf-8")
    log = write_log(tmp_path, extra=f"[2025-02-04 05:29:21 TP0] {message}\n")
    parsed = parse_log(log, extra_grammars=[grammar])
    return [(u.line, u.reason) for u in parsed.startup.unrecognised]


def test_F23_a_fork_line_lexed_as_generic_words_is_listed_not_dropped(tmp_path: Path) -> None:
    # one quoted phrase at the head: the lexer reads `MyFork` as a WORD, no rule matches
    grammar = 'staging_pool__myfork: "MyFork staging buffer ready" ":" fields\n'
    ((line, reason),) = _unrecognised(tmp_path, grammar, FORK_LINE)
    assert line == 11 and reason.startswith("starts as --grammar rule staging_pool__myfork (")
    assert "fork.lark); a quoted phrase with a space can lex as words: quote each word" in reason


def test_F23_a_fork_line_missing_its_colon_is_listed_not_dropped(tmp_path: Path) -> None:
    grammar = 'staging_pool__myfork: "MyFork" "staging" "buffer" "ready" ":" fields\n'
    message = FORK_LINE.replace("ready:", "ready")
    ((line, reason),) = _unrecognised(tmp_path, grammar, message)
    assert line == 11 and "staging_pool__myfork" in reason and "quote each word" not in reason
    assert _unrecognised(tmp_path, grammar, FORK_LINE) == []  # the line as the rule says: read


def test_F23_a_rule_of_short_words_reaches_the_parser(tmp_path: Path) -> None:
    # no quoted word has four letters, and the line holds no memory word: only the head as a
    # phrase (`Xb ok`) brings it past the prefilter
    grammar = tmp_path / "short.lark"
    grammar.write_text(
        '%extend message: staging_pool__short\nstaging_pool__short: "Xb" "ok" ":" fields\n',
        encoding="utf-8",
    )
    assert "Xb ok" in extra_keywords([grammar.read_text()])
    log = write_log(tmp_path, extra="[2025-02-04 05:29:21 TP0] Xb ok: role=target, count=2\n")
    parsed = parse_log(log, extra_grammars=[grammar])
    found = [e for e in parsed.startup.events if e.line == 11]
    assert [e.kind for e in found] == [EventKind.STAGING_POOL]
    assert found[0].values.get("count") == 2 and parsed.startup.unrecognised == []
