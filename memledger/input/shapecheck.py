"""What a stored line shape must satisfy before its tree stands in for the grammar.

The shape store (memledger.input.shapestore) sits in a private per-user directory, yet a cache
restored from elsewhere (a CI cache of another branch, an older memledger) or a damaged or planted
file could hold trees this grammar would never give. Its file is named by the grammar, lark's
version and the memledger code that makes and reads trees (so another branch's code or grammar
is another file), and every entry is checked here, against the packaged grammar's TEXT (never
against anything in the cache), before it is used:

* it is a tree of this grammar: `start` over one line rule (an alternative of `message`), every
  rule and terminal name one the grammar defines, within the node and depth bounds;
* its tokens lie in order inside the message, and each token's text is one its terminal matches
  (the terminal's `/regex/` or quoted words, as the grammar states them), as far as Lark's lexer
  reads it: a `/regex/` token ends where its regex, matched from the token's start, stops (so a
  key `avail mem` cannot be split into free text `avail` and a key `mem`);
* a greedy option is taken where the text goes on with it: a node `X (_assign value)?` that
  holds X alone is not followed by one of `_assign`'s words (`=`, `:`), since Lark's LALR
  parser, without conflicts, always shifts them there (so `avail mem=47.63 GB` cannot become a
  key without a value and a loose size);
* it accounts for the whole message: the text between the tokens is the grammar's `%ignore`
  (white space) and its quoted words only, and the line rule's own quoted words stand there in
  order; so the line is reproduced from the tree and the grammar's words;
* a stored "does not parse" is believed only for a message in which no line rule's own words
  all appear in order.

* its brackets are its nodes': each `[` `]` `(` `)` of the message is where a node of a rule
  the brackets enclose (`list: "[" ... "]"`, `paren: "(" ... ")"`) opens or closes, or one of
  the line rule's own words (gpu_capacity_fallback's `(` `)`), in order; so a list's numbers
  cannot be read as loose ones with its brackets as words between, nor a list closed early;

Anything else is doubt, and the grammar decides (the store is then rewritten with the grammar's
tree). The keyed binding of memledger.input.shapestore keeps every entry this user's key did not
write out as well; these checks hold without it (tests/security/test_shapes.py forges with it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

T = TypeVar("T")
MAX_DEPTH = 64
"""Nesting of a stored tree (the deepest the grammar gives for real lines is ~10)."""
MAX_NODES = 512
"""Nodes of a stored tree (memledger.input.shapestore stores none larger)."""

_DEFINITION_RE = re.compile(r"^([?!]?)([A-Za-z_][A-Za-z0-9_]*)(?:\.-?\d+)?\s*:\s*(.*)$", re.DOTALL)
_QUOTED_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_ALTERNATIVES_RE = re.compile(r'^"(?:[^"\\]|\\.)*"(?:\s*\|\s*"(?:[^"\\]|\\.)*")*$')
_REGEX_RE = re.compile(r"^/((?:[^/\\]|\\.)+)/([imsx]*)$")
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
_ELEMENT_RE = re.compile(
    r'\s*(?:("(?:[^"\\]|\\.)*")|([A-Z_][A-Z0-9_]*)(?![a-z0-9_])|\(([^()]*)\))([?*+]?)'
)
_GROUPING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[()\[\]|]')
_SPACE_RE = re.compile(r"\s*")  # what `%ignore /\s+/` skips
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


@dataclass(frozen=True)
class Vocabulary:
    """What the grammar's text says of its trees (None from `vocabulary`: it says too little).
    Per-rule and per-terminal parts are worked out when first needed (a run meets few)."""

    rules: frozenset[str]
    bodies: dict[str, str]
    """Rule or terminal -> its definition's text."""
    line_rules: tuple[str, ...]
    words_by_first: dict[str, tuple[str, ...]]
    """Every quoted word of the rules by its first character, longest first."""
    literal_terminals: dict[str, frozenset[str]]
    """Terminals defined as quoted words only (`"nccl" | "parallel"`) -> those words."""
    _worked_out: dict[tuple[str, str], Any] = field(default_factory=dict)

    def own_words(self, rule: str) -> tuple[str, ...]:
        """The rule's own quoted words, in order (those outside any group or option)."""
        return self._once(("own", rule), lambda: _own_words(self.bodies[rule]))

    def leading(self, rule: str) -> tuple[frozenset[str], ...]:
        """What a message of this rule starts with: one of each set's words, in turn (empty:
        the rule starts with a WORD or an option)."""
        return self._once(("lead", rule), lambda: _leading(self.bodies[rule], self))

    def matches(self, terminal: str, text: str) -> bool:
        """Whether the terminal matches all of `text` (False for a terminal beyond this reading)."""
        words = self.literal_terminals.get(terminal)
        if words is not None:
            return text in words
        pattern = self._once(("re", terminal), lambda: _terminal_regex(self.bodies.get(terminal)))
        return pattern is not None and pattern.fullmatch(text) is not None

    def lexed(self, terminal: str, message: str, start: int, end: int) -> bool:
        """Whether the token `message[start:end]` is what Lark's lexer reads there as this
        terminal: all of its text, and for a `/regex/` terminal exactly as far as the regex
        matches from `start` (Lark matches it so: a token ends where its regex stops)."""
        if not self.matches(terminal, message[start:end]):
            return False
        if terminal in self.literal_terminals:
            return True
        pattern = self._once(("re", terminal), lambda: _terminal_regex(self.bodies.get(terminal)))
        found = None if pattern is None else pattern.match(message, start)
        return found is not None and found.end() == end

    def greedy_tail(self, rule: str) -> tuple[str, frozenset[str]] | None:
        """(X, words) when the rule has an alternative `X (_tail ...)?` whose option starts
        with one of `words`; None otherwise (module docstring: a greedy option)."""
        return self._once(("tail", rule), lambda: _greedy_tail(self.bodies[rule], self))

    def enclosing(self, rule: str) -> tuple[str, str] | None:
        """(open, close) when every node of `rule` stands between two brackets of its own
        (`list: "[" ... "]"`); None otherwise."""
        return self._once(("encl", rule), lambda: _enclosing(self.bodies.get(rule, "")))

    def own_brackets(self, rule: str) -> tuple[str, ...]:
        """The bracket characters of the rule's own words, in order."""
        return self._once(
            ("ownbr", rule), lambda: tuple(c for w in self.own_words(rule) for c in _brackets(w))
        )

    def _once(self, key: tuple[str, str], work: Callable[[], T]) -> T:
        if key not in self._worked_out:
            self._worked_out[key] = work()
        found: T = self._worked_out[key]
        return found


