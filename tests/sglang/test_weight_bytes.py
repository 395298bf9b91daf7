"""The tables of memledger.sglang.weight_bytes, each row checked by one function."""

from __future__ import annotations

import pytest

from memledger.sglang.weight_bytes import COUNT, NAMED_FAMILIES, WIDTHS, NamedFamily


@pytest.mark.parametrize("family", NAMED_FAMILIES, ids=lambda f: f.name)
def test_every_named_family_row(family: NamedFamily) -> None:
    # it cites a model card (a URL, or a repository at a commit) and states what the count is
    assert "https://" in family.source or "@" in family.source
    assert "total" in family.architecture and family.params >= 1e9
    # its format is one the widths table knows (None: 16-bit)
    assert family.width is None or family.width in {w.name for w in WIDTHS}
    # its own name, as a repo id and a local folder, is matched; a count-bearing name is COUNT's
    spelled = family.name.split(" / ")[0].replace(" ", "-")
    assert family.regex.search(spelled) and family.regex.search(f"{spelled}-Instruct")
    assert COUNT.search(spelled) is None


def test_the_families_do_not_overlap() -> None:
    for family in NAMED_FAMILIES:
        spelled = family.name.split(" / ")[0].replace(" ", "-")
        assert [f.name for f in NAMED_FAMILIES if f.regex.search(spelled)] == [family.name]
