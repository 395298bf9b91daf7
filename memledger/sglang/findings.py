"""What diagnose says of each finding its own rules report about an SGLang paste: the words, how
severe, and the source they rest on, one `Said` per wording; and the words of each lever whose
value a rule computes, one `Advice` per wording.

A row's name is its finding's id (`findings[].id` in the JSON), with `.variant` after it where one
finding has several wordings. Its text is a `str.format` template: the fields in braces are the
paste's numbers, formatted by the rule that reports it; `{source}` is the row's own source. The
rules (memledger.diagnosis) decide when a finding holds and compute its numbers; the words live
here, beside what they cite. Tested by tests/sglang/test_findings.py.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from memledger.sglang.env_reports import Held
from memledger.sglang.failure_rules import (
    DRAFT_BEFORE_POOL_CAUSE,
    GRAPH_MEMORY_NOTE_GIB,
    LATE_RELEASE_CAUSE,
    MFS_STEP,
    REQ_TO_TOKEN_BYTES_PER_SLOT,
    REQ_TO_TOKEN_CITATION,
    REQ_TO_TOKEN_EXTRA_LEN,
    SMALL_PROCESS_TENANTS,
)
from memledger.sglang.lifecycle import READY_ROOM_SOURCE
from memledger.sglang.sizing_rules import RULE
from memledger.units import GIB, MIB


class Said(NamedTuple):
    name: str
    """The finding's id, `.variant` after it for a second wording."""
    severity: str
    """`error` (why it failed), `warning` (a problem it survived) or `info`."""
    text: str
    source: str = ""
    """What the words rest on (`vX path:line`, a PR, SGLang's docs), as `{source}` in the text."""

    @property
    def finding_id(self) -> str:
        return self.name.partition(".")[0]

    def words(self, **fields: object) -> str:
        return self.text.format(source=self.source, **fields)


TABLE_FORMULA = (
    f"max_running_requests x (context_len + {REQ_TO_TOKEN_EXTRA_LEN}) x "
    f"{REQ_TO_TOKEN_BYTES_PER_SLOT} B ({REQ_TO_TOKEN_CITATION})"
)
"""The request-to-token table's size, as SGLang allocates it."""


class Advice(NamedTuple):
    """A lever's words where the rule that suggests it computes its value (or says why none)."""

    name: str
    """The knob (SGLang's server-arg name), `.case` after it."""
    direction: str
    """`lower`, `raise`, `enable` or `disable`."""
    text: str
    source: str = ""

    @property
    def knob(self) -> str:
        return self.name.partition(".")[0]

    def words(self, **fields: object) -> str:
        return self.text.format(source=self.source, **fields)


_FROM_POOL = (
    "every running request's prompt and generated tokens come out of it{fit}{cap} (the "
    "scheduler's summary line, {cited})"
)
_SIZED_ON_FREE = (
    "SGLang sizes its pools on what is free when it starts: P, free before loading, and rest = A - "
    "P x (1 - mfs) (v0.5.8 model_runner_kv_cache_mixin.py:136-144); nvidia-smi's process table "
    "lists each process's memory a GPU"
)


SMI_VERDICT = (
    "{but}{held} of the GPU is held by another process (nvidia-smi lists it): free it or run on "
    "another GPU (CUDA_VISIBLE_DEVICES)"
)
"""A startup's verdict, where nvidia-smi's table shows another process (`smi_said`)."""


def smi_said(
    held: Held, free_before: int | None, mfs: float | None, loading: bool
) -> dict[str, object]:
    """The fields of `other_processes.smi` (nvidia-smi's process table, env_reports.Held): who
    holds it; after a load the fraction's step that frees it (d x P, P free before loading, else
    at least d of the GPU's total); what a pool sized beside it lost (mfs x it: rest = P x mfs -
    weights, P less by it)."""
    amount = held.mib * MIB

    def gib(n: float) -> str:
        return f"{n / GIB:.2f} GiB"

    p, of = (free_before, "P") if free_before else ((held.total_mib or 0) * MIB, "the GPU's")
    d = math.ceil(amount / p / MFS_STEP) * MFS_STEP if p else None
    step = f"{'at least ' * (of != 'P')}{d:.2f} ({gib(amount)} / {of} {gib(p)})" if d else ""
    later = "; if it took the memory after SGLang started, lower --mem-fraction-static by "
    lost = (
        f"; the KV pool is about mfs {mfs:g} x {gib(amount)} = {gib(mfs * amount)} smaller"
        if mfs
        else ""
    )
    return {
        "who": held.who,
        "gpu": held.gpu,
        "held": gib(amount),
        "step": "" if loading else later + (step or "that much"),
        "pool": lost,
    }