def _definitions(grammar_text: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(prefix, name, body) of each definition, continuation lines joined; and the directives."""
    joined: list[str] = []
    for line in grammar_text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if line[0].isspace() and joined:
            joined[-1] += " " + stripped
        else:
            joined.append(stripped)
    found: list[tuple[str, str, str]] = []
    directives: list[str] = []
    for text in joined:
        if text.startswith("%"):
            directives.append(text)
            continue
        match = _DEFINITION_RE.match(text)
        if match is None:
            raise ValueError(f"not a definition: {text[:40]}")
        found.append((match.group(1), match.group(2), match.group(3).strip()))
    return found, directives


def _unquoted(quoted: str) -> str:
    """A Lark string literal's text (escapes are rare: only they pay for literal_eval)."""
    return quoted[1:-1] if "\\" not in quoted else str(ast.literal_eval(quoted))


def _words(body: str) -> list[str]:
    return [_unquoted(quoted) for quoted in _QUOTED_RE.findall(body)]


def _own_words(body: str) -> tuple[str, ...]:
    """The quoted words of a rule body outside (...) and [...] groups and not made optional;
    none when the body has alternatives at its top level."""
    kept = []
    for match in _top_level_tokens(body):
        token = match.group(0)
        if token == "|":
            return ()
        if body[match.end() : match.end() + 1] not in ("?", "*"):
            kept.append(_unquoted(token))
    return tuple(kept)


def _top_level_tokens(body: str) -> Iterator[re.Match[str]]:
    """The `|` and quoted words of a rule body outside every (...) and [...] group."""
    depth = 0
    for match in _GROUPING_RE.finditer(body):
        token = match.group(0)
        if token in ("(", "["):
            depth += 1
        elif token in (")", "]"):
            depth -= 1
        elif depth == 0:
            yield match


def _element_words(match: re.Match[str], vocab: Vocabulary) -> frozenset[str]:
    """The words one leading element stands for (empty when it is not words only)."""
    quoted, terminal, group = match.group(1), match.group(2), match.group(3)
    if quoted is not None:
        return frozenset([_unquoted(quoted)])
    if terminal is not None:
        return vocab.literal_terminals.get(terminal, frozenset())
    words: set[str] = set()
    for item in (part.strip() for part in group.split("|")):
        if _QUOTED_RE.fullmatch(item):
            words.add(_unquoted(item))
        elif item in vocab.literal_terminals:
            words |= vocab.literal_terminals[item]
        else:
            return frozenset()
    return frozenset(words)


def _leading(body: str, vocab: Vocabulary) -> tuple[frozenset[str], ...]:
    parts: list[frozenset[str]] = []
    position = 0
    while True:
        match = _ELEMENT_RE.match(body, position)
        if match is None or match.group(4) in ("?", "*"):
            break
        words = _element_words(match, vocab)
        if not words:
            break
        parts.append(words)
        position = match.end()
        if match.group(4) == "+":
            break
    return tuple(parts)


_OPTIONAL_TAIL_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s+\((_[a-z0-9_]+)\s[^()|]*\)\?$")


def _greedy_tail(body: str, vocab: Vocabulary) -> tuple[str, frozenset[str]] | None:
    for alternative in _top_level_alternatives(body):
        match = _OPTIONAL_TAIL_RE.match(alternative.strip())
        if match is None:
            continue
        opener = vocab.bodies.get(match.group(2), "")
        if _ALTERNATIVES_RE.match(opener):  # an inlined rule of quoted words only: `"=" | ":"`
            return match.group(1), frozenset(_words(opener))
    return None


def _top_level_alternatives(body: str) -> list[str]:
    parts, start = [], 0
    for match in _top_level_tokens(body):
        if match.group(0) == "|":
            parts.append(body[start : match.start()])
            start = match.end()
    return [*parts, body[start:]]


def _starts_with(message: str, position: int, parts: tuple[frozenset[str], ...]) -> bool:
    """Whether `message` from `position` is the parts' words in turn, white space between."""
    while position < len(message) and message[position].isspace():
        position += 1
    if not parts:
        return True
    return any(
        message.startswith(word, position)
        and _starts_with(message, position + len(word), parts[1:])
        for word in parts[0]
    )


_BRACKETS = "[]()"
_PAIRS = {"[": "]", "(": ")"}


def _brackets(word: str) -> str:
    return "".join(c for c in word if c in _BRACKETS)


def _enclosing(body: str) -> tuple[str, str] | None:
    body = body.strip()
    if len(_top_level_alternatives(body)) != 1:
        return None
    for opening, closing in _PAIRS.items():
        if body.startswith(f'"{opening}"') and body.endswith(f'"{closing}"') and len(body) > 6:
            return opening, closing
    return None


def _terminal_regex(body: str | None) -> re.Pattern[str] | None:
    regex = None if body is None else _REGEX_RE.match(body)
    if regex is None:
        return None
    flags = 0
    for flag in regex.group(2):
        flags |= _FLAGS[flag]
    return re.compile(regex.group(1), flags)


@lru_cache(maxsize=4)
def vocabulary(grammar_text: str) -> Vocabulary | None:
    """The vocabulary of a grammar, or None when its text is beyond this reading (no store)."""
    try:
        definitions, directives = _definitions(grammar_text)
        for directive in directives:
            if directive.split(None, 1) != ["%ignore", r"/\s+/"]:
                return None  # terminals or rules this reading does not see, or other ignores
        bodies = {name: body for _, name, body in definitions}
        rules = frozenset(name for name in bodies if name.lstrip("_")[:1].islower())
        words: set[str] = set()
        for name in rules:
            words.update(_words(bodies[name]))
        literal_terminals = {
            name: frozenset(_words(body))
            for name, body in bodies.items()
            if name not in rules and _ALTERNATIVES_RE.match(body)
        }
    except (ValueError, SyntaxError):
        return None
    line_rules = tuple(part.strip() for part in bodies.get("message", "").split("|"))
    if "start" not in rules or not all(_NAME_RE.match(r) and r in rules for r in line_rules):
        return None
    by_first: dict[str, list[str]] = {}
    for word in sorted(words, key=len, reverse=True):
        by_first.setdefault(word[0], []).append(word)
    return Vocabulary(
        rules=rules,
        bodies=bodies,
        line_rules=line_rules,
        words_by_first={first: tuple(found) for first, found in by_first.items()},
        literal_terminals=literal_terminals,
    )


def _tokens(
    data: Any,
    vocab: Vocabulary,
    depth: int,
    out: list[tuple[str, int, int]],
    nodes: list[int],
    untaken: list[tuple[int, frozenset[str]]],
    brackets: list[tuple[int, str]],
) -> None:
    """Check one stored node's form and names; collect its tokens in order, where a greedy
    option was not taken (the end of its node, the words it would start with), and the
    brackets its nodes stand between (how many tokens precede each, the bracket)."""
    nodes[0] += 1
    if depth > MAX_DEPTH or nodes[0] > MAX_NODES or not isinstance(data, list):
        raise ValueError("not a tree of this grammar")
    if len(data) == 3:
        type_, start, end = data
        if not (isinstance(type_, str) and type(start) is int and type(end) is int):
            raise ValueError("not a token")
        if type_ in vocab.rules or type_ not in vocab.bodies:
            raise ValueError(f"no terminal {type_!r} in the grammar")
        out.append((type_, start, end))
        return
    if len(data) != 2 or not isinstance(data[0], str) or not isinstance(data[1], list):
        raise ValueError("not a tree of this grammar")
    if data[0] not in vocab.rules:
        raise ValueError(f"no rule {data[0]!r} in the grammar")
    before = len(out)
    enclosing = vocab.enclosing(data[0])
    if enclosing is not None:
        brackets.append((before, enclosing[0]))
    for child in data[1]:
        _tokens(child, vocab, depth + 1, out, nodes, untaken, brackets)
    if enclosing is not None:
        brackets.append((len(out), enclosing[1]))
    tail = vocab.greedy_tail(data[0])
    if tail is not None and len(out) > before and [c[0] for c in data[1]] == [tail[0]]:
        untaken.append((out[-1][2], tail[1]))  # `X` alone: its option was not taken


def _gap_words(text: str, start: int, end: int, vocab: Vocabulary) -> list[str] | None:
    """`text[start:end]` as white space (the grammar's %ignore) and quoted words, or None."""
    found: list[str] = []
    position = start
    while position < end:
        if text[position].isspace():
            position += 1
            continue
        for word in vocab.words_by_first.get(text[position], ()):
            if position + len(word) <= end and text.startswith(word, position):
                found.append(word)
                position += len(word)
                break
        else:
            return None
    return found


class _PlacedBrackets:
    """Matches the brackets of the message's gaps, gap by gap, against those the tree's nodes
    stand between there, and else the line rule's own bracket words in turn (module doc)."""

    def __init__(self, expected: list[tuple[int, str]], own: tuple[str, ...]) -> None:
        self._expected = expected
        self._next = 0
        self._own = own
        self._own_next = 0

    def gap(self, tokens_before: int, words: list[str]) -> None:
        """The gap before token `tokens_before` (its words as _gap_words found them)."""
        expected = self._expected
        for char in (c for word in words for c in word if c in _BRACKETS):
            if self._next < len(expected) and expected[self._next] == (tokens_before, char):
                self._next += 1
            elif self._own_next < len(self._own) and self._own[self._own_next] == char:
                self._own_next += 1
            else:
                raise ValueError(f"a {char!r} where the tree has no node opening or closing")
        if self._next < len(expected) and expected[self._next][0] <= tokens_before:
            raise ValueError("a node's bracket is not in the message")

    def finish(self) -> None:
        if self._next != len(self._expected) or self._own_next != len(self._own):
            raise ValueError("a node's bracket is not in the message")


def _in_order(wanted: tuple[str, ...], words: list[str]) -> bool:
    remaining = iter(words)
    return all(any(word == seen for seen in remaining) for word in wanted)


def check_tree(data: Any, message: str, vocab: Vocabulary) -> None:
    """Raise ValueError unless stored tree `data` passes every check of the module docstring."""
    if not (isinstance(data, list) and len(data) == 2 and data[0] == "start"):
        raise ValueError("not a tree of this grammar")
    children = data[1]
    if not (isinstance(children, list) and len(children) == 1 and isinstance(children[0], list)):
        raise ValueError("not one line rule")
    line_rule = children[0][0] if len(children[0]) == 2 else None
    if not isinstance(line_rule, str) or line_rule not in vocab.line_rules:
        raise ValueError("not a line rule of this grammar")
    tokens: list[tuple[str, int, int]] = []
    untaken: list[tuple[int, frozenset[str]]] = []
    brackets: list[tuple[int, str]] = []
    _tokens(data, vocab, 0, tokens, [0], untaken, brackets)
    placed = _PlacedBrackets(brackets, vocab.own_brackets(line_rule))
    gaps: list[str] = []
    position = 0
    for index, (type_, start, end) in enumerate(tokens):
        if not position <= start < end <= len(message):
            raise ValueError("token out of order or outside the message")
        if not vocab.lexed(type_, message, start, end):
            raise ValueError(f"{type_} is not what the lexer reads there")
        words = _gap_words(message, position, start, vocab)
        if words is None:
            raise ValueError("text between tokens is not the grammar's")
        placed.gap(index, words)
        gaps += words
        position = end
    words = _gap_words(message, position, len(message), vocab)
    if words is None:
        raise ValueError("text after the last token is not the grammar's")
    placed.gap(len(tokens), words)
    placed.finish()
    gaps += words
    if not _in_order(vocab.own_words(line_rule), gaps):
        raise ValueError(f"the message lacks the words of {line_rule}")
    for end, option_words in untaken:
        after = _SPACE_RE.match(message, end)
        if after is not None and any(message.startswith(w, after.end()) for w in option_words):
            raise ValueError("an option the parser would take is not taken")


def could_parse(message: str, vocab: Vocabulary) -> bool:
    """Whether some line rule might match `message` (a stored "does not parse" is then doubted):
    the message starts with the rule's leading words, or, for a rule that starts otherwise, its
    own words all stand in the message in order (a rule with neither: always True)."""
    for rule in vocab.line_rules:
        lead = vocab.leading(rule)
        if lead:
            if _starts_with(message, 0, lead):
                return True
            continue
        position = 0
        for word in vocab.own_words(rule):
            position = message.find(word, position)
            if position < 0:
                break
            position += len(word)
        else:
            return True
    return False


_EXTEND_RE = re.compile(r"^%extend\s+message\s*:\s*(.*)$", re.DOTALL)


def extension_heads(text: str) -> list[tuple[str, tuple[frozenset[str], ...]]]:
    """(rule, leading words) of each line rule a grammar extension adds (`%extend message: r`),
    one per alternative that starts with words: a message starting so is meant for the rule,
    and if no rule parses it the user is told (F23) instead of losing it without a word."""
    return _line_heads(text, packaged=False)


def packaged_heads(text: str) -> list[tuple[str, tuple[frozenset[str], ...]]]:
    """(rule, leading words) of each alternative of the line rules the packaged grammar's
    `message` lists (`load_begin: "Load" "weight" "begin" fields?` gives Load, weight, begin):
    a message starting so that does not parse is a known shape, malformed."""
    return _line_heads(text, packaged=True)


def _line_heads(text: str, *, packaged: bool) -> list[tuple[str, tuple[frozenset[str], ...]]]:
    try:
        definitions, directives = _definitions(text)
    except ValueError:
        return []  # the grammar does not build either: lark says where
    bodies = {name: body for _, name, body in definitions}
    literal_terminals = {
        name: frozenset(_words(body))
        for name, body in bodies.items()
        if name.lstrip("_")[:1].isupper() and _ALTERNATIVES_RE.match(body)
    }
    vocab = Vocabulary(
        rules=frozenset(),
        bodies=bodies,
        line_rules=(),
        words_by_first={},
        literal_terminals=literal_terminals,
    )
    if packaged:
        rules = [part.strip() for part in bodies.get("message", "").split("|")]
    else:
        added = [_EXTEND_RE.match(directive) for directive in directives]
        rules = [part.strip() for match in added if match for part in match.group(1).split("|")]
    heads: list[tuple[str, tuple[frozenset[str], ...]]] = []
    for rule in rules:
        for alternative in _top_level_alternatives(bodies.get(rule, "")):
            lead = _leading(alternative.strip(), vocab)
            if lead:
                heads.append((rule, lead))
    return heads


def head_phrase(lead: tuple[frozenset[str], ...]) -> str:
    """The leading words as a log prints them (one space apart), up to the first part that is
    a choice or punctuation (whose spacing the grammar leaves open)."""
    words: list[str] = []
    for part in lead:
        if len(part) != 1:
            break
        (word,) = part
        if not (word[:1].isalnum() or word[:1] == "_"):
            break
        words.append(word)
    return " ".join(words)


def starts_with_words(message: str, lead: tuple[frozenset[str], ...]) -> bool:
    """Whether `message` starts with one of each part's words in turn (white space between)."""
    return bool(lead) and _starts_with(message, 0, lead)
