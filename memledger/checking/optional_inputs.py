"""Figures that depend on an optional input (`--model-config`): which ledger figures a run
without it computes differently, and how to say so. Pure functions of a ledger.

Without the model's dimensions some formulas cannot be sized (an `unknown` row whose note says
`pass --model-config`); where such a buffer is allocated inside a logged interval, its bytes stay
in the row of that interval (the DeepEP low-latency buffer stays in the first CUDA-graph bucket:
`memledger.sglang.hints.deepep_graph_note`). That row and its group then read larger than the same
startup's with `--model-config`, by the buffer's size (2.67 GiB on samples/dp16.log).
"""

from __future__ import annotations

from typing import NamedTuple

from memledger.model.ledger import Ledger, Row, RowKind

MODEL_CONFIG = "--model-config"


class ModelInputs(NamedTuple):
    """The rows of one ledger whose size needs the model's dimensions: sized (split out of the
    interval they were allocated in) or not (left inside it)."""

    split: frozenset[str]
    unsized: frozenset[str]


def _note(row: Row) -> str:
    return row.evidence.note or ""


def model_inputs(ledger: Ledger) -> ModelInputs:
    """Which model-dimension rows this ledger sized and which it could not."""
    split = frozenset(
        row.id
        for row in ledger.rows
        if row.kind is not RowKind.UNKNOWN
        and row.interval is not None
        and any(name.startswith("model.") for name in row.evidence.inputs)
    )
    unsized = frozenset(
        row.id for row in ledger.rows if row.kind is RowKind.UNKNOWN and MODEL_CONFIG in _note(row)
    )
    return ModelInputs(split, unsized)


def input_dependency(ledger: Ledger, item: str) -> str | None:
    """Why a budget item's figure depends on --model-config in this ledger, or None: the row
    (or group) that still holds a buffer only the model's dimensions would split out."""
    unsized = model_inputs(ledger).unsized
    if not unsized:
        return None
    for row in ledger.rows:
        if row.kind is RowKind.UNKNOWN or MODEL_CONFIG not in _note(row):
            continue
        if item not in (row.id, row.group):
            continue
        inside = sorted(name for name in unsized if name in _note(row)) or sorted(unsized)
        return (
            f"depends on {MODEL_CONFIG}: without it this figure includes {', '.join(inside)} "
            f"(not split out of {row.id}), so it is larger than with it"
        )
    return None


class InputMix:
    """Across a check run's logs: which model-dimension rows were sized and which were not, and
    which budget entries read a figure that depends on --model-config (one log at a time)."""

    def __init__(self, n_entries: int) -> None:
        self.split: set[str] = set()
        self.unsized: set[str] = set()
        self.affected = [False] * n_entries

    def add(self, models: ModelInputs, depends: list[bool]) -> None:
        """One log's model inputs, and for each entry whether one of its checks depends."""
        self.split |= models.split
        self.unsized |= models.unsized
        self.affected = [a or d for a, d in zip(self.affected, depends, strict=True)]

    def warnings(
        self, entries: list[tuple[str, int | None, bool]], baseline: Ledger | None
    ) -> list[str]:
        """One warning per entry (item, line, has a relative limit) whose figures were computed
        with and without --model-config for the same buffer: the logs' among themselves, or the
        baseline's against the logs' for a relative limit."""
        base = (
            model_inputs(baseline)
            if baseline is not None
            else ModelInputs(frozenset(), frozenset())
        )
        found = []
        for (item, line, relative), affected in zip(entries, self.affected, strict=True):
            split, unsized = set(self.split), set(self.unsized)
            if relative and baseline is not None:
                affected = affected or input_dependency(baseline, item) is not None
                split |= base.split
                unsized |= base.unsized
            both = sorted(split & unsized)
            if affected and both:
                where = f" (line {line})" if line is not None else ""
                found.append(
                    f"budget for {item!r}{where} compares figures computed with different "
                    f"inputs: {', '.join(both)} is split out where {MODEL_CONFIG} was given and "
                    f"inside the figure where it was not; pass {MODEL_CONFIG} for every log and "
                    "the baseline"
                )
        return found