_HELD = "{held} of this GPU is held outside this process ({capacity} - {free} free - {own}): "

SAYINGS: tuple[Said, ...] = (
    # where a failure falls, what else holds the GPU, allocations whose own site answers:
    # memledger.diagnosis.phase, occupancy, sites, reserve, crash
    Said(
        "phase_from_graphs",
        "info",
        "after the weights: the OOM text shows {pools} in PyTorch's private pools, which SGLang "
        "fills only once the weights are in ({source}); it does not say which stage after them "
        "(setup after the pool, graph capture or serving)",
        "PyTorch prints `with X allocated in private pools (e.g., CUDA Graphs)` only when such a "
        "pool holds memory; SGLang's are the CUDA graphs' pool from the first capture on (v0.4.6 "
        "model_executor/cuda_graph_runner.py:455, v0.5.8 :731), the NCCL symmetric-memory pool "
        "(v0.5.8 distributed/device_communicators/pynccl_allocator.py:123) and a disaggregated "
        "KV pool's (v0.5.8 mem_cache/memory_pool.py:221); a kernel's init right after the "
        "weights has shown 24 MiB there before any capture",
    ),
    Said(
        "other_processes.small",
        "error",
        _HELD + "the process that ran out holds only {own_bytes}: the GPU's memory is another "
        "process's, most often an SGLang server on the same GPU ({source}); leave room by "
        "lowering that server's --mem-fraction-static by at least the bytes asked, or put the two "
        "on different GPUs",
        SMALL_PROCESS_TENANTS,
    ),
    Said(
        "other_processes",
        "error",
        _HELD + "another process (a second server, a notebook, a desktop) took it, and SGLang's "
        "pool was sized on the memory free when it started; free the GPU (nvidia-smi lists who "
        "holds it) or lower --mem-fraction-static by that much",
    ),
    Said(
        "other_processes.smi",
        "error",
        "nvidia-smi lists {who} on GPU {gpu} beside this server: {held} that SGLang did not have "
        "({source}); free that process's memory or run on another GPU (CUDA_VISIBLE_DEVICES){step}",
        _SIZED_ON_FREE,
    ),
    Said(
        "other_processes.smi_ready",
        "warning",
        "nvidia-smi lists {who} on GPU {gpu} beside this server: {held} that SGLang did not have "
        "({source}){pool}; free that process's memory or run on another GPU "
        "(CUDA_VISIBLE_DEVICES) for a larger pool",
        _SIZED_ON_FREE,
    ),
    Said(
        "dp_auto_fraction",
        "warning",
        "if --mem-fraction-static {mfs:g} was SGLang's automatic value: under DP attention it "
        "reserved max({chunk} x dp {dp}, 2048) x 1.5 MiB for prefill activations where a rank "
        "runs a chunk of {chunk}, {over} too much ({source}); set the fraction by hand: {target}",
        "the automatic fraction is computed before DP attention divides --chunked-prefill-size by "
        "--dp-size (v0.5.8 server_args.py:710 before :727, :1937; v0.5.16 :2966 before :3005, "
        ":5609; v0.5.17 :3527 before :3566, the chunk read at :4770, divided at :6466; v0.5.19 "
        "arg_groups/pipeline.py:228 before :284, memory_hook.py:246-251, parallel_hook.py:202), "
        "so it reserves prefill activations for dp times the chunk a rank runs; sglang#28884 "
        "mirrors the division, in no release through 0.5.19",
    ),
    Said(
        "after_pool_drop",
        "warning",
        "{drop} of free memory was taken between Memory pool end ({pool:.2f} GiB free) and the "
        "first graph capture reading ({first} free{bar}): {phase} allocates {stage.allocates}, "
        "bounded by {stage.bound} ({stage.source}); several GiB there is a buffer sized by the "
        "pool or the context, most often an attention backend's workspace{step}",
    ),
    Said(
        "req_to_token_table",
        "error",
        "the allocation that failed is the request-to-token table, {source}{asked}; a long "
        "--context-length or many --max-running-requests make it large",
        TABLE_FORMULA,
    ),
    Said(
        "allocation_exceeds_gpu.wrong",
        "error",
        "one allocation of {requested} is {times:,.0f} times the whole GPU ({capacity}): a size "
        "computed wrong (a bug, or a configuration value far out of range), not something a "
        "memory flag makes fit",
    ),
    Said(
        "allocation_exceeds_gpu",
        "error",
        "one allocation of {requested} is larger than the whole GPU ({capacity}): no "
        "--mem-fraction-static, graph cap or chunk size makes it fit; it is a buffer sized by a "
        "length, at startup most often the request-to-token table, {source}",
        TABLE_FORMULA,
    ),
    Said(
        "oversized_forward",
        "error",
        "one allocation of {requested} with {free} still free: the pools left room, and one "
        "tensor that large is a forward's working set sized by its tokens, a long prefill chunk "
        "(a decode step holds one token a request), such as a sparse attention indexer's [chunk "
        "tokens x context] logits, which no KV budget counts; a smaller chunk shrinks it in "
        "proportion ({source})",
        "SGLang's troubleshooting guide (docs/references/troubleshooting.md): an OOM during "
        "prefill: lower --chunked-prefill-size; input logprobs of a long prompt take much memory "
        "too (logprob_start_len)",
    ),
    Said(
        "no_fraction_fits.stuck",
        "warning",
        "at --mem-fraction-static {value:g} the slack P x (1 - mfs) = {slack} is below the "
        "{reserve} SGLang itself reserves for activations and graphs on this GPU (P x (1 - "
        "{default:g}): {basis}, for P = {p}; rule {rule}, {rule_source}): expect an OOM in graph "
        "capture or the first prefill there; no fraction fits both, so fewer weight bytes a rank "
        "(more tp, a quantized checkpoint) or a smaller slack need (lower --cuda-graph-max-bs, "
        "--chunked-prefill-size) is the fix",
    ),
    Said(
        "shared_memory",
        "error",
        "the host's shared memory /dev/shm ran out{segment}, not the GPU's: give the container a "
        "bigger /dev/shm: `docker run --shm-size 32g` (or --ipc=host); in Kubernetes mount an "
        "emptyDir of medium Memory at /dev/shm ({source})",
        "SGLang's docker instructions run with --shm-size 32g "
        "(https://github.com/sgl-project/sglang/pull/1986: 'with 70B TP 8, the default setup can "
        "cause NCCL errors'); NCCL's segments need it "
        "(https://github.com/sgl-project/sgl-project.github.io/issues/5)",
    ),
    # SGLang's own pools (and the host's RAM) running out: memledger.diagnosis.pools
    Said(
        "pool_not_full.admitted",
        "error",
        "SGLang's KV pool raised on a batch its scheduler had admitted: {source}",
        "SGLang 0.1 admits a request only while its tokens fit in the pool's free plus evictable "
        "tokens (v0.1.14 managers/router/model_rpc.py:308-352), and raises this after evicting "
        "what it could, so the raise says its own count was wrong: tokens the pool lost track of "
        "(a KV cache leak, which the same release warns of as `KV cache pool leak detected!`, "
        "model_rpc.py:233-242), not a pool too small; a bigger pool or a smaller batch does not "
        "address it: upgrade, or restart the server to get the lost tokens back",
    ),
    Said(
        "pool_ran_out.req_slots",
        "error",
        "SGLang ran out of request slots (alloc_req_slots): more requests were admitted than the "
        "request-to-token table has rows; SGLang's own advice is a smaller --max-running-requests",
    ),
    Said(
        "pool_ran_out",
        "error",
        "SGLang's KV pool was full at {shape}{counted}: the pool sized at startup, not the "
        "allocator, ran out; a bigger pool or fewer tokens at once helps, a lower "
        "--mem-fraction-static makes it worse",
    ),
    Said(
        "pool_not_full",
        "error",
        "SGLang's KV pool was not full: {free:,} tokens free for the {asked:,} asked{pages}. The "
        "raise is its page accounting: {source}{bug}",
        "a paged decode takes a whole page a request at a page boundary (v0.5.8 "
        "mem_cache/common.py:404-406)",
    ),
    Said(
        "swa_pool_ran_out",
        "error",
        "the {short} pool ran out ({low:,} tokens free for the {asked:,} asked) while the {roomy} "
        "pool had {high:,}: the split between them, {source}",
        "--swa-full-tokens-ratio, the sliding-window pool's size over the full pool's (default "
        "0.8, in (0, 1]: v0.5.8 server_args.py:325, :2424-2425)",
    ),
    Said(
        "request_exceeds_pool",
        "info",
        "{count} request(s) refused as too long ({tokens:,} tokens, at most {limit:,} "
        "accepted){bound}",
    ),
    Said(
        "kv_pool_full",
        "warning",
        "the KV pool filled while serving and SGLang retracted requests ({count} time(s)): the "
        "pool is small for this load",
    ),
    Said(
        "host_memory",
        "warning",
        "the host ran out of RAM (not the GPU): no GPU memory knob helps; check the host's free "
        "memory, and raise the container's memory limit (a pod's request and limit) if it has "
        "one; SGLang keeps its own share there with --cpu-offload-gb and HiCache's host pool",
    ),
    # what a startup can survive: memledger.diagnosis.health
    Said(
        "free_rose_after_pool",
        "warning",
        "free memory rose by {rise} after {point.id} ({point.avail_gib:.2f} -> "
        "{peak.avail_gib:.2f} GiB at {peak.id}): memory freed after SGLang sized the pool never "
        "reaches it ({source})",
        LATE_RELEASE_CAUSE,
    ),
    Said(
        "free_rose_after_pool.draft",
        "info",
        "the draft model ({type}{held}) was loaded before the KV pool was sized, so the pool "
        "came out smaller by the draft's own embed_tokens/lm_head: {source}",
        DRAFT_BEFORE_POOL_CAUSE,
    ),
    Said(
        "zero_headroom",
        "warning",
        "only {free} free after startup ({point}): the first large batch will run out of memory",
    ),
    Said(
        "mfs_far_below_default",
        "info",
        "--mem-fraction-static {mfs:g} is far below SGLang's default for this GPU (about "
        "{default:.3f} by rule {rule}, {rule_source}, for {gpu}): the KV pool is about {gain} "
        "smaller than it could be",
    ),
    Said(
        "kv_capacity",
        "info",
        "the KV pool holds {tokens:,} tokens a rank: " + _FROM_POOL,
    ),
    Said(
        "kv_capacity.short",
        "warning",
        "the KV pool ({tokens:,} tokens a rank) cannot hold one request of the full "
        "{context:,}-token context; " + _FROM_POOL,
    ),
    Said(
        "room_at_ready",
        "info",
        "{free} free at ready ({point}): more than the 5-8 GB "
        "SGLang's tuning guide keeps for activations and CUDA graphs ({source}); the KV pool can "
        "take about {spare} more",
        READY_ROOM_SOURCE,
    ),
    Said(
        "indexer_left_out",
        "warning",
        "the KV pool also holds the DSA indexer's keys (DeepSeek-V3.2's sparse attention), "
        "which SGLang {releases} left out of its per-token size and its KV line{maybe}: the pool "
        "took "
        "{left} more than its budget ({says}: {source}), out of what was kept for activations "
        "and graphs: upgrade to 0.5.3.post1 or later",
        RULE["dsa_indexer_left_out"].source,
    ),
    Said(
        "graph_memory",
        "info",
        "the CUDA graphs took {usage}, more than the "
        f"{GRAPH_MEMORY_NOTE_GIB} GiB SGLang's default keeps for bs-256 graphs ({{source}}): "
        "{bug}: upgrade, or capture fewer graphs",
        "v0.4.6.post2 server_args.py:241-247",
    ),
    # SGLang inside an RL framework (memledger.sglang.frameworks): memledger.diagnosis.stages
    Said(
        "embedded_in_framework",
        "info",
        "SGLang runs inside {framework.name}{beside}: {settings} ({framework.source})",
    ),
    Said(
        "trainer_oom",
        "error",
        "the allocation failed in {framework.name}'s trainer ({trainer}), not in SGLang: the "
        "trainer's own memory is what to lower ({framework.trainer_levers}); a smaller SGLang "
        "share ({share}) also leaves it more",
    ),
    # a startup that ran out of memory, by phase: memledger.diagnosis.memory
    Said(
        "oom_other_ranks",
        "info",
        "{count} other rank(s) ran out of memory too: {ranks}",
    ),
    Said(
        "fragmentation",
        "warning",
        "{unallocated} is reserved by PyTorch but unallocated, at least the {requested} asked for: "
        "fragmentation (PyTorch's own advice: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
    ),
    Said("failure_site", "info", "innermost SGLang frame: {frame} ({rank})"),
    Said(
        "weights_exceed_budget.refused",
        "error",
        "SGLang refused to size the KV cache: the loaded weights leave no room under "
        "--mem-fraction-static{current}{notes}",
    ),
    Said(
        "allocation_exceeds_slack",
        "error",
        "an allocation after the pool did not fit the slack mfs leaves: P x (1 - mfs) = {p} x "
        "{rest:.4f} = {slack}{at_end}",
    ),
    Said("capture_point", "info", "capturing {where}{at}"),
    Said(
        "mfs_not_the_lever",
        "info",
        "--mem-fraction-static does not help: the weights load before SGLang sizes anything "
        "from it",
    ),
    Said(
        "weights_exceed_budget.load",
        "error",
        "the weights need at least {weights} a rank ({allocated} allocated + {requested} asked for "
        "when loading failed){free}",
    ),
    Said(
        "no_fraction_fits",
        "error",
        "a higher --mem-fraction-static ran out of memory after the pool and a lower one left no "
        "KV budget{band}: the weights leave about nothing for the KV pool and what comes after "
        "it, so no fraction fits both; shrink what comes after the pool (graphs, batches, the "
        "draft's pools) or the weights a rank",
    ),
    # a crash: memledger.diagnosis
    Said(
        "killed",
        "warning",
        "the process was killed (SIGKILL): often the host's OOM killer (host RAM, see dmesg); the "
        "log has no GPU out-of-memory text",
    ),
    Said("not_memory", "info", "not a memory problem: {cause}; no out-of-memory text in the log"),
    Said(
        "error_not_in_log",
        "info",
        "the error that ended the startup is not in the log: {cause}; no out-of-memory text either",
    ),
)

