"""The records: what the layers hand each other and what the JSON outputs are. Nothing here
computes: a module of this package imports only the base (errors, units, record, config_files)
and other modules of this package.

Modules:

- `check`: The check report's model.
- `events`: Typed events.
- `fleet`: One line of the fleet view (`memledger ledger` over several logs), as it travels back
  from a worker.
- `ledger`: The ledger model.
- `model_config`: Model dimensions from a Hugging Face `config.json`, for formulas that need them
  (`model.*`).
- `parse`: The JSON document of `memledger parse --format json` (versioned).
- `sizing`: The sizing records.
"""
