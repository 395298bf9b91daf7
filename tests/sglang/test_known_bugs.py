"""The known-defect table (memledger.sglang.known_bugs): every row checked by one function, and
the one reader's answers for a release inside, past and unknown."""

from __future__ import annotations

import re

import pytest

from memledger.sglang.known_bugs import KNOWN_BUGS, SYMPTOMS, KnownBug, bug_words, known_bug
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.releases import version_code

CITATION = re.compile(r"v\d+\.\d+\.\d+(?:\.post\d+)? [\w/]+\.py:\d+")


@pytest.mark.parametrize("bug", KNOWN_BUGS, ids=lambda bug: bug.name)
def test_every_known_bug_is_one_checked_row(bug: KnownBug) -> None:
    assert bug.symptom in SYMPTOMS
    assert [b.name for b in KNOWN_BUGS].count(bug.name) == 1
    last = bug.releases.hi
    assert last is not None and last <= version_code(bug.fixed_in)  # it ends where it is fixed
    assert CITATION.search(bug.cause), bug.cause  # read in the engine's source at a release
    assert re.search(r"sglang(?:#| PRs? #)\d+", bug.fix + bug.cause)
    inside = VersionRange(first=last, last=last)
    settings = {key: values[0] for key, values, _ in bug.settings}
    found = known_bug(bug.symptom, inside, settings)
    assert found is not None and found[0] is bug
    past = version_code(bug.fixed_in) + 1
    assert known_bug(bug.symptom, VersionRange(first=past, last=past), settings) is None
    for key, _, unset in bug.settings:  # a setting the log does not show is a condition
        found = known_bug(bug.symptom, inside, {k: v for k, v in settings.items() if k != key})
        assert found is not None and unset in found[1]
        assert known_bug(bug.symptom, inside, {**settings, key: "another"}) is None


def test_a_log_that_does_not_date_itself_gets_the_release_as_a_condition() -> None:
    (bug,) = [b for b in KNOWN_BUGS if b.symptom == "pool_not_full"]
    found = known_bug("pool_not_full", None, {})
    assert found is not None and found[1] == "the release is before 0.4.5 (this log's: unknown)"
    assert bug_words(*found).startswith("if the release is before 0.4.5")
    dated = known_bug("pool_not_full", VersionRange(first=4004, last=4004), {})
    assert dated is not None and dated[1] == "" and bug_words(*dated).startswith("that is ")


def test_a_fix_in_a_post_release_leaves_its_base_release_conditional() -> None:
    # 0.4.10.post2 fixed FA3's page tables; a version code cannot tell it from 0.4.10
    found = known_bug(
        "graphs_over_plan", VersionRange(first=4010, last=4010), {"attention_backend": "fa3"}
    )
    assert found is not None and "before 0.4.10.post2 (this log's: 0.4.10)" in found[1]
