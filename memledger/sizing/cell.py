"""Bytes per token SGLang divided the budget by, rebuilt from the KV lines a log printed (pure).

The KV lines give the allocated bytes per token. SGLang's sizing cell is the same number except
where a rule says otherwise: the Ascend DSA pool (allocated wider than sized), the hybrid-SWA
splits, the draft KV inside the cell, and a what-if change of the KV dtype.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memledger.model.sizing import Settings
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.sizing_rules import (
    DSA_FP8_ROW,
    DSA_INDEX_HEAD_DIM,
    DSA_KV_LORA_RANK,
    DSA_QUANT_BLOCK,
    DSA_ROPE_DIM,
    DSA_SCALE_BYTES,
    KV_DTYPE_BYTES,
    RULE,
)
from memledger.sizing.inputs import KVPool, SizingInputs, kv_element_bytes
from memledger.sizing.settings import base_settings
from memledger.units import float_or

EAGLE_FAMILY = {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "MTP"}
MAX_DSA_LAYERS = 256
DSA_PAGE = 64
"""A DSA pool's page size (v0.5.3 mem_cache/memory_pool.py:1250, asserted): its rows are
#tokens + a page."""


@dataclass(frozen=True)
class Cell:
    bytes: float
    """The sizing cell: the budget is divided by it."""
    half: float
    """± from the printed KV sizes."""
    full_tokens_pool: KVPool | None
    swa_ratio: float | None
    note: str
    alloc_bytes: float | None = None
    """Allocated bytes per token where they differ from the sizing cell (Ascend DSA)."""
    swa_one_pool: float | None = None
    """Before 0.5.11: F + S, the cell the tokens are first profiled with, then split."""
    swa_rule: str | None = None

    @property
    def pool_bytes(self) -> float:
        return self.alloc_bytes if self.alloc_bytes is not None else self.bytes


def pad_rows(inputs: SizingInputs, page_size: int) -> int:
    return page_size if inputs.version.within(RULE["kv_buffer_rows"]) is not False else 1


def model_elem(inputs: SizingInputs) -> float | None:
    if inputs.model_dtype is None:
        return None
    return KV_DTYPE_BYTES.get(inputs.model_dtype.removeprefix("torch."))


def _swa_rule(inputs: SizingInputs) -> str:
    """Which SWA split this release uses (an undecided range takes the newest, with a note)."""
    if inputs.version.within(RULE["swa_split"]) is not False:
        return "swa_split"
    if inputs.version.within(RULE["swa_split_memory"]) is not False:
        return "swa_split_memory"
    return "swa_split_layers"


def npu_dsa_layers(inputs: SizingInputs, alloc: float, half: float) -> int | None:
    """Layers of an Ascend DSA pool: its bf16 row is (512 + 64 + 128) x 2 B per layer.

    The allocated cell must be a whole number of those rows (within printing) and not a whole
    number of plain MLA rows (576 x 2 B), so a DeepSeek V3 pool is never taken for one.
    """
    knobs = inputs.knobs
    if knobs.get("device") != "npu" and knobs.get("attention_backend") != "ascend":
        return None
    # `auto` is the model's dtype (the load-end line's) where no rank-0 KV dtype line is pasted
    elem = kv_element_bytes(inputs.logged_kv_dtype, knobs.get("kv_cache_dtype"), model_elem(inputs))
    if elem != 2:
        return None
    row = (DSA_KV_LORA_RANK + DSA_ROPE_DIM + DSA_INDEX_HEAD_DIM) * elem
    mla_row = (DSA_KV_LORA_RANK + DSA_ROPE_DIM) * elem
    layers = round(alloc / row)
    slack = half + 1
    if not 1 <= layers <= MAX_DSA_LAYERS or abs(alloc - layers * row) > slack:
        return None
    if abs(alloc - round(alloc / mla_row) * mla_row) <= slack:
        return None
    return layers


def _npu_hybrid_all_layers(inputs: SizingInputs, pool: KVPool, notes: list[str]) -> bool:
    """Rule npu_hybrid_all_layers: an Ascend-backend hybrid (Mamba/GDN) model's KV pool holds
    every layer while SGLang sized it over the full-attention ones; a note says so, and what
    the log lacks for the sizing cell (the layer split is in --model-config)."""
    if (
        inputs.mamba is None
        or pool.combined
        or inputs.knobs.get("attention_backend") != "ascend"
        or inputs.version.within(RULE["npu_hybrid_all_layers"]) is False
    ):
        return False
    rule = RULE["npu_hybrid_all_layers"]
    if inputs.version.within(rule) is None:
        notes.append(
            f"release {inputs.version.text} may predate or follow rule 'npu_hybrid_all_layers' "
            f"({rule.releases.text}; 0.5.10 pools a hybrid model's full-attention layers only)"
            "; applied it"
        )
    if inputs.full_attention_layers is None:
        notes.append(
            "rule npu_hybrid_all_layers: the Ascend pool holds every layer, SGLang sized it "
            "over the full-attention layers, which the log does not count (--model-config with "
            "full_attention_interval gives them); the KV line's cell is divided"
        )
    return True


