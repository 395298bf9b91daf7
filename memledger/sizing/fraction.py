"""The mem_fraction_static SGLang sized with, from the one it was given or chose (pure).

server_args prints the value ServerArgs ends with; three adjustments happen elsewhere or are
printed on their own line (rules of memledger.sglang.sizing_rules):
* mfs_multimodal_runner (0.3.0 - 0.4.8): ModelRunner scales a multimodal model's value after
  server_args is printed, and from 0.4.2 prints the result;
* mfs_aiter_runner (0.4.9 - 0.5.4): ModelRunner scales it by 0.85 for aiter attention with a
  context over 8,192 tokens, after server_args, printing nothing;
* mfs_aiter_args (0.5.5+): the same factor inside ServerArgs, so the printed value has it, and a
  what-if value (a flag the user would pass) gets it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memledger.record import record
from memledger.sglang.fraction_rules import (
    MFS_AITER_FACTOR,
    MFS_AITER_MIN_CONTEXT,
    MFS_PRINTED_HALF_ULP,
    MFS_RUNNER_FACTORS,
)
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.sizing_rules import RULE
from memledger.units import float_or


@record
class PrintedFraction:
    """A mem_fraction_static line of the log other than server_args."""

    line: int
    value: float | None
    """The value printed (None: the 0.3.0 - 0.4.0 line names the reduction only)."""
    before: float | None = None
    """0.4.10's `from:` value (the default before the ViT factor)."""
    shape: str
    """`runner` (ModelRunner's multimodal reduction) or `vlm` (0.4.10's ViT adjustment)."""


@dataclass
class UsedFraction:
    """The fraction SGLang sized with, and how it was reached from the setting."""

    value: float
    kind: str
    """`measured` (printed on its own line), or the setting's kind when unchanged."""
    source: str
    rule: str | None = None
    half_ulp: float = 0.0
    notes: list[str] = field(default_factory=list)


def runner_factor(version: VersionRange, printed: float | None, setting: float | None) -> float:
    """Rule mfs_multimodal_runner's factor at this release range (0.95 or 0.90); where the range
    spans both, the one the printed value and the setting imply."""
    factors = {
        factor for releases, factor in MFS_RUNNER_FACTORS if version.within(releases) is not False
    }
    if len(factors) == 1:
        return factors.pop()
    if printed is not None and setting:
        ratio = printed / setting
        return min((f for _, f in MFS_RUNNER_FACTORS), key=lambda f: abs(f - ratio))
    return MFS_RUNNER_FACTORS[0][1]


def _aiter_applies(knobs: dict[str, object], context_len: int | None) -> bool:
    return knobs.get("attention_backend") == "aiter" and (context_len or 0) > MFS_AITER_MIN_CONTEXT


def used_fraction(
    version: VersionRange,
    knobs: dict[str, object],
    printed: PrintedFraction | None,
    setting: float,
    *,
    own: bool,
    context_len: int | None,
    base_context_len: int | None,
    inferred: bool,
) -> UsedFraction | None:
    """What SGLang sized with when the setting is `setting` (`own`: the log's own value, as
    server_args printed it or as its default was inferred); None: the setting itself."""
    notes: list[str] = []
    runner = RULE["mfs_multimodal_runner"]
    if printed is not None and printed.shape == "runner":
        if own and printed.value is not None:
            return UsedFraction(
                printed.value,
                "measured",
                f"line {printed.line} (ModelRunner's multimodal reduction, to 3 places; "
                f"{runner.source})",
                "mfs_multimodal_runner",
                MFS_PRINTED_HALF_ULP,
            )
        base = knobs.get("mem_fraction_static")
        given = float_or(base, None)
        factor = runner_factor(version, printed.value, given)
        return UsedFraction(
            round(setting * factor, 6),
            "modelled",
            f"{setting:g} x {factor:g}: ModelRunner's multimodal reduction (line {printed.line}; "
            f"{runner.source})",
            "mfs_multimodal_runner",
        )
    now = MFS_AITER_FACTOR if _aiter_applies(knobs, context_len) else 1.0
    then = MFS_AITER_FACTOR if _aiter_applies(knobs, base_context_len) else 1.0
    if now == then == 1.0:
        return None
    before, after = RULE["mfs_aiter_runner"], RULE["mfs_aiter_args"]
    older = version.within(before)
    if older is None and version.within(after) is None:
        notes.append(
            f"release {version.text} may scale mem_fraction_static by 0.85 for aiter attention "
            "after server_args is printed (0.4.9 - 0.5.4, rule mfs_aiter_runner) or before "
            "(0.5.5+, rule mfs_aiter_args); the newer rule applied"
        )
        older = False
    if older is False and version.within(after) is False:
        return None
    if older:
        factor, rule = now, before
    else:
        # 0.5.5+: a printed value already holds the factor of its own context length
        factor, rule = (now / then, after) if own and not inferred else (now, after)
    if factor == 1.0:
        return None
    context = f"context {context_len:,}" if context_len else "context"
    return UsedFraction(
        round(setting * factor, 6),
        "modelled",
        f"{setting:g} x {factor:.4g}: aiter attention, {context} vs 8,192 ({rule.source})",
        rule.id,
        notes=notes,
    )
