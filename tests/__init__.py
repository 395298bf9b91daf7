"""Test suite of memledger (a package, so helpers import as `tests.<module>`).

One folder per area, named after the package it tests; a file's name says what it tests:
- `input/`: bytes of a log to events (reader, scans, grammar, caches, pastes, error texts).
- `sglang/`: the SGLang tables (line shapes per release, release markers, platform words).
- `engine/`: events to a ledger (rows, formulas, units, the article's numbers).
- `sizing/`: the KV-pool arithmetic, its rules, GPUs and what-if solving.
- `diagnosis/`: verdicts, findings and levers, on pasted logs and SGLang issue threads.
- `diff/`: two ledgers compared, and the upgrade explanations (`memledger.compare`).
- `check/`: budgets and their verdicts (`memledger.checking`).
- `render/`: outputs as text, markdown, JSON and their schemas.
- `cli/`: each command end to end; `app/`: the Python API over the flow.
- `base/`: records, units and the user's config files.
- `vllm/`: vLLM logs (line shapes, the corpus read in place).
- `security/`: hostile input across areas (bounds, escapes, forged files, processes).
- `project/`: the repository's own standards (lint, packaging, a fresh clone, corpus access).
Shared fixtures are in `conftest.py`; an area's helpers are its `helpers.py`.
"""
