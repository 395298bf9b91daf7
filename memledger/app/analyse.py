"""One log analysed once: the parsed log, its sizing inputs, its ledger, the sizing verdict and
(when a command wants it) the diagnosis, each computed one time and handed to whoever needs it.

The engine builds the account alone (events in, account out); the flow fills the ledger's
`sizing` and `diagnosis` keys from the analysis, so the JSON contract keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memledger.app.options import LoadOptions
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger
from memledger.model.sizing import SizingResult

if TYPE_CHECKING:
    from memledger.diagnosis.model import Diagnosis
    from memledger.sizing import SizingInputs


@dataclass(frozen=True)
class Analysis:
    """What one command knows about one log, each part computed once."""

    parsed: ParsedLog
    inputs: SizingInputs
    """The numbers SGLang sized the pools with (`memledger.sizing.sizing_inputs`)."""
    ledger: Ledger
    """The account, with `sizing` and (when diagnosed) the diagnosis in brief filled in."""
    sizing: SizingResult | None
    """SGLang's arithmetic redone; None when the readings interleave several ranks'."""
    diagnosis: Diagnosis | None
    """The whole diagnosis (`memledger diagnose`); None unless asked for."""


def analyse(parsed: ParsedLog, options: LoadOptions, *, diagnose: bool = False) -> Analysis:
    """Build the ledger of a parsed log (packaged formulas plus `formula_files`, optional model
    dims), redo its sizing, and with `diagnose` diagnose it (its brief goes on the ledger)."""
    from memledger.engine import build_ledger
    from memledger.engine.chain import one_rank_readings
    from memledger.formulas import load_formulas
    from memledger.model_catalogue import model_dims
    from memledger.sizing import size_log, sizing_inputs

    dims = model_dims(options.model_config, parsed.startup.server_args.get("model_path"))
    ledger = build_ledger(parsed, formulas=load_formulas(options.formula_files), model_config=dims)
    inputs = sizing_inputs(parsed, dims)
    # Interleaved ranks' readings are no one rank's: no sizing is redone from them.
    sizing = size_log(inputs) if one_rank_readings(parsed.startup) else None
    if sizing is not None:
        ledger = replace(ledger, sizing=sizing)
    if not diagnose:
        return Analysis(parsed, inputs, ledger, sizing, None)
    from memledger.diagnosis import brief
    from memledger.diagnosis import diagnose as diagnosis_of

    diagnosis = diagnosis_of(parsed, ledger, inputs)
    summary = brief(diagnosis)  # when the startup failed or came out starved
    if summary is not None:
        ledger = replace(ledger, diagnosis=summary)
    return Analysis(parsed, inputs, ledger, sizing, diagnosis)
