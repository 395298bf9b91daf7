"""The Lark message grammar: built once per process, checked, cached; one message -> LineParse.

The reader strips the `[date time TAGS]` prefix; this module parses what follows with the
grammar of `grammars/sglang.lark` (plus any `--grammar` extensions) and hands the tree
to memledger.input.transform. Rule names are event kinds (`load_end`,
`weight_shard_info__draft`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from memledger.errors import ConfigError
from memledger.input.extension_regex import (
    backtracking_problem,
    literal_runs,
    regexp_example,
    regexp_literals,
)
from memledger.input.grammar_cache import load_tables, store_tables
from memledger.input.shapecache import ParseCache, Transient, digit_blind
from memledger.input.shapecheck import (
    extension_heads,
    head_phrase,
    packaged_heads,
    starts_with_words,
)
from memledger.input.shapestore import ShapeStore
from memledger.input.transform import LineParse, transform
from memledger.model.events import EventKind
from memledger.sglang.lines import KNOWN_HEAD_RE

GRAMMAR_FILE = "sglang.lark"

_LITERAL_RE = re.compile(r'"((?:[^"\\]|\\.)+)"')
NUMBER_TERMINALS = frozenset({"NUMBER"})
"""The grammar's terminals whose text memledger.input.transform reads as a number (`number`, a
head's NUMBER, a list's items); every other token is read as text."""


def _settled(parse: LineParse) -> bool:
    """Whether a parse may outline its shape (shapecache.ParseCache.outline): no problems, and
    not a startup marker (`dist_init_begin`: the parser reads its variant before any cap)."""
    return not parse.problems and parse.kind is not EventKind.DIST_INIT_BEGIN


def grammar_dir() -> Path | None:
    """Where the packaged grammar is: inside the wheel, else the repo's top-level `grammars/`.

    The design card keeps the grammar at the top level (`grammars/`); the wheel force-includes it
    as `memledger/grammars/`.
    """
    packaged = resources.files("memledger").joinpath("grammars")
    if packaged.joinpath(GRAMMAR_FILE).is_file():
        return Path(str(packaged))
    repo = Path(__file__).resolve().parents[2] / "grammars"
    if (repo / GRAMMAR_FILE).is_file():
        return repo
    return None


def base_grammar_text() -> str:
    """The text of the packaged message grammar."""
    directory = grammar_dir()
    if directory is None:
        raise ConfigError(f"grammar file {GRAMMAR_FILE} not found in the package or the repository")
    try:
        return (directory / GRAMMAR_FILE).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"grammar file {GRAMMAR_FILE} not readable: {exc}") from exc


def _read_extra(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read grammar: {exc}", path=str(path)) from exc


def extra_keywords(texts: Iterable[str]) -> tuple[str, ...]:
    """Literal words of extension grammars, from `"strings"` and the literal runs of
    `/regexps/`: lines holding one are worth parsing (prefilter)."""
    found: list[str] = []
    for text in texts:
        # a line rule's leading words as one phrase too: `"Xb" "ok"` has no word of four
        # letters, but its lines start `Xb ok`
        phrases = [head_phrase(lead) for _, lead in extension_heads(text)]
        for literal in [*_LITERAL_RE.findall(text), *regexp_literals(text), *phrases]:
            if len(literal) >= 4 and literal not in found:
                found.append(literal)
    return tuple(found)


@lru_cache(maxsize=1)
def packaged_leads() -> tuple[tuple[frozenset[str], ...], ...]:
    """The leading words of each packaged line rule's alternatives, up to the first
    punctuation, when they are two or more (one word, `Capture`, says too little: such a
    rule's `LineSpec.head` says how its lines start)."""
    leads = (_words_of(lead) for _, lead in packaged_heads(base_grammar_text()))
    return tuple(dict.fromkeys(lead for lead in leads if len(lead) >= 2))


@lru_cache(maxsize=1)
def known_head_re() -> re.Pattern[str]:
    """How a message of a packaged line shape starts: its rule's leading words in the grammar
    (`packaged_leads`, white space between as the grammar allows), or its `LineSpec.head`
    (memledger.sglang.lines) where the grammar cannot say. A new wording in the grammar is
    known without a head of its own."""
    leads = [
        r"\s*".join(
            "(?:" + "|".join(re.escape(word) for word in sorted(part, key=len, reverse=True)) + ")"
            for part in lead
        )
        for lead in packaged_leads()
    ]
    return re.compile("|".join([KNOWN_HEAD_RE.pattern, *(f"(?:{lead})" for lead in leads)]))


def known_head(message: str) -> bool:
    """Whether `message` starts like a packaged line shape (`known_head_re`): one that does
    not parse is malformed, not unrecognised."""
    return known_head_re().match(message) is not None


def _words_of(lead: tuple[frozenset[str], ...]) -> tuple[frozenset[str], ...]:
    """The parts of a rule's leading words before the first one of punctuation (or all)."""
    for index, part in enumerate(lead):
        if not all(word[:1].isalnum() or word[:1] == "_" for word in part):
            return lead[:index] or lead
    return lead


class LineGrammar:
    """The compiled message grammar (packaged + extensions) and the line transformer.

    An extension (`--grammar`) may add lines, never change built-in ones: it is refused when any
    packaged example line (memledger.sglang.examples) parses differently with it.
    """

    def __init__(
        self, extra_grammars: Sequence[Path] = (), *, strict: bool = False, stored: bool = True
    ) -> None:
        extras = [(Path(p), _read_extra(Path(p))) for p in extra_grammars]
        self._text, self._starts = _concatenated(base_grammar_text(), extras)
        self._extras = extras
        self._strict = strict
        self.keywords = extra_keywords(t for _, t in extras)
        # the leading words up to any punctuation: a line missing the rule's `:` is still meant
        # for it
        self._heads = [
            (rule, path, _words_of(lead))
            for path, text in extras
            for rule, lead in extension_heads(text)
        ]
        self._lark: Any = None
        self._errors: tuple[type[Exception], ...] = ()
        # only the packaged grammar is cached: extension files are the user's and change freely
        self._cached = not strict and not extras
        # The shapes of earlier runs (memledger.input.shapestore): while every line's shape is
        # there, lark is never imported. A store exists only for a grammar that built and was
        # digit-blind (it is written by `_build` below), so the checks are done by then.
        store = ShapeStore.open(self._text) if self._cached and stored else None
        self._cache: ParseCache[LineParse] | None = (
            ParseCache(True, store, numbers=NUMBER_TERMINALS, settled=_settled)
            if store is not None and len(store)
            else None
        )
        if self._cache is None:
            self._build(store)

    def _build(self, store: ShapeStore | None = None) -> None:
        """Import lark and build (or load from the table cache) the parser; check it."""
        import lark  # heavy import kept out of module import time

        text, extras, strict, cached = self._text, self._extras, self._strict, self._cached
        starts = self._starts
        where = ", ".join(str(p) for p, _ in extras) or GRAMMAR_FILE
        self._errors = (lark.exceptions.LarkError,)
        previous = self._cache
        self._cache = None  # the examples below are checked by the grammar alone
        self._lark = _from_cache(lark, text) if cached else None
        if self._lark is not None and example_mismatches(self):
            self._lark = None  # a damaged or tampered cache file: rebuild
        if self._lark is None:
            try:
                self._lark = lark.Lark(text, parser="lalr", lexer="contextual", strict=strict)
            except Exception as exc:  # lark raises many types for grammar errors
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                path, line, first = _placed(first, starts, where)
                raise ConfigError(f"grammar does not build: {first}", path=path, line=line) from exc
            if cached:
                store_tables(text, lark.__version__, _tables(self._lark))
        if extras:
            _refuse_backtracking(self._lark, _cached_grammar(()), extras, where)
        patterns = [terminal.pattern for terminal in self._lark.terminals]
        blind = digit_blind(
            (p.value for p in patterns if p.type == "str"),
            (p.value for p in patterns if p.type == "re"),
        )
        unknown = [name for name in self.line_rules() if _kind_of(name) is None]
        if unknown:
            raise ConfigError(
                f"grammar rule {unknown[0]!r} names no event kind (a line rule is `kind` or "
                "`kind__variant`, kind one of memledger.model.events.EventKind)",
                path=where,
            )
        if extras:
            changed = _changed_examples(_cached_grammar(()), self)
            if changed:
                raise ConfigError(
                    f"grammar extension changes how a built-in line parses: {changed}", path=where
                )
            _refuse_unreachable(self, _cached_grammar(()), extras, where)
        if previous is not None:  # built for a shape the store lacked: keep what was cached
            self._cache = previous
        else:
            self._cache = ParseCache(
                blind, store if blind else None, numbers=NUMBER_TERMINALS, settled=_settled
            )

    def save_shapes(self, *, force: bool = False) -> None:
        """Keep the shapes this run parsed for the next (memledger.input.shapestore)."""
        if self._cache is not None and self._cache.store is not None:
            self._cache.store.save(force=force)

    def line_rules(self) -> list[str]:
        """The rule names of every line shape (the alternatives of `message`)."""
        if self._lark is None:
            self._build()
        return [
            str(rule.expansion[0].name)
            for rule in self._lark.rules
            if rule.origin.name == "message" and len(rule.expansion) == 1
        ]

    def meant_for(self, message: str) -> str | None:
        """`rule (file)` of the extension line rule whose leading words start `message`, if
        any: a line the grammar does not parse is then a fork line it misses, never dropped
        without a word (F23)."""
        for rule, path, lead in self._heads:
            if starts_with_words(message, lead):
                spaced = any(" " in word for part in lead for word in part)
                # Lark's longest match can read the phrase's first word as a generic word
                hint = "; a quoted phrase with a space can lex as words: quote each word"
                return f"{rule} ({path}){hint if spaced else ''}"
        return None

    def parse(self, message: str) -> LineParse | None:
        """Parse one message; None when it is no known shape (repeated shapes skip Lark).

        With extensions, a message the packaged grammar knows parses as it says: an extension
        adds lines and never changes a built-in one, even where no example line would show it
        (an `%ignore`, `%override` or higher-priority terminal that only bites some lines)."""
        if self._cache is not None and not self._extras:  # the common case, without two calls
            return self._cache.parse(message, self._tree, self._from_tree)
        return self._packaged_first(message, cached=True)

    def outline(self, message: str) -> LineParse | None:
        """A parse of another message of `message`'s shape whose kind, size keys and problems
        (none) are `message`'s too (shapecache.ParseCache.outline), or None when the caches
        cannot say; its values are the other message's: `parse` gives `message`'s own."""
        if self._cache is None or self._extras:
            return None
        return self._cache.outline(message)

    def parse_uncached(self, message: str) -> LineParse | None:
        """`parse` by the grammars alone (the reference the caches are tested against)."""
        return self._packaged_first(message, cached=False)

    def _packaged_first(self, message: str, *, cached: bool) -> LineParse | None:
        if self._extras:
            packaged = _cached_grammar(())
            known = packaged.parse(message) if cached else packaged.parse_uncached(message)
            if known is not None:
                return known
        return self._own_parse(message) if cached else self._own_parse_uncached(message)

    def _own_parse(self, message: str) -> LineParse | None:
        if self._cache is None:
            return self._own_parse_uncached(message)
        return self._cache.parse(message, self._tree, self._from_tree)

    def _own_parse_uncached(self, message: str) -> LineParse | None:
        try:
            tree = self._tree(message)
        except Transient:
            return None
        return None if tree is None else self._from_tree(tree, message)

    def _tree(self, message: str) -> Any:
        if self._lark is None:
            self._build()
        try:
            return self._lark.parse(message)
        except self._errors:
            return None
        except RecursionError:
            raise Transient from None  # this process's stack, not the shape: never cached

    def _from_tree(self, tree: Any, message: str) -> LineParse | None:
        node: Any = tree.children[0]
        name = str(getattr(node, "data", ""))
        kind = _kind_of(name)
        if kind is None:
            return None
        variant = name.split("__", 1)[1] if "__" in name else ""
        # a line only an extension (`--grammar`) reads may carry keys of the user's own
        return transform(kind, variant, node, message, declared_only=not self._extras)


def _concatenated(base: str, extras: list[tuple[Path, str]]) -> tuple[str, list[tuple[int, Path]]]:
    """The grammar text with the extensions appended, and the line each extension starts at."""
    text = base
    starts: list[tuple[int, Path]] = []
    for path, extra in extras:
        text += f"\n// ---- {path}\n"
        starts.append((text.count("\n") + 1, path))
        text += f"{extra}\n"
    return text, starts


def _placed(
    message: str, starts: list[tuple[int, Path]], where: str
) -> tuple[str, int | None, str]:
    """(file, line, message) with lark's `line N` of the concatenated grammar made relative to
    the extension file that holds it (F23: a 1-line file reported line 127)."""
    found = re.search(r"\bline (\d+)(?:, column (\d+))?", message)
    if found is None or not starts:
        return where, None, message
    number = int(found.group(1))
    holding = [(start, path) for start, path in starts if start <= number]
    if not holding:
        return GRAMMAR_FILE, number, message
    start, path = holding[-1]
    line = number - start + 1
    column = f", column {found.group(2)}" if found.group(2) else ""
    return str(path), line, message.replace(found.group(0), f"line {line}{column}")


def _refuse_unreachable(
    grammar: LineGrammar, base: LineGrammar, extras: list[tuple[Path, str]], where: str
) -> None:
    """Each line rule an extension adds must see every line it can match (review 3, the open
    F23 case): its lines hold a word the prefilter looks for (a quoted word or a regexp's
    literal run of four or more characters, or its leading quoted words as one phrase), and a
    regexp terminal that starts it is read as itself at a line's start, not as the generic
    words Lark tries first (`/MyFork staging buffer ready/` lexed as WORD `MyFork`). Else the
    rule is refused at load, one line, instead of losing its lines without a word."""
    lark = grammar._lark
    own = set(grammar.line_rules()) - set(base.line_rules())
    terminals = {t.name: t.pattern for t in lark.terminals}
    for rule in lark.rules:
        name = str(rule.origin.name)
        if name not in own:
            continue
        patterns = [terminals.get(s.name) if s.is_term else None for s in rule.expansion]
        source = next((str(p) for p, text in extras if name in text), where)
        if not _holds_keyword(patterns):
            raise ConfigError(
                f"grammar rule {name!r}: its lines hold no quoted word (or regexp run) of four "
                "or more characters, so memledger cannot pick them out of a log; quote one",
                path=source,
            )
        head = patterns[0] if patterns else None
        if head is None or head.type != "re":
            continue
        sample = regexp_example(head.value)
        first = _first_token(lark, sample) if sample else None
        if first is not None and first != rule.expansion[0].name:
            raise ConfigError(
                f"grammar rule {name!r}: a line starting /{head.value}/ never reaches it: Lark "
                f"reads its start as {first} first; name the regexp with a priority "
                f"(`HEAD.2: /{head.value}/`) or start the rule with quoted words",
                path=source,
            )


def _holds_keyword(patterns: list[Any]) -> bool:
    """Whether a rule alternative's terminals always put a prefilter word in its line."""
    lead: list[str] = []
    for pattern in patterns:
        if pattern is None or pattern.type != "str":
            break
        lead.append(pattern.value)
    words = [" ".join(lead)] + [
        word
        for pattern in patterns
        if pattern is not None
        for word in ([pattern.value] if pattern.type == "str" else literal_runs(pattern.value))
    ]
    return any(len(word) >= 4 for word in words)


def _first_token(lark: Any, sample: str) -> str | None:
    """The terminal Lark's lexer reads first at the start of a message `sample` (`?` when it
    reads none)."""
    try:
        token = next(lark.parse_interactive(sample).iter_parse(), None)
    except Exception:  # the lexer found no terminal at all there
        return "no terminal"
    return None if token is None else str(token.type)


def _refuse_backtracking(
    parser: Any, base: LineGrammar, extras: list[tuple[Path, str]], where: str
) -> None:
    """An extension's regexp terminal that could backtrack catastrophically is a config error
    (F22): Python's re cannot be stopped mid-match, so it never reaches a log line."""
    if base._lark is None:  # the packaged grammar ran from its shape store so far
        base._build()
    terminals = base._lark.terminals
    packaged = {t.pattern.to_regexp() for t in terminals if t.pattern.type == "re"}
    for terminal in parser.terminals:
        pattern = terminal.pattern
        if pattern.type != "re" or pattern.to_regexp() in packaged:
            continue
        problem = backtracking_problem(pattern.to_regexp())
        if problem is None:
            continue
        source = next((str(p) for p, text in extras if f"/{pattern.value}/" in text), where)
        raise ConfigError(
            f"regexp /{pattern.value}/ could backtrack catastrophically: it has {problem}; "
            "rewrite it so each character has one way to match",
            path=source,
        )


def _from_cache(lark: Any, text: str) -> Any:
    tables = load_tables(text, lark.__version__)
    if tables is None:
        return None
    try:
        return lark.Lark.load(tables)  # a dict is loaded as is (no unpickling)
    except Exception:  # anything wrong with the file: rebuild
        return None


def _tables(parser: Any) -> dict[str, Any]:
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = parser.memo_serialize([TerminalDef, Rule])
    return {"data": data, "memo": memo}


def example_mismatches(grammar: LineGrammar) -> list[str]:
    """The packaged example lines this grammar does not parse as they must (empty: all hold)."""
    from memledger.sglang.examples import EXAMPLES  # only when a grammar is built

    wrong: list[str] = []
    for example in EXAMPLES:
        parsed = grammar.parse(example.message)
        if (
            parsed is None
            or parsed.kind is not example.kind
            or parsed.problems
            or {key: size.text for key, size in parsed.sizes.items()} != example.sizes
            or any(parsed.values.get(k, _ABSENT) != v for k, v in example.values.items())
        ):
            wrong.append(example.message)
    return wrong


_ABSENT = object()


def _described(parsed: LineParse | None) -> str:
    if parsed is None:
        return "not recognised"
    name = f"{parsed.kind}__{parsed.variant}" if parsed.variant else str(parsed.kind)
    return f"{name} with sizes {sorted(parsed.sizes)} and values {sorted(parsed.values)}"


def _changed_examples(base: LineGrammar, extended: LineGrammar) -> str:
    """The first example line the extension parses differently, described; empty if none.
    (At run time the packaged grammar wins for its lines anyway; this tells the author early.)"""
    from memledger.sglang.examples import EXAMPLES

    for example in EXAMPLES:
        before, after = base.parse(example.message), extended._own_parse(example.message)
        if before != after:
            return f"{example.message!r} was {_described(before)}, becomes {_described(after)}"
    return ""


@lru_cache(maxsize=8)
def _cached_grammar(extra: tuple[str, ...]) -> LineGrammar:
    return LineGrammar([Path(p) for p in extra])


def load_grammar(extra_grammars: Sequence[Path] = ()) -> LineGrammar:
    """The grammar for these extensions, built once per process."""
    key = tuple(str(Path(p).resolve()) for p in extra_grammars)
    for p in extra_grammars:
        if not Path(p).is_file():
            raise ConfigError("grammar file not found", path=str(p))
    return _cached_grammar(key)


@lru_cache(maxsize=1024)  # a grammar has a few hundred rule names; asked once a line
def _kind_of(rule_name: str) -> EventKind | None:
    base = rule_name.split("__", 1)[0]
    try:
        return EventKind(base)
    except ValueError:
        return None


__all__ = [
    "LineGrammar",
    "base_grammar_text",
    "example_mismatches",
    "grammar_dir",
    "load_grammar",
]
