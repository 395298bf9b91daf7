"""What memledger knows about vLLM's logs, as data, in one place (the sibling of `sglang/`).

The tables have the shapes of SGLang's: one entry per item, each with the releases it holds for
(`first`..`last`, None: open) and the wheel line it comes from (`vX path:line`). Wheels read:
0.5.4, 0.6.4.post1, 0.7.3, 0.10.2, 0.11.0, 0.29.0 (`pip download vllm==X --no-deps`).

- `lines.py`: `LINES`, one `VllmLine` per wording of a memory line (weights, the V0 profile, the
  V1 `Available KV cache memory`, blocks, tokens, concurrency, CUDA graphs, the post-capture
  summary with the `--kv-cache-memory` suggestion, the engine's config line). SGLang's
  `lines.LINES` + `grammars/sglang.lark`, for an engine whose lines are fixed sentences read by
  regular expressions.
- `errors.py`: `ERRORS`, one `VllmError` per failure text (no cache memory, the max-seq-len
  ValueError of V0 and of V1 in its 2025 and 2026 wordings, the free-memory check, PyTorch's and
  CUDA's out-of-memory texts), with the startup phase; the traceback frame words
  that place an OOM (`GRAPH_FRAMES`, `PROFILE_FRAMES`, `LOAD_FRAMES`).
- `sizing_rules.py`: `RULES`, vLLM's KV sizing step by step (`SizingRule`, SGLang's shape).
- `findings.py`: `VLLM_SAYINGS`, what diagnose says of each finding of a vLLM startup, one
  `memledger.sglang.findings.Said` a wording.
- `knobs.py`: `KNOBS`, the settings a diagnosis may name, what each moves, its default;
  `LEVERS`, each failure's knobs in the order to try, with the direction and why.

The code that reads the tables: `memledger/input/vllm_reader.py` (lines -> readings ->
startups), `memledger/input/vllm_facts.py` (one value per fact, rank 0's first),
`memledger/input/engine_detect.py` (SGLang, vLLM or neither), `memledger/sizing/vllm.py` (the
arithmetic), `memledger/engine/vllm.py` (the ledger), `memledger/diagnosis/vllm.py`.

## Adding a line
A new wording of a known line (vLLM 0.14 added `memory` to `Model loading took X GiB memory`):
1. `lines.py`: a `VllmLine` with the same `kind`, the wording's regex (its named groups are the
   facts: `_gib`/`_gb`/`_mib` sizes, `_bytes`, `_n` counts, else a float as printed), a
   case-sensitive prefilter word, the first release that prints it, and the wheel line. Close
   the older entry's `last` if the release dropped it.
2. Never match the `[file.py:N]` tag of the prefix: it moves with every release. Match the
   sentence; the prefix (`(EngineCore_DP0 pid=N)`, docker-compose, Buildkite, ...) is ignored.
3. A test with a synthetic line of that shape in tests/vllm/test_lines.py.
A new fact name is read by every step that knows the name; the facts view
(`vllm_facts.startup_facts`) needs nothing new.

## Adding a failure text
An entry in `errors.ERRORS` with its phase, and its levers in `knobs.LEVERS`; if vLLM (or the
pasting) breaks the message over lines, `continued` is a regex for where the first line ends. A
test on a synthetic message.

## Adding a sizing rule
A `SizingRule` in `sizing_rules.py` (a moved rule gets a new entry, the old one keeps its
`last`), applied in memledger/sizing/vllm.py, with a test in tests/vllm/.

Modules:

- `errors`: vLLM's failure texts.
- `findings`: What diagnose says of each finding of a vLLM startup.
- `knobs`: vLLM's memory knobs.
- `lines`: Every vLLM log line memledger reads.
- `sizing_rules`: vLLM's KV-cache sizing, step by step and release by release, as data.
"""
