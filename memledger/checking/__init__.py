"""Checking ledgers against budgets (`memledger check`): the budget file, its evaluation, and the
results read back. Named apart from the API function `memledger.check`.

Modules:

- `budget`: Budget files.
- `evaluate`: Evaluate a budget against ledgers (and an optional baseline ledger).
- `optional_inputs`: Figures that depend on an optional input (`--model-config`), and mixes.
- `results`: A check run's results, read one check at a time, so a report can be written as it is
  read.
- `spool`: A spool.
"""
