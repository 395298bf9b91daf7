"""The click commands, one module each, imported only when that command runs.

`COMMANDS` maps each command name to `module:attribute`; `memledger.cli` resolves it lazily so
that `memledger parse` does not pay for importing the diff and check machinery.

Modules:

- `check`: `memledger check`.
- `diagnose`: `memledger diagnose LOG`.
- `diff`: `memledger diff BASE HEAD`.
- `group`: The click group behind `memledger.cli.main`.
- `ledger`: `memledger ledger LOG`.
- `options`: Options several commands share.
- `parse`: `memledger parse LOG`.
- `schema`: `memledger schema [NAME]`.
- `whatif`: `memledger whatif LOG --set NAME=VALUE ...`.
"""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "parse": "memledger.commands.parse:parse_command",
    "ledger": "memledger.commands.ledger:ledger_command",
    "diff": "memledger.commands.diff:diff_command",
    "check": "memledger.commands.check:check_command",
    "diagnose": "memledger.commands.diagnose:diagnose_command",
    "schema": "memledger.commands.schema:schema_command",
    "whatif": "memledger.commands.whatif:whatif_command",
}
