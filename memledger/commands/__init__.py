"""The click commands, one module each, imported only when that command runs.

`COMMANDS` maps each command name to `module:attribute`; `memledger.cli` resolves it lazily so
that `memledger parse` does not pay for importing the diff and check machinery.
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
