"""`memledger diagnose`: why the startup failed or came out small."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memledger.app.analyse import analyse
from memledger.app.load import load_any
from memledger.app.options import DiagnoseOptions, Output
from memledger.model.events import ParsedLog

if TYPE_CHECKING:
    from memledger.diagnosis import Diagnosis


def diagnosis_of(options: DiagnoseOptions) -> Diagnosis:
    """Parse the log (a saved ledger has no error text: refused), analyse it, diagnosis included."""
    log = options.log
    parsed = log if isinstance(log, ParsedLog) else load_any(log, options.load)
    if not isinstance(parsed, ParsedLog):
        return parsed.diagnosis
    diagnosis = analyse(parsed, options.load, diagnose=True).diagnosis
    assert diagnosis is not None
    return diagnosis


def run_diagnose(options: DiagnoseOptions) -> Output:
    """`memledger diagnose`: why the startup failed or came out small."""
    from memledger.render.diagnose import FORMATS

    render = FORMATS.renderer(options.fmt, options.terminal)  # a bad format fails first
    return Output(render(diagnosis_of(options)))
