"""Request slots and state slots on the hybrid (Mamba/GDN) real logs: SGLang sizes the request
table and the Mamba pool apart, so one is never given as the other."""

from __future__ import annotations

import pytest

from memledger.model.ledger import RowGroup
from memledger.render.brief import pool_line
from tests.conftest import SAMPLES, ledger_for


def test_unknown_request_slots_are_not_taken_from_the_mamba_line() -> None:
    # single/013 (bench_one_batch, no server_args, no summary): max_mamba_cache_size 38. SGLang
    # runs at most max_mamba_cache_size // ratio requests (v0.5.8 model_runner_kv_cache_mixin.py
    # :268-281: ratio 3 with the radix cache, 1 without), so the table has 12 or 38 rows, not the
    # Mamba pool's 39 slots; the ledger says it does not know.
    found = ledger_for("single/013")
    assert found.summary.slots is None
    table = found.row("req_to_token")
    assert table is not None and table.bytes is None
    mamba = sum(r.bytes or 0 for r in found.rows if r.id.startswith("mamba_"))
    assert found.summary.state_per_slot == round(mamba / 39)
    line = pool_line(found)
    assert line is not None and "request slots" not in line
    assert "GiB of state per Mamba slot (39 slots)" in line


@pytest.mark.parametrize(
    ("name", "requests", "mamba_slots"),
    [("single/010", 9, 1369), ("complex/009", 14, 41), ("complex/006", 17, 1522)],
)
def test_state_per_slot_is_per_mamba_slot_not_per_request(
    name: str, requests: int, mamba_slots: int
) -> None:
    found = ledger_for(name)
    assert found.summary.slots == requests
    state = sum(
        r.bytes or 0
        for r in found.rows
        if r.group is RowGroup.STATE_POOL and r.id.startswith("mamba_")
    )
    per_slot = found.summary.state_per_slot
    assert per_slot is not None and abs(per_slot * mamba_slots - state) <= mamba_slots
    line = " ".join((pool_line(found) or "").split())
    assert f"{requests} request slots;" in line and f"{requests} request slots x" not in line
    assert f"GiB of state per Mamba slot ({mamba_slots:,} slots)" in line


def test_a_pool_whose_slots_are_the_request_slots_keeps_the_product() -> None:
    # The DP16 sample's KDA state has 33 slots, the request table's 33 rows (24 + 8 + 1).
    found = ledger_for(SAMPLES / "dp16.log")
    line = " ".join((pool_line(found) or "").split())
    assert "33 request slots x 0.64 GiB of state" in line