SAID: dict[str, Said] = {said.name: said for said in SAYINGS}

ADVICE: tuple[Advice, ...] = (
    Advice(
        "mem_fraction_static.pool_full",
        "raise",
        "the KV pool is mfs x P minus the weights: a higher mfs buys tokens{gain}, at the cost of "
        "the slack left for graphs and activations",
    ),
    Advice(
        "chunked_prefill_size.pool_full",
        "lower",
        "a prefill chunk takes its tokens from the pool at once",
    ),
    Advice(
        "page_size.not_full",
        "lower",
        "at --page-size 1 a decode step takes one token a request, never a whole page{upgrade}",
    ),
    Advice(
        "context_length.pool",
        "lower",
        "SGLang refuses a request longer than its max_req_input_len ({cited}): a context of "
        "{tokens:,} tokens or fewer, the pool's, rounded down to 1,024 = {value:,}; the pool is "
        "unchanged",
    ),
    Advice(
        "mem_fraction_static.dp_auto",
        "raise",
        "the automatic fraction over-reserved {over} under DP attention: {target} (SGLang's "
        "gpu_mem, the GPU's capacity, is not in the log)",
    ),
    Advice(
        "chunked_prefill_size.forward",
        "lower",
        "the allocation grows with the prefill chunk's tokens: {free} free of {requested} asked is "
        "{share:.2f} of it{chunk}; or a release whose kernel chunks it under a free-memory budget "
        "({source} for the DSA indexer)",
        "sglang PR #38507",
    ),
    Advice(
        "mem_fraction_static.refused",
        "raise",
        "{working} ({source}); {value:g} is the first 0.01 step above it: a KV budget of about "
        "{budget}{gain}; the slack P x (1 - mfs) left for graphs shrinks by the same amount",
        "minimum viable = 1 - A/P: v0.5.23 mem_cache/kv_cache_configurator.py:3044-3056",
    ),
    Advice(
        "mem_fraction_static.lower",
        "lower",
        "{reason}: lowering mfs by d frees d x P after the pool ({budget}); {missing} / P {p} = "
        "{delta:.4f} -> {mfs:g} - {delta:.4f} = {raw:.4f}, rounded down to {value:g}; the KV pool "
        "shrinks by {loss}{share}{floor}",
    ),
    Advice(
        "tp_size.weights",
        "raise",
        "weights must stay under {room_text} for a KV budget ({budget}); tp {tp} x {weights} / "
        "{room} = {ratio:.2f} ranks -> {value} (a lower bound: loading had not finished; assumes "
        "the weights shard evenly)",
    ),
    Advice(
        "tp_size.weights_no_tp",
        "raise",
        "weights must stay under {room_text} for a KV budget ({budget}); {weights} / {room} = "
        "{ratio:.2f}: at least {at_least} x the ranks now in use (the log does not show the "
        "current --tp-size)",
    ),
    Advice(
        "cpu_offload_gb.weights",
        "raise",
        "{weights} needed - {room} allowed ({room_text}) = {over} a rank to keep in host RAM, "
        "rounded up (a lower bound)",
    ),
    Advice(
        "max_total_tokens.cut",
        "lower",
        "{missing} / {cell:,.0f} B per KV token (this log's KV lines) = {cut:,} tokens -> "
        "{tokens:,} - {cut:,} = {value:,}{page}; SGLang caps the pool at it ({rule.formula}: "
        "{rule.source}), leaving those bytes free after the pool; the KV pool holds fewer tokens, "
        "nothing else changes",
    ),
)

ADVISED: dict[str, Advice] = {advice.name: advice for advice in ADVICE}
