"""Helpers for pytest users: fail a test with the same one-line breach message as the CLI.

from memledger.testing import assert_budget

def test_server_memory():
    assert_budget("logs/server.log", budget="memledger.toml")
"""

from __future__ import annotations

from memledger.api import BudgetFailure, BudgetWarning, assert_budget, failure_lines

__all__ = ["BudgetFailure", "BudgetWarning", "assert_budget", "failure_lines"]
