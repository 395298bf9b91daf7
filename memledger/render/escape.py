"""Escaping by destination: the one place per output format that makes untrusted text inert.

Log lines, saved ledgers, budget and file names can carry anything a pull request's author put
there. Each format has one last pass (`finish`, applied by the format registries to every
renderer's output) that enforces its invariant whatever a renderer interpolated:

- terminal text: C0/C1 controls, DEL and every invisible character (INVISIBLE_RANGES: the bidi
  overrides, isolates and marks, zero-width and filler characters, tags) are shown (`␛`,
  `<U+009B>`, `<U+200F>`), never emitted; tab and the renderer's own newlines stay.
- every format that can end up in a CI job log: no line starts a GitHub workflow command (`::`
  after leading blanks) and no `##[` (the runner's older syntax, matched anywhere in a line).
- JSON: the same data, with C1/DEL/U+2028/U+2029, invisible characters and `[` after `##`
  written as `\\u` escapes.
- JUnit XML: characters XML 1.0 forbids are shown as text; C1 controls and invisible characters
  become character references (same data, no raw bytes).
- CSV: every cell on one line, controls shown, and a cell a spreadsheet would run as a
  formula (`= + - @`, tab, CR first) gets a `'` first (OWASP), plain numbers excepted.
- HTML: text and attributes are escaped by Jinja2's autoescape where the template writes them
  (`memledger.render.html`); the last pass is `markup_text` (controls and invisible characters
  shown, then the XML pass).

Markdown structure (tables, links, mentions, HTML) is escaped where text is interpolated, by
`memledger.render.tables.markdown_cell` / `markdown_code`; Mermaid labels by `mermaid_label`.

Every destination's pass shows the characters `visible_controls` shows (or writes them as
escapes of the same data): a new format (HTML, SVG) calls it on its text (`markup_text`: shown,
then the XML pass; a character reference is the raw character once a browser renders it), and
the property test
(tests/security/test_render.py) fails for a format registered without an invariant.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum


class Destination(StrEnum):
    """Where a format's output goes, which decides how untrusted text is made inert."""

    TERMINAL = "terminal"
    MARKDOWN = "markdown"
    GITHUB = "github"
    JSON = "json"
    JUNIT = "junit"
    CSV = "csv"
    HTML = "html"


INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x0600, 0x0605),  # Arabic number signs (Cf)
    (0x061C, 0x061C),  # Arabic letter mark
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),  # Mongolian variation selectors, vowel separator
    (0x200C, 0x200F),  # ZWNJ, ZWJ, LRM, RLM (U+200B: see below)
    (0x202A, 0x202E),  # bidi embeddings and overrides ("Trojan source")
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # byte order mark / zero width no-break space
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFFB),  # reserved, interlinear annotation
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical format controls
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement, reserved
)
"""Characters a reader cannot see: Unicode's Default_Ignorable_Code_Point (Unicode 15.1,
DerivedCoreProperties.txt) and general category Cf (15.1, UnicodeData.txt), as ranges; tests
check them against this Python's `unicodedata`. They reorder text (bidi marks), hide it (tags)
or split a word invisibly, so output shows them. U+200B ZERO WIDTH SPACE is the one exception:
memledger writes it itself to make `::`, `##[` and `@mention` inert, and it neither reorders
nor hides. And one U+FE0F (emoji presentation) right after a symbol stays part of it: `⚠️` is
memledger's own; a selector anywhere else, or a run of them (text hidden as selectors), shows."""
_INVISIBLE = "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in INVISIBLE_RANGES)
# C0 except TAB and LF, DEL, C1, the line separators, and every invisible character.
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_INVISIBLE}]")
_CONTROL_WITH_NEWLINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029{_INVISIBLE}]")
_WORKFLOW_LINE = re.compile(r"^(\s*)::", re.MULTILINE)
_ZERO_WIDTH_SPACE = "\u200b"
"""Not whitespace to the Actions runner's TrimStart, invisible to a reader."""


def _emoji_selector(match: re.Match[str]) -> bool:
    """An emoji presentation selector that completes the symbol before it (`⚠️`)."""
    start = match.start()
    return (
        match.group(0) == "\ufe0f"
        and start > 0
        and unicodedata.category(match.string[start - 1]) == "So"
    )


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    if _emoji_selector(match):
        return char
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ for ESC, ␍ for CR
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def visible_controls(text: str, *, keep_newlines: bool = True) -> str:
    """Control and invisible characters as visible symbols; tab (and newlines) kept. The filter
    every destination's last pass applies (or escapes the same characters)."""
    pattern = _CONTROL if keep_newlines else _CONTROL_WITH_NEWLINE
    return pattern.sub(_shown, text)


