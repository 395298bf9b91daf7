"""The diff's explanation of a KV-token change (an upgrade, or other server_args): verdict,
input shares, rows sized before the pool, and the defaults crossed. Renderers return strings."""

from __future__ import annotations

from memledger.compare.upgrade_models import InputShare, UpgradeExplanation
from memledger.render.tables import Table
from memledger.sglang.default_changes import CHANGE
from memledger.units import GIB

UNEXPLAINED = "unexplained (the model's misses on the two logs)"
VERDICT_INPUTS = 3
"""Input shares the verdict line names (the table lists them all)."""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f} %"


def _citation(share: InputShare) -> str:
    """The newest crossed default behind a share, as `vX file:line`."""
    if not share.defaults:
        return ""
    newest = CHANGE[share.defaults[-1]]
    return f" ({newest.new_source.split(';')[0]})"


VALUES_IN_VERDICT = frozenset({"mem_fraction_static", "bytes_per_token", "release_rules"})
"""Inputs short enough to show their two values in the verdict line."""


def _share_text(share: InputShare) -> str:
    what = share.label
    if share.id in VALUES_IN_VERDICT:
        what += f" {share.base} -> {share.head}"
    if share.why.startswith("SGLang's default"):
        what += " default"
    return f"{_pct(share.pct)} from {what}{_citation(share)}"


def verdict(upgrade: UpgradeExplanation) -> str:
    """One line: the token change, its largest shares, the unexplained remainder."""
    if upgrade.delta_tokens is None:
        return "KV tokens per rank: not on both sides (no explanation of the pool)"
    head = f"KV tokens per rank {_pct(upgrade.delta_pct)} ({upgrade.delta_tokens:+,})"
    if not upgrade.available:
        return f"{head}: not attributed ({upgrade.reason})"
    shares = [s for s in upgrade.inputs if s.tokens][:VERDICT_INPUTS]
    parts = [_share_text(s) for s in shares]
    rest = len([s for s in upgrade.inputs if s.tokens]) - len(shares)
    if rest > 0:
        parts.append(f"{rest} more input{'s' if rest > 1 else ''}")
    parts.append(f"{_pct(upgrade.unexplained_pct)} unexplained")
    return f"{head}: " + ", ".join(parts)


def releases_line(upgrade: UpgradeExplanation) -> str:
    def side(name: str, text: str, given: bool) -> str:
        return f"{name} {text}" + (" (given)" if given else " (from its line formats)")

    base, head = upgrade.base_release, upgrade.head_release
    line = "SGLang release: " + side("base", base.text, base.given) + ", "
    line += side("head", head.text, head.given)
    if upgrade.gpu_memory_mib is not None:
        line += f"; GPU {upgrade.gpu_memory_mib:,} MiB (given)"
    return line


def inputs_table(upgrade: UpgradeExplanation) -> Table:
    """Each differing input, its values and its token share; the remainder as a named row."""
    rows = [[s.label, s.base, s.head, f"{s.tokens:+,}", _pct(s.pct)] for s in upgrade.inputs]
    if upgrade.unexplained_tokens is not None:
        rows.append(
            [UNEXPLAINED, "", "", f"{upgrade.unexplained_tokens:+,}", _pct(upgrade.unexplained_pct)]
        )
    if upgrade.delta_tokens is not None and upgrade.available:
        rows.append(
            ["KV tokens per rank, logged", f"{upgrade.base_tokens:,}", f"{upgrade.head_tokens:,}"]
            + [f"{upgrade.delta_tokens:+,}", _pct(upgrade.delta_pct)]
        )
    return Table(
        ["input", "base", "head", "tokens", "Δ%"],
        rows,
        align=["left", "right", "right", "right", "right"],
    )


def why_lines(upgrade: UpgradeExplanation) -> list[str]:
    """Where each non-measured difference comes from (a default, server_args, the rules)."""
    return [
        f"{s.label}: {s.why}" + (f" [{', '.join(s.defaults)}]" if s.defaults else "")
        for s in upgrade.inputs
        if s.why != "measured on each log"
    ]


def default_lines(upgrade: UpgradeExplanation) -> list[str]:
    """The crossed defaults, two lines each (the table is too wide for a terminal)."""
    lines = []
    for c in upgrade.defaults_crossed:
        mark = "" if c.certain else " ?"
        lines.append(f"{c.release}{mark} {c.setting} [{c.id}]: {c.old} -> {c.new}")
        lines.append(f"    {c.old_source} -> {c.new_source}")
    return lines


def rows_table(upgrade: UpgradeExplanation) -> Table:
    rows = [
        [
            r.id,
            "before the weights (P)" if r.phase == "before_weights" else "the load (P - A)",
            f"{r.delta_bytes / GIB:+.2f}",
            "-" if r.tokens_equivalent is None else f"{r.tokens_equivalent:+,}",
        ]
        for r in upgrade.rows_before_sizing
    ]
    return Table(
        ["row", "moves", "Δ GiB", "≈ tokens at base's bytes/token"],
        rows,
        align=["left", "left", "right", "right"],
        code=(0,),
    )


def defaults_table(upgrade: UpgradeExplanation) -> Table:
    rows = [
        [
            c.release + ("" if c.certain else " ?"),
            c.setting,
            c.old,
            c.new,
            f"{c.old_source} -> {c.new_source}",
        ]
        for c in upgrade.defaults_crossed
    ]
    return Table(
        ["release", "default", "old", "new", "source (old -> new)"],
        rows,
        align=["left", "left", "left", "left", "left"],
    )


def notes(upgrade: UpgradeExplanation) -> list[str]:
    found = list(upgrade.notes)
    if upgrade.available and upgrade.base_predicted is not None:
        found.append(
            "token shares: SGLang's arithmetic (memledger.sizing) with each of base's inputs "
            "replaced by head's, averaged over every order (they add up to the modelled "
            f"{(upgrade.head_predicted or 0) - upgrade.base_predicted:+,})"
        )
    if upgrade.rows_before_sizing:
        found.append(
            "rows before the KV sizing change the free memory SGLang sized from (A); rows "
            "after it (CUDA graphs, headroom) come out of the slack and move no token"
        )
    if any(not c.certain for c in upgrade.defaults_crossed):
        found.append("`?`: the line formats leave open whether the change lies between the two")
    return found
