"""Every release-bounded rule of memledger.sglang, whatever its table, against one check: its
`ReleaseRange` and its citation; and the one predicate, `within`."""

from __future__ import annotations

import re

import pytest

from memledger.sglang import (
    backend_defaults,
    default_changes,
    measured_spans,
    release_markers,
    versions,
)
from memledger.sglang.releases import ReleaseRange, known_within, version_code, within
from memledger.sglang.sizing_rules import RULES

CITATION = re.compile(r"v(\d+\.\d+\.\d+)\S* \S+\.py:\d+")
"""`vX path:line`, the path under python/sglang/srt/ of that release's wheel."""

RANGED: list[tuple[str, ReleaseRange, str]] = [
    *((f"sizing {r.id}", r.releases, r.source) for r in RULES),
    *((f"format {m.name}", m.releases, m.source) for m in release_markers.FORMAT_MARKS),
    *((f"engine {r.name}", r.releases, r.source) for r in versions.RULES),
    *((f"default {c.id}", c.releases, c.new_source) for c in default_changes.CHANGES),
    *(
        (f"page size {r.backend} {r.releases.text}", r.releases, r.source)
        for r in backend_defaults.PAGE_SIZE_RULES
    ),
    *(
        (f"attention {a.kind} {a.arch} {a.releases.text}", a.releases, a.source)
        for a in backend_defaults.ATTENTION_DEFAULTS
    ),
    *((f"measured {m.row_id}", m.releases, m.source) for m in measured_spans.MEASURED_SPANS),
]


@pytest.mark.parametrize(("name", "releases", "source"), RANGED, ids=[r[0] for r in RANGED])
def test_every_rule_has_a_range_and_cites_a_release_line(
    name: str, releases: ReleaseRange, source: str
) -> None:
    assert releases.first or releases.last, name
    for bound in (releases.first, releases.last):
        assert bound is None or re.fullmatch(r"\d+\.\d+\.\d+(\.post\d+|rc\d+)?", bound), bound
    assert releases.lo is None or releases.hi is None or releases.lo <= releases.hi
    cited = CITATION.findall(source)
    assert cited, f"{name}: no `vX path:line` in {source!r}"
    # at least one cited line is of a release the rule holds for
    assert any(releases.has(version_code(v)) for v in cited), (name, cited)


def test_names_are_unique_per_table() -> None:
    assert len({r.id for r in RULES}) == len(RULES)
    assert len({m.name for m in release_markers.FORMAT_MARKS}) == len(release_markers.FORMAT_MARKS)
    assert len({r.name for r in versions.RULES}) == len(versions.RULES)


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (5010, 5012, True),  # inside
        (5008, 5009, False),  # below
        (5014, 5020, False),  # above
        (5008, 5012, None),  # straddles the first
        (5012, None, None),  # open above: may pass the last
        (None, None, None),  # unknown
    ],
)
def test_within_is_tri_state(first: int | None, last: int | None, expected: bool | None) -> None:
    assert within(first, last, ReleaseRange("0.5.10", "0.5.13")) is expected


def test_the_engine_view_of_a_release() -> None:
    rule = ReleaseRange(last="0.5.13")
    assert known_within(5002, 5014, rule)  # formats bound it below 0.5.14
    assert not known_within(5002, 0, rule)  # no ceiling: not known
    assert known_within(5021, 0, ReleaseRange("0.5.21"))
    assert not known_within(0, 0, ReleaseRange("0.5.21"))
    assert ReleaseRange("0.4.7.post1").has(version_code("0.4.7"))
    assert ReleaseRange("0.5.3", "0.5.13").text == "0.5.3 .. 0.5.13"
