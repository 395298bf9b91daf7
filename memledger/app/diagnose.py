"""`memledger diagnose`: why the startup failed or came out small."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memledger.app.analyse import analyse
from memledger.app.load import load_any
from memledger.app.options import DiagnoseOptions, Output
from memledger.model.events import ParsedLog

if TYPE_CHECKING:
    from memledger.diagnosis import Diagnosis
    from memledger.model.ledger import Ledger


def diagnosis_of(options: DiagnoseOptions) -> Diagnosis:
    """Parse the log (a saved ledger has no error text: refused), analyse it, diagnosis included."""
    return diagnosis_and_ledger(options)[0]


def diagnosis_and_ledger(options: DiagnoseOptions) -> tuple[Diagnosis, Ledger]:
    """The diagnosis and the ledger it was made from."""
    log = options.log
    parsed = log if isinstance(log, ParsedLog) else load_any(log, options.load)
    if not isinstance(parsed, ParsedLog):
        return parsed.diagnosis, parsed.ledger  # a vLLM run: its own pipeline
    analysis = analyse(parsed, options.load, diagnose=True)
    assert analysis.diagnosis is not None
    return analysis.diagnosis, analysis.ledger


def run_diagnose(options: DiagnoseOptions) -> Output:
    """`memledger diagnose`: why the startup failed or came out small (markdown: with the
    startup's timeline and where its memory went)."""
    from memledger.render.diagnose import FORMATS, pictures_markdown

    render = FORMATS.renderer(options.fmt, options.terminal)  # a bad format fails first
    diagnosis, ledger = diagnosis_and_ledger(options)
    text = render(diagnosis)
    if FORMATS.pick(options.fmt) == "markdown":
        text += pictures_markdown(ledger)
    return Output(text)
