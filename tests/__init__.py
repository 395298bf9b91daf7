"""Test suite of memledger (a package, so helpers import as `tests.<module>`)."""
