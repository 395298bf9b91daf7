"""Checking ledgers against budgets (`memledger check`): the budget file, its evaluation, and the
results read back. Named apart from the API function `memledger.check`."""
