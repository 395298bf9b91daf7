"""The tables of what diagnose says (memledger.sglang.findings, memledger.vllm.findings): one row a
wording, of a finding id the JSON knows (or a lever's knob and direction), every field of its
words filled by the rule that says it, its source cited."""

from __future__ import annotations

import re
import string
from pathlib import Path

import memledger.diagnosis
from memledger.diagnosis.model import Direction, FindingId, Severity
from memledger.sglang.findings import ADVICE, ADVISED, SAID, SAYINGS, Advice, Said
from memledger.vllm.findings import VLLM_SAID, VLLM_SAYINGS

ROWS: tuple[Said | Advice, ...] = (*SAYINGS, *VLLM_SAYINGS, *ADVICE)
CITES = re.compile(
    r"v\d+\.\d+\.\d+(?:\.post\d+)? \S+\.py:\d+|https://\S+|(sglang|vllm)#\d+|PR #\d+|docs/\S+\.md"
)
RULES = "".join(p.read_text() for p in Path(memledger.diagnosis.__file__).parent.glob("*.py"))


class _Number:
    """Any field: formats under any spec, has any attribute."""

    def __format__(self, spec: str) -> str:
        return "<n>"

    def __getattr__(self, name: str) -> _Number:
        return self


def _fields(text: str) -> set[str]:
    return {f.split(".")[0] for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_row_is_one_wording_of_a_known_finding_or_lever() -> None:
    assert len(SAID) + len(VLLM_SAID) + len(ADVISED) == len(ROWS), "one row a name"
    ids = {member.value for member in FindingId}
    for row in ROWS:
        assert re.fullmatch(r"[a-z_]+(\.[a-z_]+)?", row.name), row.name
        if isinstance(row, Said):
            assert row.finding_id in ids, row.name
            assert Severity(row.severity)
        else:
            assert Direction(row.direction)


def test_every_row_fills_its_fields_and_cites_its_source() -> None:
    for row in ROWS:
        fields = _fields(row.text) - {"source"}
        words = row.words(**{name: _Number() for name in fields})
        assert "{" not in words and "}" not in words, row.name
        assert ("{source}" in row.text) == bool(row.source), row.name
        assert not row.source or CITES.search(row.source), row.name


def test_every_row_is_said_by_a_rule() -> None:
    # a row no rule of memledger.diagnosis names is words nothing says
    unsaid = [row.name for row in ROWS if f'"{row.name}"' not in RULES]
    assert not unsaid
