"""Markdown around pasted SGLang lines: list bullets, inline code in a sentence, bold. Each input
is written here in a shape found in public issue threads (vllm-project/vllm#21348 and
sgl-project/sglang#10088 quote lines as inline code; numbers made up), no third-party log copied.
"""

from __future__ import annotations

import io

import pytest

from memledger.input.parsing import MAX_PARSE_CHARS, parse_log
from memledger.input.pasted import tidy_pasted
from memledger.model.events import EventKind, ParsedLog

KV = "KV Cache is allocated. #tokens: 161488, K size: 5.27 GB, V size: 5.27 GB"


def _parse(lines: list[str]) -> ParsedLog:
    return parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="issue.md")


@pytest.mark.parametrize(
    ("line", "evidence"),
    [
        (f"For SGLang I saw `{KV}` which is twice vLLM's", None),  # inline code in a sentence
        (f"**{KV}**", None),  # bold
        # a list bullet or number is a column a paste put before the line, as a quote marker
        # is, and inline code around a whole line is what the paste put around it
        # (memledger.input.wrappers): the evidence is the line without them
        (f"`{KV}`", KV),
        (f"- `{KV}`", KV),
        (f"- {KV}", KV),
        (f"* {KV}", KV),
        (f"2. {KV}", KV),
    ],
)
def test_a_line_inside_markdown_is_read(line: str, evidence: str | None) -> None:
    parsed = _parse([line])
    (event,) = parsed.startup.events
    assert event.kind is EventKind.KV_ALLOCATED
    assert (event.values["tokens"], event.sizes["k"].text) == (161488, "5.27 GB")
    assert event.text == (evidence or line)  # else the evidence is the line as pasted
    assert parsed.notes == ["no SGLang prefix: read 1 pasted line"]


def test_the_code_span_holding_an_sglang_line_is_the_one_read() -> None:
    line = "with `--mem-fraction-static 0.9` the log says `Memory pool end. avail mem=3.00 GB`"
    assert tidy_pasted(line, MAX_PARSE_CHARS) == "Memory pool end. avail mem=3.00 GB"


@pytest.mark.parametrize(
    "line",
    [
        "q4_f.log  Load weight begin. avail mem=24.76 GB",  # a column of the grepped file's name
        "logs/run.log:Load weight begin. avail mem=24.76 GB",  # grep -H
        "run.log:12:Load weight begin. avail mem=24.76 GB",  # grep -Hn
    ],
)
def test_the_name_of_the_grepped_log_is_no_part_of_the_line(line: str) -> None:
    assert tidy_pasted(line, MAX_PARSE_CHARS) == "Load weight begin. avail mem=24.76 GB"


@pytest.mark.parametrize(
    "text",
    [
        "Load weight begin. avail mem=78.00 GB",
        "see run.log for the rest",  # a name inside a sentence
        "__init__ max_total_num_tokens=161488",  # a dunder is no markdown
        "-5 GB is negative",  # a sign is no bullet
    ],
)
def test_text_without_markdown_is_left_alone(text: str) -> None:
    assert tidy_pasted(text, MAX_PARSE_CHARS) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "in the [get_device_memory](https://x.io/a.py#L1) function",
            "in the get_device_memory function",
        ),
        ("![screenshot](https://x.io/s.png) OOM", "screenshot OOM"),
        ("[a](u) and [b](v)", "a and b"),
        ('[a](u "a title") stays', '[a](u "a title") stays'),  # a title: not read as a link
        ("[x](", "[x]("),  # no closing parenthesis
        ("list[0](1) here", "list0 here"),  # what a link looks like is a link
        ("no link ] ( here", "no link ] ( here"),
    ],
)
def test_markdown_links_read_as_the_text_they_show(text: str, shown: str) -> None:
    from memledger.input.pasted import without_links

    assert without_links(text) == shown


def test_an_error_sentence_split_by_links_is_read() -> None:
    # an issue's markdown source (copied from its edit box): each link's URL sits inside the
    # sentence a crash rule reads (memledger.sglang.failure_rules capacity_none_compared)
    from tests.conftest import diagnose_paste

    sentence = (
        "On the CPU device the [get_device_memory](https://github.com/an-org/a-repository/blob/"
        "0123456789abcdef/python/a/b/utils/common.py#L1510-L1513) call returns None, and the "
        "[server args]"
        "(https://github.com/o/r/blob/main/python/a/b/server_args.py#L637-L675) compare it "
        "with an int when --mem-fraction-static is not given"
    )
    diagnosis = diagnose_paste([sentence])
    assert "pass --mem-fraction-static explicitly" in diagnosis.verdict
    assert "https://" not in diagnosis.verdict  # the quote is the sentence as the page shows it
