"""The releases of the two sides of an upgrade: ranges, the defaults crossed between them, and
SGLang's mem_fraction_static default at a release (memledger.sglang.default_changes for
releases before 0.5.3, memledger.sizing.defaults from 0.5.3 on). Pure."""

from __future__ import annotations

import re
from dataclasses import replace

from memledger.compare.upgrade_models import CrossedDefault
from memledger.errors import ConfigError
from memledger.model.events import ParamValue
from memledger.model.ledger import Ledger
from memledger.sglang.default_changes import (
    changes_between,
    piecewise_on_by_default,
)
from memledger.sglang.mfs_defaults import legacy_mem_fraction_static
from memledger.sglang.release_markers import VersionRange, given_release
from memledger.sglang.releases import version_code
from memledger.sglang.sizing_rules import RULE
from memledger.sizing import SizingInputs, base_settings
from memledger.sizing.defaults import default_mem_fraction_static
from memledger.units import int_or

MFS = "mem_fraction_static"
PIECEWISE = "disable_piecewise_cuda_graph"
PIECEWISE_OFF_KNOBS: tuple[tuple[str, tuple[object, ...]], ...] = (
    ("disaggregation_mode", ("prefill", "decode")),
    ("device", ("npu", "cpu", "xpu", "mps")),
)
"""Sizing knobs (memledger.sizing.inputs.KNOBS) that turn piecewise graphs off in SGLang's
_handle_piecewise_cuda_graph (v0.5.10 server_args.py:1098-1136: PD disaggregation, non-CUDA
devices; and any moe_a2a_backend but 'none', :1104-1105). Torch compile and LoRA turn them off
too but are not sizing knobs: a command with them is taken as SGLang's plain default."""
FIRST_FORMULA = RULE["mfs_default"].releases.lo or 0
"""From here the default is the reserve formula of memledger.sglang.mfs_defaults."""
RELEASE = re.compile(r"v?(\d{1,3}\.\d{1,3}\.\d{1,4})([.a-z0-9+]{0,40})?")


def parse_release(text: str | None, option: str) -> str | None:
    """An SGLang release as given (`0.5.10`, `v0.5.8.post1`): X.Y.Z plus a suffix SGLang's
    version codes ignore; ConfigError for anything else."""
    if text is None:
        return None
    found = RELEASE.fullmatch(text.strip())
    if found is None:
        raise ConfigError(f"{option}: {text!r} is not a release such as 0.5.10")
    return found.group(1)


def features(inputs: SizingInputs | None, ledger: Ledger) -> set[str]:
    """The FEATURES a log uses (from its sizing inputs, else the saved ledger's parameters)."""
    if inputs is not None:
        return features_of(inputs)
    return _features(dict(ledger.parameters), None)


def features_of(inputs: SizingInputs) -> set[str]:
    """The FEATURES a log uses, from its sizing inputs."""
    return _features(dict(inputs.knobs), inputs)


def _features(knobs: dict[str, ParamValue], inputs: SizingInputs | None) -> set[str]:
    found = set()
    if knobs.get("speculative_algorithm") or (inputs is not None and inputs.draft_kv):
        found.add("speculative")
    if inputs is not None and inputs.swa_full_tokens is not None:
        found.add("swa")
    if inputs is not None and inputs.mamba is not None:
        found.add("mamba")
    if knobs.get("enable_dp_attention"):
        found.add("dp_attention")
    return found


def side_release(inputs: SizingInputs | None, given: str | None) -> VersionRange:
    """The release a side ran: `given` (--base-version/--head-version), else its formats'."""
    if given:
        return given_release(version_code(given))
    return inputs.version if inputs is not None else VersionRange()


def given_settings(inputs: SizingInputs | None) -> frozenset[str]:
    """The sizing knobs this log sets to a value (None in server_args is SGLang's default)."""
    if inputs is None:
        return frozenset()
    return frozenset(name for name, value in inputs.knobs.items() if value is not None)


def releases_differ(base: VersionRange, head: VersionRange) -> bool | None:
    if base.first is not None and base.first == base.last == head.first == head.last:
        return False
    if base.last is not None and head.first is not None and base.last < head.first:
        return True
    if head.last is not None and base.first is not None and head.last < base.first:
        return True
    return None


def crossed_defaults(
    base: VersionRange,
    head: VersionRange,
    gpu_mib: int | None,
    used: set[str],
    given: frozenset[str] = frozenset(),
) -> list[CrossedDefault]:
    """Default changes between the two releases (either direction): certain when the ranges
    lie on either side of the change, possible when a range straddles it. `given`: the
    settings the log sets (not None), which an `only_unset` change never reaches."""
    low, high = (base, head) if (head.first or 0) >= (base.first or 0) else (head, base)
    found: list[CrossedDefault] = []
    lowest = low.first or 0
    highest = high.last if high.last is not None else 1 << 40
    for change in changes_between(lowest, highest):
        if not change.fits_gpu(gpu_mib) or (change.needs and change.needs not in used):
            continue
        if used.intersection(change.unless) or (change.only_unset and change.setting in given):
            continue
        code = version_code(change.release)
        certain = low.last is not None and high.first is not None and low.last < code <= high.first
        found.append(
            CrossedDefault(
                id=change.id,
                setting=change.setting,
                title=change.title,
                old=change.old,
                new=change.new,
                release=change.release,
                old_source=change.old_source,
                new_source=change.new_source,
                effect=change.effect.value,
                applies=change.applies,
                certain=certain,
            )
        )
    return found


def deciding_release(release: VersionRange) -> int | None:
    """The release code whose mem_fraction_static rule stands for `release`: its first, unless
    the range straddles 0.5.3 (the legacy rules below, the reserve formula from): None then."""
    first, last = release.first, release.last
    if (first is None or first != last) and (
        (last is None or last >= FIRST_FORMULA) and (first is None or first < FIRST_FORMULA)
    ):
        return None
    return first or 0


def _piecewise_default(inputs: SizingInputs, code: int) -> bool:
    """SGLang's own piecewise default for a log that does not print it (a pasted command):
    on at 0.5.10 - 0.5.13 unless this log's features or server_args turn it off."""
    knobs = inputs.knobs
    if any(knobs.get(name) in values for name, values in PIECEWISE_OFF_KNOBS):
        return False
    if knobs.get("moe_a2a_backend") not in (None, "none"):
        return False
    return piecewise_on_by_default(code, features_of(inputs), int_or(knobs.get("pp_size"), 1))


def default_fraction(inputs: SizingInputs, release: VersionRange, gpu_mib: int) -> float | None:
    """SGLang's mem_fraction_static default for this log at `release` on a `gpu_mib` GPU."""
    code = deciding_release(release)
    if code is None:
        return None
    if code >= FIRST_FORMULA:
        knobs = dict(inputs.knobs)
        knobs.pop(MFS, None)
        if PIECEWISE not in knobs and _piecewise_default(inputs, code):
            knobs[PIECEWISE] = False
        probe = replace(inputs, version=release, knobs=knobs)
        settings = replace(base_settings(probe), gpu_memory_mib=gpu_mib)
        found = default_mem_fraction_static(probe, settings)
        return None if found is None else found.value
    knobs = inputs.knobs
    parallel = int_or(knobs.get("tp_size"), 1) * int_or(knobs.get("pp_size"), 1)
    return legacy_mem_fraction_static(
        code,
        gpu_mib,
        parallel=parallel,
        speculative=bool(knobs.get("speculative_algorithm")),
        dp_attention=bool(knobs.get("enable_dp_attention")),
    )
