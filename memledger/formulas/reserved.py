"""Row ids a user formula may not take (issue 12, F21).

The engine merges rows of one id in one interval (two all-reduce groups, two KV lines): a user
formula named like a row the engine reads from the log (`kv_pool`) would be added into that
logged row, which still shows only its log line as evidence; one named like a summary figure
(`usable`) would be shadowed by it in budgets. Both are refused when the file is loaded.

The names follow the engine's own ids (engine/lines.py, loads.py, graphs.py, assemble.py,
kv_inferred.py; sglang/rows.py LINE_ROWS; sglang/measured_spans.py MEASURED_SPANS; the capture
prefixes of engine/roles.py `_capture_prefix`). tests/security/test_formulas.py checks that
every row the engine writes on the samples and real logs is covered. The packaged formulas' own
ids (`req_to_token`, ...) stay open: a user file may redefine a packaged formula.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memledger.model.ledger import Summary
from memledger.record import field_names

# `[draft_][phase_][stepN_]`: what engine/roles.py puts before graph, weights and pool ids.
_ROLE_PREFIX = r"(?:draft_)?(?:(?:extend|prefill|piecewise|single_cg|decode|verify)_)?(?:step\d+_)?"
_ENGINE_IDS = (
    "nccl_init",
    "nccl_init_2",
    "weights",
    "weights_load_peak",
    "weights_released",
    "weight_staging",
    "staging",
    "cuda_graph",
    "cuda_graph_static",
    "cuda_graph_largest_bucket",
    "cuda_graph_buckets",
    "runtime_headroom",
    "allocated_before_oom",
    "free_at_stop",
)
# ids with a suffix from the log (a KV line's label, post-capture, VA) or the interval
_ENGINE_FAMILIES = (r"kv_pool(?:_\w+)?", r"draft_kv(?:_\w+)?", r"unexplained\w*")


@lru_cache(maxsize=1)
def _engine_row_id() -> re.Pattern[str]:
    from memledger.sglang.measured_spans import MEASURED_SPANS
    from memledger.sglang.rows import LINE_ROWS

    line_rows = {row.row_id.replace("{draft}", "") for rows in LINE_ROWS.values() for row in rows}
    # measured phase rows, except one standing for a packaged formula (a user may redefine it)
    measured = {entry.row_id for entry in MEASURED_SPANS if entry.stands_for is None}
    names = sorted({*_ENGINE_IDS, *line_rows, *measured}, key=len, reverse=True)
    exact = "|".join(re.escape(name) for name in names)
    return re.compile(rf"{_ROLE_PREFIX}(?:{exact})|{'|'.join(_ENGINE_FAMILIES)}")


def is_engine_row_id(row_id: str) -> bool:
    """True for an id the engine gives a row it reads from a log line or computes itself
    (a residual's `.interval` suffix aside)."""
    return _engine_row_id().fullmatch(row_id.split(".", 1)[0]) is not None


def reserved_reason(formula_id: str) -> str | None:
    """Why a user formula cannot have this id, or None when it can."""
    if is_engine_row_id(formula_id):
        return (
            "is a row memledger reads from the log or computes itself (the formula's bytes "
            "would be merged into it)"
        )
    if formula_id in field_names(Summary):
        return "is a summary figure (budgets and diffs read it by that name)"
    return None
