"""A launch command written as YAML or as a list of words: the shapes people paste from
docker-compose files, Kubernetes manifests and Dockerfiles (never run, never evaluated).

* docker-compose: `command:` (a string, folded or not, or a list), with `entrypoint:` before it;
* Kubernetes: a container's `command:` and `args:` lists (block `- item` or flow `[...]`),
  including `["/bin/sh", "-c", "python3 -m sglang.launch_server ..."]`;
* an exec-form list anywhere (`CMD ["python3", "-m", "sglang.launch_server", ...]`).

The words of a container are its `entrypoint`, `command` and `args` in that order: compose
appends `command` to `entrypoint`, Kubernetes `args` to `command`. A list item holding a launch
command with blanks in it (the `sh -c` string) is split as a shell would. This is a reader of
the few YAML forms these keys take, not a YAML parser: anchors, tags and flow mappings are not
read (the plain shell reading of the line then applies). Bounded by the caller's limits.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

KEY_RE = re.compile(
    r"(?P<lead>\s*(?:-\s+)?)(?P<key>entrypoint|command|args)\s*:(?:\s+|\Z)(?P<value>.*)"
)
"""A YAML line of one of the container keys (`- ` before it: the first key of a list item)."""
_ANY_KEY_RE = re.compile(r"\s*(?:-\s+)?[A-Za-z_][\w.-]{0,80}\s*:(?:\s|\Z)")
_ITEM_LEAD_RE = re.compile(r"\s*-\s+")
_ITEM_RE = re.compile(r"(?P<lead>\s*)-(?:\s+(?P<value>.*)|\Z)")
_BLOCK_SCALAR_RE = re.compile(r"[|>][+-]?[1-9]?\s*(?:#.*)?\Z")
_ORDER = {"entrypoint": 0, "command": 1, "args": 2}
MAX_LOOK_BACK = 64
"""Lines above a launch command searched for the YAML key it is the value of."""
MAX_VALUE_LINES = 200
"""Lines of one key's value read at most."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _unquote(text: str) -> str:
    """A YAML scalar's text: quotes removed (`''` in single quotes is one quote)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return _plain(text)


def _plain(text: str) -> str:
    """A plain scalar without its trailing ` # comment`."""
    cut = text.find(" #")
    return (text[:cut] if cut >= 0 else text).strip()


def flow_items(text: str) -> list[str] | None:
    """The items of a flow sequence `[...]` at the start of `text` (None: no closed list)."""
    start = text.find("[")
    if start < 0:
        return None
    lexer = shlex.shlex(text[start + 1 :], posix=True)
    lexer.whitespace = ", \t\r\n"
    lexer.whitespace_split = True
    lexer.commenters = ""
    items: list[str] = []
    try:
        for token in lexer:
            if token.endswith("]"):  # the list's end (an item ending in `]` is not read)
                return [*items, token[:-1]] if token[:-1] else items
            items.append(token)
    except ValueError:  # an unclosed quote
        return None
    return None


def _continuation(lines: list[str], index: int, deeper_than: int) -> tuple[list[str], int]:
    """The lines after `index` indented deeper than `deeper_than` (blank lines inside kept)."""
    out: list[str] = []
    follow = index + 1
    while follow < len(lines) and len(out) < MAX_VALUE_LINES:
        line = lines[follow].rstrip("\r")
        if line.strip() and _indent(line) <= deeper_than:
            break
        out.append(line)
        follow += 1
    while out and not out[-1].strip():
        out.pop()
    return out, follow


def _block_scalar(indicator: str, body: list[str]) -> str:
    """A `|` or `>` block's text as one shell string: `>` folds lines into one; in `|`, a line
    ending in a backslash continues, and every other line ends a shell command (`;`)."""
    texts = [line.strip() for line in body]
    if indicator.startswith(">"):
        return " ".join(text for text in texts if text)
    out: list[str] = []
    for text in texts:
        if not text:
            continue
        if text.endswith("\\"):
            out.append(text[:-1])
        else:
            out.append(text + " ;")
    return " ".join(out)


def _value_words(lines: list[str], index: int, value: str, key_column: int) -> list[str] | None:
    """The words a key's value gives: a list's items, or a string split as a shell would."""
    value = value.rstrip("\r")
    if value.lstrip().startswith("["):
        parts = [value]  # the list's lines up to the one closing it, read once
        while "]" not in parts[-1] and index + len(parts) < len(lines):
            if len(parts) >= MAX_VALUE_LINES:
                return None
            parts.append(lines[index + len(parts)])
        return flow_items("\n".join(parts))
    if _BLOCK_SCALAR_RE.match(value.strip()):
        body, _ = _continuation(lines, index, key_column)
        return shell_words(_block_scalar(value.strip(), body))
    if value.strip() and not value.strip().startswith("#"):
        more, _ = _continuation(lines, index, key_column)  # a plain scalar over several lines
        text = _unquote(" ".join([value.strip(), *(m.strip() for m in more if m.strip())]))
        return shell_words(text)
    return _block_sequence(lines, index, key_column)


def _block_sequence(lines: list[str], index: int, key_column: int) -> list[str]:
    """`- item` lines under a key (at its column or deeper, as Kubernetes writes them)."""
    items: list[str] = []
    follow = index + 1
    dash: int | None = None
    while follow < len(lines) and follow - index < MAX_VALUE_LINES:
        line = lines[follow].rstrip("\r")
        follow += 1
        if _blank(line):
            continue
        match = _ITEM_RE.match(line)
        column = _indent(line)
        if match is None or column < key_column or (dash is not None and column != dash):
            if dash is not None and column > dash:
                continue  # the rest of a block-scalar item, read with it
            break
        dash = column
        value = (match.group("value") or "").strip()
        if _BLOCK_SCALAR_RE.match(value):
            body, _ = _continuation(lines, follow - 1, column)
            items.append(_block_scalar(value, body))
        else:
            items.append(_unquote(value))
    return items


def shell_words(text: str) -> list[str]:
    """A shell command's words (`#` starts a comment); on an unclosed quote, its blank-separated
    words."""
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unclosed quote: split on blanks instead
        return text.split()


def _expand(items: list[str], holds_command: Callable[[str], bool]) -> list[str]:
    """A list item that is a whole shell command (`sh -c "python3 -m sglang..."`) as its words."""
    out: list[str] = []
    for item in items:
        out.extend(shell_words(item) if holds_command(item) and " " in item else [item])
    return out


def _owning_key(lines: list[str], index: int) -> int | None:
    """The line of the container key whose value holds line `index` (None: not YAML's)."""
    line = lines[index]
    if KEY_RE.match(line):
        return index
    column = _indent(line)
    is_item = _ITEM_RE.match(line) is not None
    for above in range(index - 1, max(-1, index - MAX_LOOK_BACK), -1):
        text = lines[above].rstrip("\r")
        if _blank(text):
            continue
        lead = _indent(text)
        if KEY_RE.match(text) and (lead < column or (lead == column and is_item)):
            return above
        if _ANY_KEY_RE.match(text) and lead < column:
            return None  # the value of some other key
        if lead < column and _ITEM_RE.match(text) is None:
            return None
    return None


def yaml_command_words(
    lines: list[str], index: int, holds_command: Callable[[str], bool]
) -> list[str] | None:
    """The words of the container whose `entrypoint`/`command`/`args` value holds line `index`
    (entrypoint, then command, then args), or the items of an exec-form list on that line;
    None when the line is neither (then it is read as a shell command line)."""
    key_line = _owning_key(lines, index)
    if key_line is None:
        items = flow_items(lines[index]) if re.search(r"\[\s*[\"']", lines[index]) else None
        if items is not None and holds_command(" ".join(items)):
            return _expand(items, holds_command)
        return None
    match = KEY_RE.match(lines[key_line])
    assert match is not None
    column = len(match.group("lead"))  # the keys of this mapping start here
    words: dict[str, list[str]] = {}
    for sibling in _siblings(lines, key_line, column):
        found = KEY_RE.match(lines[sibling])
        if found is None or len(found.group("lead")) != column or found.group("key") in words:
            continue
        value = _value_words(lines, sibling, found.group("value"), column)
        words[found.group("key")] = _expand(value or [], holds_command)
    return [word for key in sorted(words, key=_ORDER.__getitem__) for word in words[key]]


def _siblings(lines: list[str], key_line: int, column: int) -> range:
    """The lines of the mapping around `key_line`, whose keys start at `column`: every line
    indented at least that far, from the `- ` that opens it (a list item) or the first line
    indented less, to the next line indented less."""
    first = key_line
    while first > 0 and key_line - first < MAX_VALUE_LINES:
        if lines[key_line][:column].strip().startswith("-"):
            break  # `- command:`: the item, and so the mapping, starts on the key's line
        text = lines[first - 1].rstrip("\r")
        if not _blank(text) and _indent(text) < column:
            lead = _ITEM_LEAD_RE.match(text)
            if lead is not None and len(lead.group(0)) == column:
                first -= 1  # `- name: x`: the list item opening this mapping
            break
        first -= 1
    last = key_line
    while last + 1 < len(lines) and last - key_line < MAX_VALUE_LINES:
        text = lines[last + 1].rstrip("\r")
        if not _blank(text) and _indent(text) < column:
            break
        last += 1
    return range(first, last + 1)