def inert_workflow_commands(text: str) -> str:
    """No line starts a workflow command and no `##[` remains (the runner reads both)."""
    text = _WORKFLOW_LINE.sub(lambda m: m.group(1) + _ZERO_WIDTH_SPACE + "::", text)
    return text.replace("##[", "##" + _ZERO_WIDTH_SPACE + "[")


def terminal_text(text: str) -> str:
    """Text for a terminal or a CI job log: controls shown, no workflow command."""
    return inert_workflow_commands(visible_controls(text))


def one_line(text: str) -> str:
    """One untrusted string on one line, controls shown (newlines too): for interpolation."""
    return visible_controls(text, keep_newlines=False)


_JSON_RAW = re.compile(f"[\x7f-\x9f\u2028\u2029{_INVISIBLE}]")


def _json_escape(match: re.Match[str]) -> str:
    if _emoji_selector(match):
        return match.group(0)
    code = ord(match.group(0))
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(text: str) -> str:
    """JSON text with the same data, but no raw C1/DEL/line separators and no `##[`.

    `\\u` escapes are only valid inside JSON strings, and only strings can hold these
    characters (or `#`), so a text-wide replacement is exact.
    """
    text = _JSON_RAW.sub(_json_escape, text)
    return text.replace("##[", "##\\u005b")


# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_XML_DISCOURAGED = re.compile(f"[\x7f-\x9f\u2028\u2029{_INVISIBLE}]")


def _xml_reference(match: re.Match[str]) -> str:
    return match.group(0) if _emoji_selector(match) else f"&#{ord(match.group(0))};"


def xml_text(text: str) -> str:
    """Serialized XML that any XML 1.0 parser accepts: forbidden characters shown as text;
    C1 controls, invisible characters, CR, a `:` starting a line and the `[` of `##[` as character
    references (the same data)."""
    text = _XML_FORBIDDEN.sub(
        lambda m: _shown(m) if ord(m.group(0)) < 0x20 else f"<U+{ord(m.group(0)):04X}>", text
    )
    # `<U+...>` inside an attribute or element must itself be escaped: write it as entities
    text = text.replace("<U+", "&lt;U+")
    text = _XML_DISCOURAGED.sub(_xml_reference, text).replace("\r", "&#13;")
    # printed in a job log, a line of element text must not start a workflow command either
    text = _WORKFLOW_LINE.sub(lambda m: m.group(1) + "&#58;:", text)
    return text.replace("##[", "##&#91;")


def markup_text(text: str) -> str:
    """HTML or SVG a browser shows: every control and invisible character shown as text
    (`visible_controls`: a character reference would be the raw character again once rendered),
    then the XML pass (`<U+200F>` written `&lt;U+200F>`, no workflow command, no `##[`)."""
    return xml_text(visible_controls(text))


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_cell(cell: str) -> str:
    """One CSV cell: on one line, controls shown, no formula, no workflow command."""
    cell = inert_workflow_commands(one_line(cell))
    if cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def write_csv(headers: Sequence[str], records: Iterable[Sequence[str]]) -> str:
    """The one CSV writer: a header line, then one line per record, every cell `csv_cell`
    (minimal quoting, `\\n` line ends; one line per record for any CSV reader)."""
    return csv_records([headers]) + csv_records(records)


def csv_records(records: Iterable[Sequence[str]]) -> str:
    """Records as `write_csv` writes them, without the header line (a CSV written in pieces)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows([csv_cell(cell) for cell in record] for record in records)
    return buffer.getvalue()


def csv_text(text: str) -> str:
    """The CSV pass: every cell re-checked by `csv_cell` (idempotent on `write_csv` output)."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return write_csv(rows[0], rows[1:]) if rows else text


# `…` too: a label cut to its length (`004-ascend-qwen3-480b-d…`) keeps its ellipsis, not `_`
_MERMAID_UNSAFE = re.compile(r"[^\w .,:/+()%…-]")


def mermaid_label(text: str, limit: int = 60) -> str:
    """A Mermaid label or title: one line of letters, digits and harmless punctuation only
    (no quote, backtick, `#`, `;`, brackets or newline can end it or start a directive)."""
    cleaned = _MERMAID_UNSAFE.sub("_", one_line(text)).strip()
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


_FINISH: dict[Destination, Callable[[str], str]] = {
    Destination.TERMINAL: terminal_text,
    Destination.MARKDOWN: terminal_text,
    # The github format's annotations are ours and escaped; its text part is made inert by
    # render_github itself (it alone knows which lines are annotations).
    Destination.GITHUB: lambda text: visible_controls(text).replace("##[", "##\u200b["),
    Destination.JSON: json_text,
    Destination.JUNIT: xml_text,
    Destination.CSV: csv_text,
    Destination.HTML: markup_text,
}


def finish(destination: Destination, text: str) -> str:
    """The last pass of every renderer's output for `destination`."""
    return _FINISH[destination](text)
