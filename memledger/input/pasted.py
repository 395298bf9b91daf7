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

The text is the user's, of any length: every step is one left-to-right walk (`str.find` and
character tests), never a pattern tried at every position that can rescan the rest of the line
(a regexp search for a key before `= ...` or for spaces before `<-` took time quadratic in the
line's length: 35 s for one 48 KB line), and a line too long to be a message is left as is.
"""

from __future__ import annotations

import re

from memledger.input.linegrammar import known_head

# a quote or prompt marker, a markdown list item, or an issue title's tag (`[Bug] `, `[Question] `:
# letters only); anchored, one walk from the start
_LEAD_RE = re.compile(r"^(?:>+|\$|#|[-*+•]|\d{1,3}[.)]|\[[A-Za-z][A-Za-z ]*\])\s+")
# the log file a summary quotes each line from: `grep -H` (`name.log:`) or a column of names
_FILE_COLUMN_RE = re.compile(r"^[\w.\-/]+\.(?:log|txt|out|err)(?::\d+)?(?::\s*|\s{2,})")
# an arrow or a comment marker after white space: the user's note, never SGLang's text
_ANNOTATION_MARKS = ("<-", "<=", "←", "-->", "==>", "//", "#")
_ELLIPSIS_RE = re.compile(r"\.{3,}|…")
_KEY_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_#")


def _code_spans(text: str) -> list[str]:
    """The text inside each markdown inline code span (`` `code` ``, ``` ``code`` ```), in
    order: a run of backticks, the text up to the next backtick, and that closing run."""
    spans: list[str] = []
    size = len(text)
    start = text.find("`")
    while start != -1:
        inner = start
        while inner < size and text[inner] == "`":
            inner += 1
        close = text.find("`", inner) if inner < size else -1
        if close == -1:
            break
        spans.append(text[inner:close])
        end = close
        while end < size and text[end] == "`":
            end += 1
        start = text.find("`", end)
    return spans


def _quoted_message(text: str) -> str:
    """The markdown around a message dropped: the inline code span that holds a known SGLang line
    (the sentence around it is the user's), else the backticks; bold's `**`."""
    if "`" in text:
        spans = (span.strip() for span in _code_spans(text))
        text = next((span for span in spans if known_head(span)), text.replace("`", ""))
    return text.replace("**", "") if "**" in text else text


def without_links(text: str) -> str:
    """Markdown links as the text they show: `[get_device_memory](https://...)` ->
    `get_device_memory`, `![shot](x.png)` -> `shot` (CommonMark 0.31 §6.3 inline links, §6.4
    images). An issue's markdown source, copied from its edit box or an API, puts the URL inside a
    sentence, where it pushes the words an error rule reads apart. A target holding white space
    (a link title) is left as is. One left-to-right walk: each `[` is looked for only back to
    where the last link ended, and text without `)` after a `](` has no link further on."""
    if "](" not in text:
        return text
    kept: list[str] = []
    copied = 0
    mid = text.find("](")
    while mid != -1:
        opening = text.rfind("[", copied, mid)
        closing = text.find(")", mid + 2)
        if closing == -1:
            break
        target = text[mid + 2 : closing]
        if opening == -1 or not target or any(c.isspace() for c in target):
            mid = text.find("](", mid + 2)
            continue
        start = opening - 1 if opening > copied and text[opening - 1] == "!" else opening
        kept.append(text[copied:start])
        kept.append(text[opening + 1 : mid])
        copied = closing + 1
        mid = text.find("](", copied)
    return "".join(kept) + text[copied:] if kept else text


def _without_annotation(text: str) -> str:
    """`text` cut before the first annotation marker that follows white space (with that white
    space): `avail mem=0.91 GB  <- here` -> `avail mem=0.91 GB`. A `#` needs white space after it
    too. The note runs to the end of its line: a marker with a line break after it (other than
    a final one) is no note."""
    size = len(text)
    # a note ends the text or its final line break: it starts after the last other break
    last_break = text.rfind("\n", 0, size - 1)
    first = -1
    for mark in _ANNOTATION_MARKS:
        at = text.find(mark, 1)
        while at != -1 and (first == -1 or at < first):
            after = at + len(mark)
            if mark == "#":
                after += 1  # `#` and the white space after it
                spaced = after <= size and text[after - 1].isspace()
            else:
                spaced = True
            if spaced and text[at - 1].isspace() and after > last_break:
                first = at
                break
            at = text.find(mark, at + 1)
    if first == -1:
        return text
    start = first
    while start > 0 and text[start - 1].isspace():
        start -= 1
    # `.*$` stops before a final line break that the marker did not take
    keep_break = text.endswith("\n") and _marker_end(text, first) < size
    return text[:start] + ("\n" if keep_break else "")


def _marker_end(text: str, at: int) -> int:
    for mark in _ANNOTATION_MARKS:
        if text.startswith(mark, at):
            return at + len(mark) + (1 if mark == "#" else 0)
    return at


def _key_chain_end(text: str, start: int) -> int:
    """Where the key that starts at `start` ends: words of `[\\w#/-]` characters, each after the
    first starting with a letter, `_` or `#`, joined by single spaces."""
    size = len(text)
    end = start + 1
    while True:
        while end < size and (text[end].isalnum() or text[end] in "_#/-"):
            end += 1
        if end + 1 < size and text[end] == " " and text[end + 1] in _KEY_START:
            end += 2
            continue
        return end


def _elided_end(text: str, key_end: int) -> int:
    """Where `= ...` (or `: …`, and a `,` or `;` after it) ends after a key, or -1 if none
    follows."""
    size = len(text)
    at = key_end
    while at < size and text[at].isspace():
        at += 1
    if at >= size or text[at] not in "=:":
        return -1
    at += 1
    while at < size and text[at].isspace():
        at += 1
    if text.startswith("...", at):
        while at < size and text[at] == ".":
            at += 1
    elif text.startswith("…", at):
        at += 1
    else:
        return -1
    while at < size and text[at].isspace():
        at += 1
    return at + 1 if at < size and text[at] in ",;" else at


def _without_elided_values(text: str) -> str:
    """Every `key=...` (an elided value with its key) dropped: `type=..., avail mem=20.40 GB`
    -> `avail mem=20.40 GB`. One walk: each key is read once, whether or not it is elided."""
    kept: list[str] = []
    copied = 0
    at = 0
    size = len(text)
    while at < size:
        if text[at] not in _KEY_START:
            at += 1
            continue
        key_end = _key_chain_end(text, at)
        end = _elided_end(text, key_end)
        if end == -1:
            at = key_end  # any later start inside this key ends where it does
            continue
        kept.append(text[copied:at])
        copied = at = end
    return "".join(kept) + text[copied:] if kept else text


def tidy_pasted(text: str, limit: int) -> str:
    """The SGLang message a pasted line holds (see the module docstring); the text if untouched.
    A line longer than `limit` is returned as is, before any pattern runs: too long to be a
    message, it is never parsed."""
    if len(text) > limit:
        return text
    tidied = _LEAD_RE.sub("", _FILE_COLUMN_RE.sub("", text))
    if "`" in tidied or "**" in tidied:
        tidied = _quoted_message(tidied)
    tidied = _without_annotation(tidied)
    if "..." in tidied or "…" in tidied:
        tidied = _without_elided_values(tidied)
        tidied = _ELLIPSIS_RE.sub(" ", tidied)
    return tidied.strip()
