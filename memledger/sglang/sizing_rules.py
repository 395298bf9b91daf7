"""SGLang's KV-pool sizing arithmetic as data: one rule per step, with release range and source.

Every rule names the SGLang release range it holds for (`first`..`last`, None = open) and the
source line it was read from, as `vX path:line` with the path under `python/sglang/srt/` of that
release's wheel (`pip download sglang==X --no-deps`). memledger.sizing applies these rules; the
numbers here (constants, tables) are the only SGLang knowledge it uses. A new release that moves a
rule gets a new entry with its own range; the old entry keeps its `last`.
"""

from __future__ import annotations

from memledger.sglang.fraction_rules import FRACTION_RULES
from memledger.sglang.releases import ReleaseRange
from memledger.sglang.rule_record import SizingRule

RULES: tuple[SizingRule, ...] = (
    SizingRule(
        id="budget",
        title="KV budget after the weights",
        formula="rest = A - P x (1 - mem_fraction_static)",
        releases=ReleaseRange("0.4.1"),
        source=(
            "v0.4.1 model_executor/model_runner.py:487-490; v0.4.6.post2 :736-739; "
            "v0.5.2 model_executor/model_runner.py:1123-1125; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:138-140; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1538-1548; v0.5.23 :3007/3038"
        ),
    ),
    SizingRule(
        id="world_min",
        title="P and A are the minimum over all ranks",
        formula="A = min over ranks (get_available_gpu_memory(distributed=True))",
        releases=ReleaseRange("0.4.1"),
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:112-117; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1531-1536"
        ),
    ),
    SizingRule(
        id="tokens",
        title="Tokens from the budget",
        formula="max_total_num_tokens = int(rest x 2^30) // cell_size",
        releases=ReleaseRange("0.4.1"),
        source=(
            "v0.4.1 model_executor/model_runner.py:490; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:144; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1570 (bytes, then // cell)"
        ),
    ),
    SizingRule(
        id="kv_buffer_rows",
        title="KV buffers hold page_size padding rows",
        formula="KV size = (#tokens + page_size) x cell_size (size + 1 rows before 0.4.4)",
        releases=ReleaseRange("0.4.4"),
        source=(
            "v0.5.8 mem_cache/memory_pool.py:765,773 (MHA), :1387 (MLA); v0.4.1 "
            "mem_cache/memory_pool.py:197,205 (size + 1)"
        ),
    ),
    SizingRule(
        id="mamba_first",
        title="Mamba/linear-attention state is taken out of the budget first",
        formula="rest -= max_mamba_cache_size x per_req (the pool itself has K+1 slots)",
        releases=ReleaseRange("0.5.2", "0.5.16"),
        source=(
            "v0.5.4 model_executor/model_runner.py:1474-1480; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:141-142,199-204; "
            "v0.5.11 :126-131; v0.5.15 :238-243; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1549-1550,1808-1813"
        ),
    ),
    SizingRule(
        id="mamba_padding_ring",
        title="Mamba state taken with its padding slot (and the ReplaySSM ring per slot)",
        formula=(
            "rest -= (K + 1) x (per_req + ring_per_req); ratio split: K = int((share - per_slot)"
            " // per_slot)"
        ),
        releases=ReleaseRange("0.5.17", "0.5.19"),
        source=(
            "v0.5.17 mem_cache/kv_cache_configurator.py:1950-1956 (K), :1977-1982 (taken); "
            "v0.5.19 :2344-2350, :2371-2376"
        ),
    ),
    SizingRule(
        id="mamba_padding_slot",
        title="Mamba state taken with its padding slot, the ReplaySSM ring and its fixed part",
        formula=(
            "rest -= (K + 1) x (per_req + extra_per_slot) + replayssm_fixed_bytes; ratio split: "
            "K = int((share - replayssm_fixed_bytes - per_slot) // per_slot)"
        ),
        releases=ReleaseRange("0.5.20"),
        source=(
            "v0.5.20 mem_cache/kv_cache_configurator.py:2509-2515 (K), :2535-2540 (taken); "
            "v0.5.23 :3379-3385, :3405-3409"
        ),
    ),
    SizingRule(
        id="mamba_slots_fixed",
        title="Mamba slots from max_running_requests when radix cache is off",
        formula=(
            "K = max_running_requests // dp (512 when unset, <= 0.5.9); PD decode adds extra slots"
        ),
        releases=ReleaseRange("0.5.4"),
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:168-181; "
            "v0.5.16 disaggregation/decode.py:135; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1733-1750"
        ),
    ),
    SizingRule(
        id="mamba_ratio_split",
        title="Mamba slots from the memory ratio when radix cache is on",
        formula="K = int(rest x m/(1+m) x 2^30 // per_req), m = mamba_full_memory_ratio",
        releases=ReleaseRange("0.5.4"),
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:182-197; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1751-1791"
        ),
    ),
    SizingRule(
        id="swa_split",
        title="Hybrid SWA: one cell for both pools, SWA tokens = ratio x full",
        formula=(
            "cell = F x n_full + r x S x n_swa; full = page_floor(rest // cell); swa = "
            "page_floor(int(full x r))"
        ),
        releases=ReleaseRange("0.5.11"),
        source=(
            "v0.5.11 model_executor/pool_configurator.py:191-236,275-279; "
            "v0.5.16 model_executor/pool_configurator.py:376-425"
        ),
    ),
    SizingRule(
        id="swa_split_memory",
        title="Hybrid SWA before the configurator: tokens as if one pool, then split by memory",
        formula=(
            "T = rest // (F x n_full + S x n_swa); full = page_floor(int(T x (F x n_full + "
            "S x n_swa) / (F x n_full + r x S x n_swa))); swa = page_floor(int(full x r))"
        ),
        releases=ReleaseRange("0.5.9", "0.5.10"),
        source=(
            "v0.5.9 model_executor/model_runner_kv_cache_mixin.py:86-95 (cell), :251-333 "
            "(split); v0.5.10 model_executor/model_runner_kv_cache_mixin.py:287-371"
        ),
    ),
    SizingRule(
        id="swa_split_layers",
        title="Hybrid SWA split by layer count (every layer sized as a full layer)",
        formula=(
            "T = rest // (F x n_layers); full = page_floor(int(T x n_layers / (r x n_swa + "
            "n_full))); swa = page_floor(int(full x r))"
        ),
        releases=ReleaseRange("0.5.2", "0.5.8"),
        source=(
            "v0.5.2 model_executor/model_runner.py:1142-1222 (set_num_token_hybrid); "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:206-249"
        ),
    ),
    SizingRule(
        id="fp4_cell",
        title="fp4_e2m1 KV cache: packed 4-bit elements plus one scale byte per 16",
        formula="cell = cell_1B // 2 + elements / 16 (9/16 B per element, K and V alike)",
        releases=ReleaseRange("0.5.6"),
        source=(
            "v0.5.6 model_executor/model_runner.py:1392-1399 (MLA), :1427-1434 (MHA); "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:56-67,88-96; "
            "v0.5.23 model_executor/pool_configurator.py:387-396"
        ),
    ),
    SizingRule(
        id="dsa_indexer_cell",
        title="DSA (DeepSeek V3.2) sizing cell adds the indexer keys as uint8 with scales",
        formula=(
            "cell = (kv_lora_rank + rope) x L x e + (index_head_dim + index_head_dim / 128 x 4)"
            " x L x 1 B"
        ),
        releases=ReleaseRange("0.5.4"),
        source=(
            "v0.5.4 model_executor/model_runner.py:1400-1416; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:70-79; "
            "v0.5.16 model_executor/pool_configurator.py:205-215"
        ),
    ),
    SizingRule(
        id="dsa_indexer_left_out",
        title="DSA (DeepSeek V3.2) pool allocates indexer keys its sizing cell and KV line omit",
        formula=(
            "tokens = rest / ((kv_lora_rank + rope) x L x e) (or 656 B a layer, the fp8 "
            "sparse layout), while the pool also holds (index_head_dim + index_head_dim / 128 x "
            "4) x L x 1 B a token: #tokens x 132 B x L beyond the budget and the KV line"
        ),
        releases=ReleaseRange("0.5.3", "0.5.3"),
        source=(
            "v0.5.3 model_executor/model_runner.py:1274-1279 (the MLA cell alone), "
            "mem_cache/memory_pool.py:1054-1058 (656 B rows for fp8), :1250-1266 "
            "(NSATokenToKVPool's index_k_with_scale_buffer a layer), :1096-1101 (the KV line "
            "counts kv_buffer only); counted from v0.5.3.post1 model_executor/model_runner.py:"
            "1283-1293 and mem_cache/memory_pool.py:1400-1404 (sglang PR #11309; release codes "
            "do not tell a .post from its base, so a 0.5.3.postN log is named conditionally)"
        ),
    ),
    SizingRule(
        id="npu_dsa_pool",
        title="Ascend DSA pool keeps the indexer keys in the KV dtype (sized as uint8)",
        formula=(
            "allocated cell = (kv_lora_rank + rope + index_head_dim) x L x e, while the tokens "
            "come from the dsa_indexer_cell (bf16: 1,408 B vs 1,284 B per layer)"
        ),
        releases=ReleaseRange("0.5.4", "0.5.19"),
        source=(
            "v0.5.4 mem_cache/memory_pool.py:1574-1584; "
            "v0.5.8 hardware_backend/npu/memory_pool_npu.py:224-235; "
            "v0.5.16 hardware_backend/npu/memory_pool_npu.py:347-355; v0.5.19 :584-594, its "
            "model_executor/pool_configurator.py still sizing uint8 (v0.5.20 "
            "model_executor/pool_configurator.py:466-473 sizes the NPU indexer in the KV dtype)"
        ),
    ),
    SizingRule(
        id="npu_hybrid_all_layers",
        title="Ascend backend pools a hybrid model's KV over every layer, sized by full attention",
        formula=(
            "allocated cell = sizing cell x num_hidden_layers / full-attention layers (Qwen3-Next:"
            " L // full_attention_interval); tokens come from the full-attention cell"
        ),
        releases=ReleaseRange("0.5.5", "0.5.9"),
        source=(
            "v0.5.5 model_executor/model_runner.py:1273-1274 (sized with "
            "full_attention_layer_ids), :1693-1716 (attention_backend ascend: one pool, "
            "layer_num=num_effective_layers, before the hybrid branch); v0.5.8 "
            "model_executor/model_runner_kv_cache_mixin.py:126-131, :397-433; v0.5.9 :486; "
            "v0.5.10 :478 adds `and not self.mambaish_config`; v0.5.8 "
            "configs/qwen3_next.py:248-271 (every full_attention_interval-th layer is full "
            "attention)"
        ),
    ),
    SizingRule(
        id="mamba_ratio_v057",
        title="Mamba requests cap K // 5 (K // 4 with extra_buffer and speculative decoding)",
        formula="ratio = 3 + (1 if extra_buffer and speculative else 2); 1 without radix cache",
        releases=ReleaseRange("0.5.7", "0.5.7"),
        source="v0.5.7 model_executor/model_runner_kv_cache_mixin.py:289-302",
    ),
    SizingRule(
        id="mamba_ratio_spec",
        title="Mamba requests cap K // ratio, extra_buffer adds 2 slots (1 with spec)",
        formula=(
            "ratio = 3 + (extra_buffer ? (1 if speculative else 2) : 0); 1 without radix cache"
        ),
        releases=ReleaseRange("0.5.8", "0.5.9"),
        source="v0.5.8 model_executor/model_runner_kv_cache_mixin.py:268-281",
    ),
    SizingRule(
        id="mamba_ratio_overlap",
        title="Mamba requests cap K // ratio, extra_buffer adds 2 slots (1 without overlap)",
        formula=(
            "ratio = 3 + (extra_buffer ? (1 if disable_overlap_schedule or lazy else 2) : 0); "
            "1 without radix cache"
        ),
        releases=ReleaseRange("0.5.10", "0.5.16"),
        source=(
            "v0.5.10 model_executor/model_runner_kv_cache_mixin.py:373-386; "
            "v0.5.13 :233-252 (extra_buffer_lazy); "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1572-1592"
        ),
    ),
    SizingRule(
        id="draft_in_cell",
        title="Draft KV inside the budget (cell scaled by the draft's layers)",
        formula="cell = target_cell x (1 + draft_layers / L); SWA models: EAGLE/STANDALONE only",
        releases=ReleaseRange("0.5.14"),
        source=(
            "v0.5.16 model_executor/pool_configurator.py:135-170 (EAGLE, DFLASH); "
            ":349-374 (SWA configurator: EAGLE/STANDALONE only)"
        ),
    ),
    SizingRule(
        id="draft_outside",
        title="Draft KV outside the budget (the draft pool reuses the target's token count)",
        formula="draft pool size = target max_total_num_tokens; its bytes come out of the slack",
        releases=ReleaseRange("0.5.7", "0.5.13"),
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:291-297 (draft_runner_cache_size)"
        ),
    ),
    SizingRule(
        id="spec_headroom",
        title="Speculative headroom added to the target's tokens",
        formula="T' = T + R x steps x topk + R x draft_tokens + 100 (R = max_num_reqs)",
        releases=ReleaseRange("0.4.4", "0.5.6"),
        source=(
            "v0.4.6.post2 model_executor/model_runner.py:779-799 (before the --max-total-tokens "
            "cap)"
        ),
    ),
    SizingRule(
        id="npu_printed_rest",
        title="Ascend builds print the rest the tokens are divided from (every rank's minimum)",
        formula=(
            "rest = the printed `The available memory for KV cache is X GB` (A - P x (1 - mfs) "
            "over every rank, the ranks this log does not show included)"
        ),
        releases=ReleaseRange("0.5.3"),
        source=(
            "v0.5.6 model_executor/model_runner.py:1367-1373 (A all-reduced to the world "
            "minimum), :1442-1447 (rest_memory), printed after :1670 logs the KV dtype. The "
            "print itself is inferred from the Ascend logs, not read in source: no release "
            "wheel 0.4.6 - 0.5.11 (0.5.6.post1 and 0.5.6.post2 included), 0.5.16, 0.5.20 or "
            "0.5.23 has the line (0.5.23 names the phrase only in distributed/bootstrap.py:194, "
            "a docstring), and the logs print it on every rank where SGLang logs the KV dtype "
            "on rank 0 only: the logs' builds are snapshots between 0.5.6.post2 and 0.5.7 "
            "(rule npu_spec_headroom), and the print is theirs"
        ),
    ),
    SizingRule(
        id="npu_spec_headroom",
        title="Builds between 0.5.6.post2 and 0.5.7 (the Ascend logs') keep the headroom",
        formula=(
            "T' = T + R x steps x topk + R x draft_tokens + 100 (R = max_num_reqs), also "
            "where the release range is after 0.5.6 (rule spec_headroom's end)"
        ),
        releases=ReleaseRange("0.5.3", "0.5.8"),
        source=(
            "v0.5.6 model_executor/model_runner.py:1697-1716 and v0.5.6.post2 :1700-1710 "
            "(draft_runner_cache_size with the headroom); v0.5.7 "
            "model_executor/model_runner_kv_cache_mixin.py:306-312 drops it. The Ascend logs' "
            "builds sit between the two: their server_args hold load_watch_interval (v0.5.6.post2 "
            "server_args.py:366, gone in 0.5.7) beside fields 0.5.7 added (custom_sigquit_handler, "
            "v0.5.7 server_args.py:333; speculative_draft_model_quantization :432) and fields of "
            "no release (enable_mtp, speculative_suffix_*). That such a snapshot still had the "
            "headroom is inferred, not read: their printed rest reaches the logged token count "
            "only with it. Without that print, an Ascend log with both of those server_args "
            "fields shows the build"
        ),
    ),
    SizingRule(
        id="mamba_spec_ratio",
        title="Mamba slots share their memory with the draft tokens' intermediate states",
        formula=(
            "K = int(share // per_req // (1 + draft_tokens)); state taken = K x per_req x "
            "(1 + draft_tokens) (the intermediate caches the Mamba line prints)"
        ),
        releases=ReleaseRange("0.5.4", "0.5.6"),
        source=(
            "v0.5.6 model_executor/model_runner.py:1455-1459, :1480-1485, :1491-1497; "
            "v0.5.4 :1438-1477"
        ),
    ),
    SizingRule(
        id="mamba_gdn_dp",
        title="Hybrid GDN (Qwen3-Next) Mamba slots divided among the DP-attention workers",
        formula="K = K // dp_size under DP attention, after the ratio split or the fixed count",
        releases=ReleaseRange("0.5.4", "0.5.6"),
        source="v0.5.6 model_executor/model_runner.py:1487-1490; v0.5.4 :1470-1473",
    ),
    SizingRule(
        id="mamba_spec_reserve",
        title="Speculative decoding: the intermediate Mamba states are reserved before the split",
        formula=(
            "rest -= per_req x (max_running_requests // dp) x draft_tokens, then K from the "
            "ratio share of what is left (the Mamba line's intermediate sizes stand in for it)"
        ),
        releases=ReleaseRange("0.5.7"),
        source=(
            "v0.5.7 model_executor/model_runner_kv_cache_mixin.py:164-177 (ratio split only, "
            "global requests); v0.5.8 :150-166; v0.5.11 :77-92; v0.5.23 "
            "mem_cache/kv_cache_configurator.py:3312-3344"
        ),
    ),
    SizingRule(
        id="max_total_tokens",
        title="--max-total-tokens caps the profiled value",
        formula="T = min(T, max_total_tokens)",
        releases=ReleaseRange("0.4.1"),
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:299-306; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1599-1608"
        ),
    ),
    SizingRule(
        id="page_round",
        title="Tokens rounded down to a whole page",
        formula="T = T // page_size x page_size",
        releases=ReleaseRange("0.4.6"),
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:308-312; "
            "v0.5.16 model_executor/pool_configurator.py:415-424"
        ),
    ),
    SizingRule(
        id="dcp_scope",
        title="Tokens are per rank; a DCP group holds dcp_size times as many",
        formula=(
            "per DP group = per rank x dcp_size; instance = per DP group x dp_size (DP attention)"
        ),
        releases=ReleaseRange("0.5.20"),
        source=(
            "v0.5.23 managers/tp_worker.py:553,576 and model_executor/model_runner.py:1486-1492 "
            "(0.5.23 prints the logical capacity: per rank x dcp)"
        ),
    ),
    SizingRule(
        id="max_num_reqs_default",
        title="Request-table size when --max-running-requests is not given",
        formula="max_num_reqs = min(max(int(T / context_len x 512), 2048), 4096)",
        releases=ReleaseRange("0.3.2"),
        source=(
            "v0.4.1 model_executor/model_runner.py:526-531; "
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:254-263; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1626-1635 (then min(., T // 2))"
        ),
    ),
    SizingRule(
        id="mamba_slots_no_radix",
        title="Mamba slots without radix cache and --max-running-requests",
        formula="max_mamba_cache_size = 512 // dp (DP attention)",
        releases=ReleaseRange(last="0.5.9"),
        source="v0.5.8 model_executor/model_runner_kv_cache_mixin.py:168-180",
    ),
    SizingRule(
        id="max_num_reqs_half",
        title="The default request count is also at most half the KV tokens",
        formula="max_num_reqs = min(max_num_reqs_default, T // 2)",
        releases=ReleaseRange("0.5.10"),
        source=(
            "v0.5.10 model_executor/model_runner_kv_cache_mixin.py:840-851; "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1626-1635"
        ),
    ),
    SizingRule(
        id="req_to_token_plus_one",
        title="Request table with one row beyond the request count",
        formula="rows = max_num_reqs + 1; cols = context_len + 4",
        releases=ReleaseRange("0.3.6", "0.4.6"),
        source=(
            "v0.3.6 model_executor/model_runner.py:478-480; v0.4.1 :537-539; v0.4.6.post2 "
            ":823-825 (ReqToTokenPool(size=max_num_reqs + 1)); v0.4.7 :926 (size=max_num_reqs)"
        ),
    ),
    SizingRule(
        id="req_to_token_global",
        title="Request table sized with the global --max-running-requests",
        formula="rows = max_running_requests (not // dp); cols = context_len + 4 + draft_tokens",
        releases=ReleaseRange("0.5.2", "0.5.9"),
        source=(
            "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:253,336-338; "
            "mem_cache/memory_pool.py:137"
        ),
    ),
    SizingRule(
        id="req_to_token_per_dp",
        title="Request table per DP worker, one padding row",
        formula=(
            "rows = max_running_requests // dp + 1 (+ extra slots on PD decode); cols = "
            "context_len + 4 + draft_tokens"
        ),
        releases=ReleaseRange("0.5.11"),
        source=(
            "v0.5.11 mem_cache/memory_pool.py:150; v0.5.16 mem_cache/memory_pool.py:263; "
            "v0.5.16 disaggregation/decode.py:135 (size + pre_alloc_size + 1)"
        ),
    ),
    *FRACTION_RULES,
)


# Ascend DSA geometry (DeepSeek-V3.2 config.json: kv_lora_rank 512, qk_rope_head_dim 64,
# index_head_dim 128) and the indexer's quant block: v0.5.8 mem_cache/memory_pool.py:1677
# (NSATokenToKVPool.quant_block_size = 128, 4 scale bytes per block).
DSA_KV_LORA_RANK = 512
DSA_ROPE_DIM = 64
DSA_INDEX_HEAD_DIM = 128
DSA_QUANT_BLOCK = 128
DSA_SCALE_BYTES = 4
DSA_FP8_ROW = 656
"""Bytes a layer of an fp8 DSA pool's row (512 fp8 latent, 4 x 4 B scales, 64 x 2 B rope):
v0.5.3 mem_cache/memory_pool.py:1054-1058; a plain MLA pool's fp8 row is 576 B."""

# Hybrid GDN models (rule mamba_gdn_dp), by the class the load-end line names: v0.5.6
# model_executor/model_runner.py:1500-1504 (Qwen3NextConfig, JetNemotronConfig, JetVLMConfig).
GDN_MODEL_PREFIXES: tuple[str, ...] = ("Qwen3Next", "JetNemotron", "JetVLM")

# server_args fields that together mark a main-branch build between 0.5.6.post2 and 0.5.7 (rule
# npu_spec_headroom): load_watch_interval (v0.5.6.post2 server_args.py:366, gone in 0.5.7) beside
# custom_sigquit_handler (v0.5.7 server_args.py:333, not in 0.5.6.post2). No release holds both.
SNAPSHOT_056_057_SERVER_ARGS: tuple[str, ...] = ("load_watch_interval", "custom_sigquit_handler")

# The algorithms 0.5.6 gives the headroom to (rules spec_headroom, npu_spec_headroom): those with
# the EAGLE flag (EAGLE, its alias NEXTN, EAGLE3) and STANDALONE: v0.5.6
# speculative/spec_info.py:293-311, model_executor/model_runner.py:1697.
SPEC_HEADROOM_ALGORITHMS: frozenset[str] = frozenset({"EAGLE", "NEXTN", "EAGLE3", "STANDALONE"})

# fp4_e2m1: half a byte per element plus one scale byte per 16 elements (rule fp4_cell).
FP4_BYTES_PER_ELEMENT = 0.5 + 1 / 16

# Mamba requests-per-slot ratio terms: v0.5.8 model_executor/model_runner_kv_cache_mixin.py:37-39.
MAMBA_EXTRA_BUFFER_OVERLAP = 2
MAMBA_EXTRA_BUFFER_NO_OVERLAP = 1

RULE: dict[str, SizingRule] = {rule.id: rule for rule in RULES}

# --- constants the rules use -------------------------------------------------------------------
MAX_NUM_REQS_PER_CONTEXT = 512
MAX_NUM_REQS_FLOOR = 2048
MAX_NUM_REQS_CAP = 4096
REQ_TO_TOKEN_BYTES = 4  # int32
DEFAULT_MAMBA_SLOTS_NO_RADIX = 512
MAMBA_REQS_RATIO = 3
"""max_num_reqs <= K // 3 with radix cache (1 without): v0.5.11
model_executor/model_runner_kv_cache_mixin.py:44 (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO)."""
DEFAULT_MFS_WITHOUT_GPU = 0.88
SPEC_HEADROOM_CONST = 100

# Bytes per KV element by --kv-cache-dtype (auto is the model dtype, read from the log).
KV_DTYPE_BYTES: dict[str, float] = {
    "bf16": 2,
    "bfloat16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "uint8": 1,
    "float32": 4,
    "fp4_e2m1": FP4_BYTES_PER_ELEMENT,
    "float4_e2m1fn_x2": FP4_BYTES_PER_ELEMENT,
}
"""fp4_e2m1 is 9/16 B per element (rule fp4_cell): the packed nibble plus its share of a scale."""
