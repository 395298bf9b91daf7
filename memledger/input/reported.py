"""What a reporter typed around a paste, read from a bare prose line as typed events: a setting
named in words and the values typed after it (`when setting --mem-fraction-static to 0.85, I get
a CUDA out of memory error. However, if I set it to 0.84 ...`, `mem-fraction-static must > 0.92`),
what the clause says happened at each value (an OOM, a failure to start, that it worked), and the
things a sentence names that place or explain a failure (speculative decoding, logprobs, another
process holding the GPU, the server serving requests).

The words are the table's (memledger.sglang.errors, family `reporter`, kind `reported`); this
module only walks a line: each setting's mention, then its numbers up to the next mention, each
with the relation before it and its clause's outcome (memledger.sglang.errors.SAID_OUTCOMES). The
diagnosis reads the events, never the prose.
"""

from __future__ import annotations

import re

from memledger.model.events import EventKind, Value
from memledger.sglang.errors import SAID_OUTCOMES, ErrorText, of_kind

_ENTRIES = of_kind(EventKind.REPORTED)
_FRACTION_RE = re.compile(r"(?<![\w.])(0?\.\d{1,3}|1\.0)(?![\w.]|\.\d)")
_SIZE_RE = re.compile(r"(?<![\w.])(\d{1,5}(?:\.\d+)?) ?(TB|TiB|Ti|T|GB|GiB|Gi|G)\b", re.I)
_COUNT_RE = re.compile(r"(?<![\w.-])(\d{1,7})(\s?[kK])?(?![\w.])")
_RELATION_RE = re.compile(
    r"(<=|>=|≤|≥|<|>|\babove\b|\bbelow\b|\bover\b|\bunder\b|at least|at most|more than|"
    r"less than|higher than|lower than|greater than|smaller than)",
    re.I,
)
_RELATIONS = {
    "<=": "<",
    "≤": "<",
    "below": "<",
    "under": "<",
    "at most": "<",
    "less than": "<",
    "lower than": "<",
    "smaller than": "<",
    ">=": ">",
    "≥": ">",
    "above": ">",
    "over": ">",
    "at least": ">",
    "more than": ">",
    "higher than": ">",
    "greater than": ">",
}
_CLAUSE_END_RE = re.compile(r"[.;!?](?:\s|$)|\bhowever\b|\bbut\b|\bwhile\b|\bwhereas\b", re.I)
REACH = 160
"""Characters after a setting's name its values are looked for in (a sentence's span)."""


def _said(clause: str) -> str:
    return next((said for said, pattern in SAID_OUTCOMES if pattern.search(clause)), "")


def _clause(text: str, start: int, end: int) -> str:
    """The clause around text[start:end]: from the last clause end before it to the next after."""
    before = [m.end() for m in _CLAUSE_END_RE.finditer(text, 0, start)]
    after = _CLAUSE_END_RE.search(text, end)
    return text[before[-1] if before else 0 : after.start() if after else len(text)]


def _values(entry: ErrorText, text: str, start: int, stop: int) -> list[dict[str, Value]]:
    """The values typed for the setting named at `start`, up to `stop`."""
    knob = str(entry.values["knob"])
    fraction = knob == "mem_fraction_static"
    found: list[dict[str, Value]] = []
    if knob.endswith("_gb"):  # a size: after the name (`Mem: 256GB`) or just before (`256GB RAM`)
        before = text[start - 3 : start].lower() == "ram"  # `256 GB RAM`, not `40 GB host memory`
        size = _SIZE_RE.search(text, start, stop) or (
            _SIZE_RE.search(text, max(0, start - 20)) if before else None
        )
        if size is None or size.start() >= stop:
            return []
        scale = 1000 if size.group(2).upper().startswith("T") else 1
        return [{"knob": knob, "value": float(size.group(1)) * scale}]
    for match in (_FRACTION_RE if fraction else _COUNT_RE).finditer(text, start, stop):
        if fraction:
            value = float(match.group(1))
        else:
            value = float(match.group(1)) * (1000 if match.group(2) else 1)
        lead = text[max(start, match.start() - 20) : match.start()]
        relation = [m.group(1).lower() for m in _RELATION_RE.finditer(lead)]
        event: dict[str, Value] = {"knob": knob, "value": value}
        if relation:
            event["relation"] = _RELATIONS.get(relation[-1], relation[-1])
        said = _said(_clause(text, match.start(), match.end()))
        if said:
            event["said"] = said
        found.append(event)
    return found


_COMMAND_RE = re.compile(
    r"^[\s$>]*(?:--\w|python|sglang |torchrun)"
    r"|^[\s$>]*`(?:--\w|python|sglang |torchrun)[^`]*`?\s*$"
    r"|launch_server"
)
"""A launch command's line (memledger.input.launch_command reads its settings): not prose. A
command quoted as inline code is one when nothing follows the code (`` `--tp 2` -> OOM `` is a
sentence about a flag). A flag is `--` and its name: `-- The old value ...` is a dash that opens
a sentence."""


def _knob_only(entry: ErrorText) -> bool:
    return "knob" in entry.values and "mention" not in entry.values


def read_reported(text: str) -> list[dict[str, Value]]:
    """The typed settings and mentions of one bare prose line, in the order they appear."""
    if _COMMAND_RE.search(text):
        return []
    named: list[tuple[int, int, ErrorText]] = []
    for entry in _ENTRIES:
        if entry.find(text) is None:
            continue
        named += [(m.start(), m.end(), entry) for m in entry.regex.finditer(text)]
    named.sort(key=lambda item: item[0])
    found: list[dict[str, Value]] = []
    mentioned: set[str] = set()
    for index, (_, end, entry) in enumerate(named):
        mention = entry.values.get("mention")
        if isinstance(mention, str) and mention not in mentioned:
            mentioned.add(mention)
            found.append({"mention": mention})
        if _knob_only(entry):
            stop = named[index + 1][0] if index + 1 < len(named) else len(text)
            found += _values(entry, text, end, min(stop, end + REACH))
    if named and not any(f.get("said") == "oom" for f in found) and _said(text) == "oom":
        unsaid = [f for f in found if "value" in f and "said" not in f]
        if len(unsaid) == 1:
            # one value in a sentence that says it ran out, in another clause (`an OOM while
            # serving, at mem_fraction_static 0.85`): the value it ran out at
            unsaid[0]["said"] = "oom"
        else:
            # a sentence about a setting that says it ran out of memory, at no typed value: the
            # setting's name goes with it (`raising mem_fraction_static gives OOM`)
            knobs = [e.values["knob"] for *_, e in named if _knob_only(e)]
            found.append({"said": "oom", **({"knob": knobs[0]} if knobs else {})})
    return found
