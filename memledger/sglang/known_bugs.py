"""SGLang defects that some releases have and a later one fixed: one `KnownBug` a defect, read by
one function (`known_bug`). Diagnose measures a symptom through the lifecycle model (graphs that
took more than SGLang plans, a pool that raised with room left, ...) and asks this table whether
the log's release and settings may have a defect that explains it; the row's words then say so,
conditionally where the log does not date itself or does not show the setting.

## Adding a defect
One row: the symptom it explains (one of `SYMPTOMS`), the releases that have it, the first that
does not, the settings it needs (each with the words for a log that does not show it), what goes
wrong with `vX path:line` read at a release that has it, the verdict's short words, and the fix
with its source. tests/sglang/test_known_bugs.py checks every row with one function; a test from
synthetic lines in the symptom's shape shows diagnose naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memledger.sglang.release_markers import VersionRange
from memledger.sglang.releases import ReleaseRange, version_code

SYMPTOMS = frozenset({"graphs_over_plan", "pool_not_full"})
"""What diagnose measures and asks this table about: `graphs_over_plan`, CUDA graphs that took
more than SGLang's default plans for them; `pool_not_full`, SGLang's KV pool raised 'out of
memory' with more tokens free than asked."""


@dataclass(frozen=True)
class KnownBug:
    name: str
    symptom: str
    releases: ReleaseRange
    """The releases that have the defect."""
    fixed_in: str
    """The first release without it (a .post release where the fix came in one)."""
    settings: tuple[tuple[str, tuple[object, ...], str], ...]
    """(server arg, the values that have the defect, the condition's words when the log does not
    show the setting)."""
    cause: str
    """What goes wrong, with the engine's `vX path:line` at a release that has it."""
    said: str
    """The verdict's words for it."""
    fix: str
    """The change that fixed it, with its source."""


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        "fa3_page_table_per_bs",
        "graphs_over_plan",
        ReleaseRange(last="0.4.10"),
        "0.4.10.post2",
        (
            (
                "attention_backend",
                ("fa3",),
                "the attention backend is FA3 (FA3 is SGLang's default attention backend on "
                "Hopper: v0.4.10.post1 model_executor/model_runner.py:389-397 for MHA models, "
                ":407-411 for MLA; Llama-4 requires it, server_args.py:1896)",
            ),
        ),
        "FA3's page table copied for every captured batch size (v0.4.10.post1 "
        "layers/attention/flashattention_backend.py:1463-1465, kept per bs at :1470; sglang#8538: "
        "6.19 GB on Llama-4 Maverick)",
        "FA3's per-bs page tables (sglang#8538)",
        "sglang PRs #8567, the table sliced to [:bs, :], and #8579, one logits buffer across "
        "graphs (v0.4.10.post2 model_executor/cuda_graph_runner.py:378-382): 5.16 GB -> 0.95 GB "
        "on GLM-4.5-Air",
    ),
    KnownBug(
        "page_count_precheck",
        "pool_not_full",
        ReleaseRange(last="0.4.4"),
        "0.4.5",
        (),
        "the decode pre-check counted one token a request, not pages (v0.4.4 "
        "managers/schedule_batch.py:998-1008; pages since v0.4.5 :1143-1160)",
        "the page-count fix",
        "sglang#4913",
    ),
)


def known_bug(
    symptom: str, version: VersionRange | None, settings: Mapping[str, object]
) -> tuple[KnownBug, str] | None:
    """The first defect of `symptom` that a log of `version` with `settings` may have, and the
    condition the log leaves open ("" when it shows the release and every setting)."""
    for bug in KNOWN_BUGS:
        held = version.within(bug.releases) if version is not None else None
        if bug.symptom != symptom or held is False:
            continue
        conditions = []
        for key, values, unset in bug.settings:
            value = settings.get(key)
            if value is not None and value not in values:
                break
            if value is None:
                conditions.append(unset)
        else:
            # a version code cannot tell a .post release from its base: a fix that came in one
            # leaves the base release's logs conditional
            if held is None or version_code(bug.fixed_in) == bug.releases.hi:
                seen = version.text if version is not None else "unknown"
                conditions.append(f"the release is before {bug.fixed_in} (this log's: {seen})")
            return bug, " and ".join(conditions)
    return None


def bug_words(bug: KnownBug, condition: str) -> str:
    """`if <condition>, that is <cause>, fixed in <release> (<fix>)`."""
    where = f"if {condition}, " if condition else ""
    return f"{where}that is {bug.cause}, fixed in {bug.fixed_in} ({bug.fix})"
