"""The records: what the layers hand each other and what the JSON outputs are. Nothing here
computes: a module of this package imports only the base (errors, units, record, config_files)
and other modules of this package."""
