"""`--grammar` extensions are checked at load: they may add lines, never change built-in ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.errors import EXIT_USAGE, ConfigError
from memledger.input.linegrammar import LineGrammar, example_mismatches
from memledger.model.events import EventKind
from memledger.sglang.examples import EXAMPLES
from tests.conftest import SAMPLES, run_cli

GRAMMAR = LineGrammar()

# The review's edit (review-architecture.md, section 4a): an alternative wording for capture
# begin lines whose head `"Start" "capturing" graph_words fields?` puts WORD and WORDS in one
# lexer state. Before the check it loaded without error and every built-in capture line stopped
# parsing (dp16.log: cuda_graph n/a, runtime_headroom 4.00 -> 12.44 GiB, exit 0).
BREAKS_CAPTURE = (
    "%extend message: capture_begin__fork\n"
    'capture_begin__fork: "Start" "capturing" graph_words fields?\n'
)


def test_every_grammar_rule_names_an_event_kind_and_has_an_example() -> None:
    rules = GRAMMAR.line_rules()
    assert len(rules) == len(set(rules)) > 30
    kinds = {rule.split("__", 1)[0] for rule in rules}
    assert kinds <= {kind.value for kind in EventKind}, kinds - {k.value for k in EventKind}
    parsed = [GRAMMAR.parse(example.message) for example in EXAMPLES]
    shown = {f"{p.kind}__{p.variant}" if p.variant else str(p.kind) for p in parsed if p}
    assert set(rules) == shown, "every line rule needs an example line (sglang/examples.py)"


def test_packaged_examples_all_hold() -> None:
    assert example_mismatches(GRAMMAR) == []


def test_review_extension_that_broke_every_capture_line_is_refused(tmp_path: Path) -> None:
    extra = tmp_path / "fork.lark"
    extra.write_text(BREAKS_CAPTURE)
    with pytest.raises(ConfigError) as refused:
        LineGrammar([extra])
    message = refused.value.one_line()
    assert message.startswith(f"{extra}: grammar extension changes how a built-in line parses: ")
    assert "'Capture cuda graph begin. This can take up to several minutes." in message
    assert "was capture_begin" in message and "becomes not recognised" in message


def test_refused_extension_exits_2_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = tmp_path / "fork.lark"
    extra.write_text(BREAKS_CAPTURE)
    code, out, err = run_cli(["ledger", str(SAMPLES / "dp16.log"), "--grammar", str(extra)], capsys)
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and "changes how a built-in line parses" in err


def test_working_form_of_the_same_wording_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the review's working form: the `.` after graph_words keeps the lexer states apart
    extra = tmp_path / "fork.lark"
    extra.write_text(
        "%extend message: capture_begin__fork\n"
        'capture_begin__fork: "Start" "capturing" graph_words "." fields?\n'
    )
    grammar = LineGrammar([extra])
    parsed = grammar.parse("Start capturing target verify CUDA graphs. avail mem=7.77 GB")
    assert parsed is not None and parsed.kind is EventKind.CAPTURE_BEGIN
    assert parsed.variant == "fork" and parsed.sizes["avail"].text == "7.77 GB"
    code, out, _ = run_cli(
        ["ledger", str(SAMPLES / "dp16.log"), "--grammar", str(extra), "--format", "json"], capsys
    )
    assert code == 0
    rows = {row["id"]: row for row in json.loads(out)["rows"]}
    # the ledger of the unchanged log is as without the extension (4.00 GiB headroom)
    assert rows["cuda_graph_largest_bucket"]["bytes"] == 7720203715
    assert rows["runtime_headroom"]["bytes"] == 4 << 30


@pytest.mark.parametrize(
    "text, why",
    [
        # a rule whose name is no event kind would turn its lines into "unrecognised" silently
        (
            '%extend message: stagin_pool__typo\nstagin_pool__typo: "MyFork" "ready" fields?\n',
            "grammar rule 'stagin_pool__typo' names no event kind",
        ),
        # F23: `%ignore` of everything changes every built-in line
        ("%ignore /.+/\n", "changes how a built-in line parses"),
        # `%override` of a built-in rule
        (
            '%override memory_pool_end: "Memory" "pool" "finished" fields?\n',
            "'Memory pool end. avail mem=17.73 GB' was memory_pool_end",
        ),
    ],
    ids=["misspelt-kind", "ignore-all", "override"],
)
def test_other_harmful_extensions_are_refused(tmp_path: Path, text: str, why: str) -> None:
    extra = tmp_path / "extra.lark"
    extra.write_text(text)
    with pytest.raises(ConfigError) as refused:
        LineGrammar([extra])
    assert why in refused.value.one_line()
    assert refused.value.exit_code == EXIT_USAGE
