"""`memledger parse`: the selected rank's events, with the log's facts."""

from __future__ import annotations

from memledger.app.load import load_any
from memledger.app.options import Output, ParseOptions
from memledger.errors import ConfigError
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger


def run_parse(options: ParseOptions) -> Output:
    """`memledger parse`: the selected rank's events, with the log's facts."""
    from memledger.render.parse import FORMATS, ParseView

    view = ParseView(
        all_ranks=options.all_ranks, coverage=options.coverage, terminal=options.terminal
    )
    render = FORMATS.renderer(options.fmt, view)  # a bad format fails before a long parse
    if isinstance(options.log, Ledger | ParsedLog):
        raise ConfigError("parse reads a log, not an object already built")
    loaded = load_any(options.log, options.load)
    if not isinstance(loaded, ParsedLog):
        from memledger.render.vllm_parse import render_vllm

        return Output(render_vllm(loaded, options.fmt, options.terminal))
    return Output(render(loaded))
