"""The weights a rank holds, estimated from the model's name when the paste prints no weight size:
parameters (the name's count) x bytes a parameter (the format `--quantization`, the name or the
model catalogue spells) / (tp x pp), against the card's capacity; and, where they do not fit,
the smallest --tp-size that does, with the arithmetic (memledger.sglang.weight_bytes)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from memledger.model.events import Event
from memledger.model_catalogue import match
from memledger.sglang.levers import Lever
from memledger.sglang.weight_bytes import (
    ACTIVE_ONLY,
    COUNT,
    COUNT_UNITS,
    NAMED_FAMILIES,
    UNNAMED_WIDTH,
    WIDTHS,
    NamedFamily,
    Width,
)
from memledger.units import GIB

TP_RAISE = Lever("tp_size", "raise", "each rank holds about 1/tp of the weights")
OFFLOAD = Lever(
    "cpu_offload_gb",
    "raise",
    "that many GiB of each rank's weights stay in host RAM (v0.5.8 utils/offloader.py:65-67: "
    "--cpu-offload-gb x 1024**3 bytes a rank)",
)
ESTIMATED = "the weights a rank, estimated from the model's name,"
"""How the estimate's finding opens (the verdict quotes it to its first colon)."""
_LARGEST_TP = 64
"""No tensor-parallel size above this is suggested (a node holds 8 GPUs; 64 spans 8 nodes)."""


@dataclass(frozen=True)
class NamedWeights:
    """The estimate, its arithmetic in words, and what fits."""

    per_rank: int
    """Bytes of weights a rank holds at the paste's tp x pp."""
    budget: int
    """What the weights must stay under: the card, or mfs x the card when the fraction is known."""
    capacity: int
    """The card's bytes: weights above it fail while loading, whatever the fraction."""
    says: str
    """The arithmetic, from the name to the rank's bytes against the card."""
    tp: int | None
    """The smallest power-of-two --tp-size whose share stays under `budget` (None: none up to 64
    does, or it is not above the paste's)."""
    tp_says: str

    @property
    def over(self) -> bool:
        return self.per_rank > self.budget

    @property
    def levers(self) -> list[tuple[Lever, int | None, str]]:
        """Each lever that fits the weights, with its value and why: --tp-size, and
        --cpu-offload-gb, the GiB a rank over the budget, rounded up."""
        over = self.per_rank - self.budget
        off = (
            f"{self.per_rank / GIB:.2f} GiB - {self.budget / GIB:.2f} GiB = {over / GIB:.2f} GiB "
            f"a rank: {OFFLOAD.effect}, rounded up; slower, every step reads them"
        )
        return [(TP_RAISE, self.tp, self.tp_says), (OFFLOAD, math.ceil(over / GIB), off)]


def _width(name: str, quantization: object) -> tuple[float, str]:
    """Bytes a parameter and where that came from."""
    if isinstance(quantization, str) and quantization:
        for width in WIDTHS:
            if width.regex.fullmatch(quantization):
                return width.bytes_per_param, _said(width, f"--quantization {quantization}")
    for width in WIDTHS:
        found = width.regex.search(name)
        if found is not None:
            return width.bytes_per_param, _said(width, f"{found[0]!r} in the name")
    entry = match(name)
    config = entry.entry.config if entry is not None else {}
    quant = (config.get("quantization_config") or {}).get("quant_method")
    dtype = config.get("torch_dtype")
    for spelled in (str(quant), str(dtype)):
        for width in WIDTHS:
            if width.regex.fullmatch(spelled):
                return width.bytes_per_param, _said(width, f"{spelled} in its catalogue entry")
    family = _family(name)
    own = [w for w in WIDTHS if family is not None and w.name == family.width]
    if family is not None and own:
        return own[0].bytes_per_param, _said(own[0], f"{family.name}'s own checkpoint")
    return UNNAMED_WIDTH, f"{UNNAMED_WIDTH:g} B a parameter (16-bit assumed: no format named)"


def _family(name: str) -> NamedFamily | None:
    """The well-known family a name without a count belongs to (weight_bytes.NAMED_FAMILIES)."""
    last = name.strip().rstrip("/").rsplit("/", 1)[-1]
    return next((f for f in NAMED_FAMILIES if f.regex.search(last)), None)


