"""The example budgets (the CI recipe itself: tests/test_ci_recipe.py)."""

from __future__ import annotations

from memledger.budget import load_budget
from tests.conftest import PROJECT_ROOT, SAMPLES

EXAMPLE_BUDGET = PROJECT_ROOT / "examples" / "memledger.toml"
DP16 = SAMPLES / "dp16.log"
DP2 = SAMPLES / "dp2.log"
BUDGET = SAMPLES / "budget.toml"


def test_example_budget_loads() -> None:
    budget = load_budget(EXAMPLE_BUDGET)
    assert [entry.item for entry in budget.entries] == [
        "kv_tokens_per_instance",
        "runtime_headroom",
        "cuda_graph",
        "weight_staging",
        "fixed_overhead",
        "req_to_token",
    ]
    assert all(entry.message for entry in budget.entries)  # the [defaults] message fills in
