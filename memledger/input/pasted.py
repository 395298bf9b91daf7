"""Reading lines as people paste them: without the SGLang prefix, aligned, annotated, abridged.

When no line of an input carries an SGLang `[date time TAGS]` prefix, the input is a paste (an
issue comment, a chat message, a terminal copy) and every bare line is read as a message of the
one rank present. A pasted line is first tidied into the message SGLang printed:

* a quote marker, a prompt, a list bullet or an issue title's tag before it (`> `, `$ `, `- `,
  `1. `, `[Bug] `) is dropped, and so is the name of the log a line was grepped from
  (`q4_f.log  Load weight begin. ...`, `run.log:Load weight end. ...`), and markdown around
  it: a line quoted as inline code in a sentence (`` I saw `KV Cache is allocated. ...` which
  is 2x ``) is read as that code, and bold's `**` goes;
* a trailing annotation is cut: `avail mem=0.91 GB  <- here`, `... # after the fix`, `// why?`;
* an elided value is dropped with its key (`type=..., avail mem=20.40 GB`), and a stray `...` or
  `…` where words were cut becomes a space.

Alignment spaces need nothing: the grammar ignores whitespace between tokens. The tidied text is
what is parsed; the event keeps the line as pasted, for evidence.
"""

from __future__ import annotations

import re

from memledger.sglang.lines import KNOWN_HEAD_RE

# a quote or prompt marker, a markdown list item, or an issue title's tag (`[Bug] `, `[Question] `:
# letters only)
_LEAD_RE = re.compile(r"^(?:>+|\$|#|[-*+•]|\d{1,3}[.)]|\[[A-Za-z][A-Za-z ]*\])\s+")
# the log file a summary quotes each line from: `grep -H` (`name.log:`) or a column of names
_FILE_COLUMN_RE = re.compile(r"^[\w.\-/]+\.(?:log|txt|out|err)(?::\d+)?(?::\s*|\s{2,})")
# markdown inline code: `` `KV Cache is allocated. ...` `` in a sentence of the issue
_CODE_SPAN_RE = re.compile(r"`+([^`]+)`+")
# an arrow or a comment marker after a space: the user's note, never SGLang's text
_ANNOTATION_RE = re.compile(r"\s+(?:<-|<=|←|-->|==>|//|#\s).*$")
_ELIDED_VALUE_RE = re.compile(
    r"(?:[A-Za-z_#][\w#/\-]*(?: [A-Za-z_#][\w#/\-]*)*)\s*[=:]\s*(?:\.{3,}|…)\s*[,;]?"
)
_ELLIPSIS_RE = re.compile(r"\.{3,}|…")


def _quoted_message(text: str) -> str:
    """The markdown around a message dropped: the inline code span that holds a known SGLang line
    (the sentence around it is the user's), else the backticks; bold's `**`."""
    if "`" in text:
        spans = (m.group(1).strip() for m in _CODE_SPAN_RE.finditer(text))
        text = next((span for span in spans if KNOWN_HEAD_RE.match(span)), text.replace("`", ""))
    return text.replace("**", "") if "**" in text else text


def tidy_pasted(text: str) -> str:
    """The SGLang message a pasted line holds (see the module docstring); the text if untouched."""
    tidied = _LEAD_RE.sub("", _FILE_COLUMN_RE.sub("", text))
    if "`" in tidied or "**" in tidied:
        tidied = _quoted_message(tidied)
    tidied = _ANNOTATION_RE.sub("", tidied)
    if "..." in tidied or "…" in tidied:
        tidied = _ELIDED_VALUE_RE.sub("", tidied)
        tidied = _ELLIPSIS_RE.sub(" ", tidied)
    return tidied.strip()
