"""`memledger ledger`: one log's ledger rendered, or the fleet view of several."""

from __future__ import annotations

from memledger.app.load import load_ledger
from memledger.app.options import LedgerOptions, Output
from memledger.errors import ConfigError


def run_ledger(options: LedgerOptions) -> Output:
    """`memledger ledger`: load or build the ledger, then render it (or explain one row)."""
    from memledger.app.fleet import is_fleet, run_fleet
    from memledger.render import FORMATS, LedgerView

    sources = [options.log, *options.more_logs]
    if is_fleet(sources):
        if options.explain is not None or options.full:  # one log's views (review 2, m9)
            raise ConfigError(f"--{'full' if options.explain is None else 'explain'} takes one LOG")
        return run_fleet(sources, options.load, options.fmt, options.terminal)
    view = LedgerView(explain=options.explain, terminal=options.terminal, full=options.full)
    render = FORMATS.renderer(options.fmt, view)
    text = render(load_ledger(options.log, options.load))
    if options.fmt == "text" and options.explain is None:
        text = options.terminal.colourise(text)
    return Output(text)