@dataclass(frozen=True)
class IndexerLeftOut:
    """Rule dsa_indexer_left_out: what a DSA pool held beyond its KV line and its budget."""

    bytes: int
    says: str
    """The arithmetic, from the KV line's tokens and rows to the bytes."""
    maybe: str
    """The condition the log's release leaves open ("" inside the rule's releases)."""

    @property
    def words(self) -> dict[str, object]:
        """The finding's fields (memledger.sglang.findings `indexer_left_out`)."""
        rule = RULE["dsa_indexer_left_out"]
        left = f"{self.bytes / 2**30:.2f} GiB"
        return {"bytes": self.bytes, "left": left, "says": self.says, "maybe": self.maybe,
                "releases": rule.releases.text}  # fmt: skip


def indexer_left_out(
    kv_bytes: int, tokens: object, model: object, version: VersionRange | None
) -> IndexerLeftOut | None:
    """The indexer keys a KV line of `kv_bytes` for `tokens` leaves out, at a `version` that may
    be in the rule's releases, where its rows are a whole number of layers of a DSA pool: fp8's
    656 B rows (no plain MLA pool has them), or bf16 MLA rows of a model named V3.2."""
    held = version.within(RULE["dsa_indexer_left_out"]) if version is not None else None
    if held is False or not isinstance(tokens, int) or tokens <= 0:
        return None
    cell = kv_bytes / (tokens + DSA_PAGE)  # a page of padding rows
    named = isinstance(model, str) and bool(re.search(r"v3\.?2", model, re.IGNORECASE))
    mla = any(abs(cell / r - round(cell / r)) < 0.05 for r in (576, 1152))  # plain MLA rows
    for row, dtype in [(DSA_FP8_ROW, "fp8")] * (not mla) + [(1152, "bf16")] * named:
        layers = round(cell / row)
        if 1 <= layers <= MAX_DSA_LAYERS and abs(cell / row - layers) < 0.05:
            per = DSA_INDEX_HEAD_DIM + DSA_INDEX_HEAD_DIM // DSA_QUANT_BLOCK * DSA_SCALE_BYTES
            left = tokens * per * layers
            says = (
                f"{tokens:,} tokens x {per} B x {layers} layers = {left / 2**30:.2f} GiB; the KV "
                f"line's {cell:,.0f} B a token are {layers} layers of {dtype} DSA rows of {row} B"
            )
            seen = version.text if version is not None else "unknown"
            maybe = "" if held else f" (if the release is 0.5.3; this log's is {seen})"
            return IndexerLeftOut(left, says, maybe)
    return None


def dsa_sizing_cell(layers: int, elem: float) -> int:
    """Rule dsa_indexer_cell: the latent and rope in the KV dtype, the indexer as uint8 + scales."""
    indexer = DSA_INDEX_HEAD_DIM + DSA_INDEX_HEAD_DIM // DSA_QUANT_BLOCK * DSA_SCALE_BYTES
    return int((DSA_KV_LORA_RANK + DSA_ROPE_DIM) * layers * elem + indexer * layers)


