"""How a diff groups rows: the article's fixed-overhead categories, group labels, and the
display label and unit of every summary figure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memledger.model.ledger import RowGroup


@dataclass(frozen=True)
class Category:
    """A named set of row groups for the fixed-overhead split."""

    id: str
    label: str
    groups: tuple[RowGroup, ...]


STATE_POOL_CATEGORIES: tuple[Category, ...] = (
    Category(
        "graphs_headroom",
        "CUDA graphs + runtime headroom",
        (RowGroup.CUDA_GRAPH, RowGroup.RUNTIME_HEADROOM),
    ),
    Category(
        "dcp_slots_comm_workspace",
        "communication + workspace + unexplained",
        (RowGroup.COMMUNICATION, RowGroup.WORKSPACE, RowGroup.UNEXPLAINED),
    ),
    Category(
        "weights_staging",
        "weights + draft weights + staging",
        (RowGroup.WEIGHTS, RowGroup.WEIGHT_STAGING, RowGroup.DRAFT_WEIGHTS),
    ),
)
"""The article's three-way split of a fixed-overhead difference. Groups not listed (a future
RowGroup) fall into an `other` category so the split still adds up."""

OTHER_CATEGORY_ID = "other"

GROUP_LABELS: dict[RowGroup, str] = {
    RowGroup.WEIGHTS: "weights",
    RowGroup.WEIGHT_STAGING: "weight staging",
    RowGroup.DRAFT_WEIGHTS: "draft weights",
    RowGroup.COMMUNICATION: "communication",
    RowGroup.WORKSPACE: "workspace",
    RowGroup.UNEXPLAINED: "unexplained",
    RowGroup.CUDA_GRAPH: "CUDA graphs",
    RowGroup.RUNTIME_HEADROOM: "runtime headroom",
    RowGroup.STATE_POOL: "state pool",
}


def group_label(group: RowGroup) -> str:
    """Display name of a row group."""
    return GROUP_LABELS.get(group, group.value.replace("_", " "))


SUMMARY_LABELS: dict[str, tuple[str, Literal["GiB", "tokens", "count", "fraction"]]] = {
    "usable": ("usable memory", "GiB"),
    "fixed_overhead": ("fixed overhead", "GiB"),
    "state_pool": ("state pool", "GiB"),
    "kv_pool": ("KV pool", "GiB"),
    "draft_kv": ("draft KV", "GiB"),
    "state_per_slot": ("state per slot", "GiB"),
    "slots": ("slots", "count"),
    "kv_tokens_per_rank": ("KV tokens per rank", "tokens"),
    "kv_tokens_per_dp_group": ("KV tokens per DP group", "tokens"),
    "kv_tokens_per_instance": ("KV tokens per instance", "tokens"),
    "nccl_init": ("NCCL at dist init", "GiB"),
    "weights_load_peak": ("weights: load peak", "GiB"),
    "weights_released": ("weights: released after load", "GiB"),
    "weights_resident": ("weights resident", "GiB"),
    "weight_staging": ("weight staging", "GiB"),
    "draft_weights": ("draft weights", "GiB"),
    "draft_staging": ("draft staging", "GiB"),
    "cuda_graph": ("CUDA graphs", "GiB"),
    "cuda_graph_largest_bucket": ("CUDA graph largest bucket", "GiB"),
    "cuda_graph_static": ("CUDA graph static buffers", "GiB"),
    "workspace": ("workspace + unexplained", "GiB"),
    "runtime_headroom": ("runtime headroom", "GiB"),
    "req_to_token": ("req_to_token", "GiB"),
    "mem_fraction_static": ("mem_fraction_static", "fraction"),
}
"""Display label and unit of every Summary key, in the order diff tables list them."""

DESTINATION_KEYS = (
    "kv_pool",
    "draft_kv",
    "state_per_slot",
    "slots",
    "kv_tokens_per_rank",
    "kv_tokens_per_dp_group",
    "kv_tokens_per_instance",
)
"""Summary keys that say where the state pool goes."""
