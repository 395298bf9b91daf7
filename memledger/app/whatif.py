"""`memledger whatif`: SGLang's pools under other settings, anchored on the measured log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memledger.app.load import load_parsed
from memledger.app.options import Output, WhatIfOptions
from memledger.errors import ConfigError, InputError
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger

if TYPE_CHECKING:
    from memledger.sizing import WhatIf


def whatif_of(options: WhatIfOptions) -> WhatIf:
    """SGLang's pools under `changes`, anchored on the measured log (memledger.sizing)."""
    from memledger.model_catalogue import model_dims
    from memledger.sizing import sizing_inputs, whatif
    from memledger.sizing.solve import parse_target, solve

    if (options.solve is None) != (options.target is None):
        raise ConfigError("--solve SETTING and --for FIGURE=N go together")
    wanted = None if options.solve is None else parse_target(options.solve, options.target or "")
    source = options.log
    if isinstance(source, Ledger):
        raise ConfigError("whatif reads a log, not a ledger: it needs the log's events")
    parsed = source if isinstance(source, ParsedLog) else load_parsed(source, options.load)
    model = model_dims(options.load.model_config, parsed.startup.server_args.get("model_path"))
    inputs = sizing_inputs(parsed, model)
    if options.solve is not None and wanted is not None:
        return solve(inputs, options.changes, options.solve, *wanted)
    return whatif(inputs, options.changes)


def run_whatif(options: WhatIfOptions) -> Output:
    """`memledger whatif`: the what-if table, its arithmetic and what is not modelled; a log it
    cannot model (no P or A reading, no KV pool) is an InputError (exit 3) saying why."""
    from memledger.render.sizing import WHATIF_FORMATS

    answer = whatif_of(options)
    if answer.missing:
        # nothing to predict from: the input is not understood for this command (exit 3), one
        # line on stderr and nothing on stdout, whatever the format (review 2, m5)
        raise InputError(f"no prediction: {answer.missing}", path=answer.path)
    return Output(WHATIF_FORMATS.renderer(options.fmt, options.terminal)(answer))
