"""Ledger x Ledger -> LedgerDiff, pure: `models` (the JSON contract), `categories` (how rows
are grouped and labelled), `compute` (matching rows and the state-pool analysis). What a
parameter change moves is SGLang knowledge: `memledger.sglang.effects`.

Modules:

- `categories`: How a diff groups rows.
- `compute`: Diff two ledgers.
- `models`: The diff's models (what `memledger diff --format json` writes).
- `upgrade`: Why KV tokens per rank changed between two logs (an upgrade, or other server_args).
- `upgrade_against`: One log against another release.
- `upgrade_gpu`: The GPU of a log that prints no capacity.
- `upgrade_models`: The diff's `upgrade` key.
- `upgrade_releases`: The releases of the two sides of an upgrade.
- `engines`: Why the KV cache differs between an SGLang and a vLLM startup (`memledger diff` when
  the two sides are different engines).
"""