def build_cell(inputs: SizingInputs, settings: Settings, notes: list[str]) -> Cell | None:
    """Bytes per token SGLang divided the budget by, from the KV lines this log printed."""
    pools = inputs.target_kv
    if not pools:
        return None
    base_page = base_settings(inputs).page_size
    pad = pad_rows(inputs, base_page)

    def per_token(pool: KVPool, tokens: int | None) -> tuple[float, float] | None:
        count = pool.tokens if pool.tokens is not None else tokens
        if not count:
            return None
        return pool.bytes / (count + pad), pool.half_ulp / (count + pad)

    swa_ratio = float_or(inputs.knobs.get("swa_full_tokens_ratio"), 0.8)
    full_pool: KVPool | None = None
    alloc: float | None = None
    one_pool: float | None = None
    swa_rule: str | None = None
    if inputs.swa_full_tokens is not None and len(pools) >= 2:
        full_pool = next((p for p in pools if p.tokens == inputs.swa_full_tokens), None)
        swa_pool = next((p for p in pools if p.tokens == inputs.swa_swa_tokens), None)
        if full_pool is None or swa_pool is None or full_pool is swa_pool:
            notes.append("sliding-window pools could not be told apart: split not modelled")
            return None
        full = per_token(full_pool, None)
        swa = per_token(swa_pool, None)
        assert full is not None and swa is not None
        swa_rule = _swa_rule(inputs)
        if swa_rule == "swa_split" and inputs.version.within(RULE["swa_split"]) is None:
            notes.append(
                f"release {inputs.version.text} may predate the SWA configurator (0.5.11); "
                "its split applied"
            )
        value = full[0] + swa_ratio * swa[0]
        half = full[1] + swa_ratio * swa[1]
        note = (
            f"full {full[0]:.0f} B + {swa_ratio:g} x SWA {swa[0]:.0f} B ({RULE[swa_rule].source})"
        )
        if swa_rule != "swa_split":
            one_pool = full[0] + swa[0]
            note = (
                f"full {full[0]:.0f} B + SWA {swa[0]:.0f} B profiled as one pool, split "
                f"{swa_ratio:g} ({RULE[swa_rule].source})"
            )
            if swa_rule == "swa_split_layers":
                notes.append(
                    "SWA split by layer count: assumes SWA layers hold as many KV bytes per "
                    "layer as full layers (true unless their head count differs)"
                )
    else:
        first = pools[0]
        same = [p for p in pools if p.tokens == first.tokens]
        parts = [per_token(p, inputs.logged_tokens) for p in same]
        if any(part is None for part in parts):
            return None
        value = sum(part[0] for part in parts if part is not None)
        half = sum(part[1] for part in parts if part is not None)
        rows = f"#tokens + {pad}" if pad > 1 else "#tokens + 1"
        note = f"KV bytes / ({rows} rows)"
        full_pool = first
        layers = npu_dsa_layers(inputs, value, half) if len(same) == 1 else None
        if layers is not None and inputs.version.within(RULE["npu_dsa_pool"]) is not False:
            alloc = value
            value = dsa_sizing_cell(layers, 2)
            half = 0.0
            note = (
                f"Ascend DSA: allocated {alloc:,.0f} B = {layers} layers x (512 + 64 + 128) x 2 B, "
                f"sized as {layers} x (576 x 2 + 132) B (rules npu_dsa_pool, dsa_indexer_cell)"
            )
            notes.append(note)
            if inputs.version.within(RULE["npu_dsa_pool"]) is None:
                notes.append(
                    f"release {inputs.version.text} may predate or follow rule 'npu_dsa_pool' "
                    f"({RULE['npu_dsa_pool'].releases.text}; 0.5.20 sizes the NPU indexer in "
                    "the KV dtype); applied it"
                )
        elif _npu_hybrid_all_layers(inputs, first, notes):
            split = inputs.full_attention_layers
            if split is not None:
                full_layers, all_layers = split
                alloc = value
                value, half = value * full_layers / all_layers, half * full_layers / all_layers
                note = (
                    f"Ascend hybrid pool: allocated {alloc:,.0f} B over all {all_layers} layers, "
                    f"sized over the {full_layers} full-attention layers (rule "
                    "npu_hybrid_all_layers, --model-config)"
                )
                notes.append(note)
    target_tokens = full_pool.tokens if full_pool is not None else inputs.logged_tokens
    algo = str(inputs.knobs.get("speculative_algorithm") or "").upper()
    if inputs.draft_kv and inputs.version.within(RULE["draft_in_cell"]):
        draft = inputs.draft_kv[0]
        proportional = draft.tokens is not None and draft.tokens == target_tokens
        swa_excludes = inputs.swa_full_tokens is not None and algo not in EAGLE_FAMILY
        if proportional and not swa_excludes:
            part = per_token(draft, None)
            assert part is not None
            value += part[0]
            half += part[1]
            if alloc is not None:
                alloc += part[0]
            if one_pool is not None:
                one_pool += part[0]
            note += f" + draft {part[0]:.0f} B ({RULE['draft_in_cell'].source})"
        elif not proportional:
            notes.append(
                "the draft KV pool does not hold the target's token count: sized by its own "
                "rule, kept out of the cell"
            )
    elif inputs.draft_kv:
        notes.append(
            f"draft KV is outside the budget in this release ({RULE['draft_outside'].source})"
        )
    old_elem = kv_element_bytes(
        inputs.logged_kv_dtype, inputs.knobs.get("kv_cache_dtype"), model_elem(inputs)
    )
    base_dtype = base_settings(inputs).kv_cache_dtype
    if settings.kv_cache_dtype is not None and settings.kv_cache_dtype != base_dtype:
        new_elem = (
            model_elem(inputs)
            if settings.kv_cache_dtype == "auto"
            else KV_DTYPE_BYTES.get(settings.kv_cache_dtype)
        )
        fp4 = settings.kv_cache_dtype.startswith(("fp4", "float4"))
        if fp4 and inputs.version.within(RULE["fp4_cell"]) is False:
            new_elem = None
        if new_elem is None or old_elem is None:
            notes.append(
                f"kv_cache_dtype={settings.kv_cache_dtype}: bytes per element not modelled "
                "for this log (unknown dtype, or fp4 before 0.5.6); cell kept"
            )
        else:
            scale = new_elem / old_elem
            value *= scale
            half *= scale
            alloc = None if alloc is None else alloc * scale
            one_pool = None if one_pool is None else one_pool * scale
            note += f" x {new_elem:g}/{old_elem:g} B per element"
            if fp4:
                note += f" ({RULE['fp4_cell'].source})"
    return Cell(
        value,
        half,
        full_pool,
        swa_ratio if inputs.swa_full_tokens else None,
        note,
        alloc_bytes=alloc,
        swa_one_pool=one_pool,
        swa_rule=swa_rule,
    )