def _said(width: Width, where: str) -> str:
    return f"{width.bytes_per_param:g} B a parameter ({width.name}: {where}; {width.source})"


def _count(name: str) -> tuple[float, str] | None:
    """The largest parameter count the name's last part spells, and how it reads."""
    last = name.strip().rstrip("/").rsplit("/", 1)[-1]
    if ACTIVE_ONLY.search(last):
        return None
    counts = []
    for found in COUNT.finditer(last):
        each = float(found["count"]) * COUNT_UNITS[found["unit"].lower()]
        experts = int(found["experts"]) if found["experts"] else 1
        bound = " (experts x each: an upper bound, they share the attention)" if experts > 1 else ""
        counts.append((each * experts, f"{found[0]!r} in {last!r}{bound}"))
    family = _family(name) if not counts else None
    if family is not None:  # a well-known family whose name spells no count: its model card's
        said = f"a {family.name} model's, whose names spell no count: {family.architecture}, "
        said += family.source
        counts.append((family.params, said))
    return max(counts) if counts else None


def named_weights(
    settings: Mapping[str, object], tp: int | None, oom: Event | None, fraction: float | None
) -> NamedWeights | None:
    """`estimate` on the card an OOM text's capacity gives (None without one)."""
    size = oom.sizes.get("capacity") if oom is not None else None
    return estimate(settings, tp, size.bytes, fraction) if size is not None else None


def estimate(
    settings: Mapping[str, object], tp: int | None, capacity: int, fraction: float | None
) -> NamedWeights | None:
    """The estimate for the settings' `model_path` (a path or repo id; `quantization`, `pp_size`
    read too) on a card of `capacity` bytes, None when the name spells no parameter count;
    `fraction` makes the budget mfs x the card (None: the card)."""
    model, quantization, pp = (settings.get(k) for k in ("model_path", "quantization", "pp_size"))
    pp = pp if isinstance(pp, int) else None
    card = f"the GPU's {capacity / GIB:.2f} GiB (the OOM text's capacity)"
    if not isinstance(model, str) or capacity <= 0:
        return None
    count = _count(model)
    if count is None:
        return None
    params, read = count
    width, width_says = _width(model, quantization)
    total = params * width
    ranks = (tp or 1) * (pp or 1)
    per_rank = round(total / ranks)
    split = f"tp {tp or 1}" + (f" x pp {pp}" if pp and pp > 1 else "")
    split += "" if tp else " (assumed: no --tp-size shown)"
    budget = max(1, round(capacity * fraction)) if fraction else capacity  # a byte: no 0 divisor
    share = f"--mem-fraction-static {fraction:g} x " if fraction else ""
    relation = f"{abs(per_rank - budget) / GIB:.2f} GiB {'over' if per_rank > budget else 'under'}"
    says = (
        f"{ESTIMATED} are {per_rank / GIB:.2f} GiB at {split}, {relation} {share}{card}"
        f"{f' = {budget / GIB:.2f} GiB, the weights and KV pool share' if fraction else ''}: "
        f"{params / 1e9:,.1f}B parameters ({read}) x {width_says} = {total / GIB:.2f} GiB"
    )
    stage = total / (pp or 1)
    fits = 1 << max(0, math.ceil(stage / budget) - 1).bit_length()
    tp_says = (
        f"{stage / GIB:.2f} GiB{' a pipeline stage' if pp and pp > 1 else ''} / "
        f"{budget / GIB:.2f} GiB = {stage / budget:.2f} ranks -> tp {fits} (a power of two) holds "
        f"{stage / fits / GIB:.2f} GiB a rank (an estimate from the name)"
    )
    below = stage / max(1, fits // 2)
    if fraction and fits > 1 and below < capacity:  # the tp below fits the card, not the share
        tp_says += (
            f"; tp {fits // 2} holds {below / GIB:.2f} GiB, under the card but over the share: "
            f"with tp {fits // 2} the fraction must exceed {below / GIB:.2f} / "
            f"{capacity / GIB:.2f} = {below / capacity:.2f}"
        )
    value = fits if fits <= _LARGEST_TP and fits > (tp or 1) else None
    return NamedWeights(per_rank, budget, capacity, says, value, tp_says)
