"""`memledger parse` of a vLLM log: the engine it is, its startups, and the selected startup's
readings and facts (text), or a JSON document of the same. A renderer: strings out, no I/O.
"""

from __future__ import annotations

import json
from typing import Protocol

from memledger.input.vllm_facts import startup_facts
from memledger.input.vllm_reader import Reading, Startup, VllmLog
from memledger.render.tables import Table, text_table
from memledger.render.terminal import PLAIN, Terminal, fit_lines
from memledger.sizing.vllm import VllmSizing

VLLM_PARSE_SCHEMA_VERSION = 1


class VllmRun(Protocol):
    """What these renderers read of a vLLM run (`memledger.app.vllm.VllmRun` provides it)."""

    @property
    def log(self) -> VllmLog: ...
    @property
    def index(self) -> int: ...
    @property
    def startup(self) -> Startup: ...
    @property
    def sizing(self) -> VllmSizing: ...


def _facts_text(reading: Reading) -> str:
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in reading.facts.items()
    )


def engine_line(run: VllmRun) -> str:
    """`engine: vLLM (V1, release 0.10.2)`: what memledger read the input as."""
    era = run.sizing.era
    release = run.log.version or "release not printed"
    return f"engine: vLLM ({era}, {release})"


def render_vllm_parse_text(run: VllmRun, terminal: Terminal = PLAIN) -> str:
    log = run.log
    lines = [
        engine_line(run),
        f"{log.path}: startup {run.index + 1} of {len(log.startups)} "
        f"({run.startup.outcome}), {log.n_lines:,} lines"
        + (f", ranks seen: {', '.join(log.rank_tags[:8])}" if log.rank_tags else ""),
        "",
    ]
    rows = [[str(r.line), r.kind, r.tag or "-", _facts_text(r)[:70]] for r in run.startup.readings]
    lines.append(text_table(Table(["line", "kind", "rank", "facts"], rows), width=terminal.width))
    facts = startup_facts(log, run.startup)
    if facts:
        lines += ["", "facts (rank 0's line where rank 0 printed one):"]
        fact_rows = [
            [
                name,
                f"{f.value:g}" if isinstance(f.value, float) else str(f.value),
                "-" if f.line is None else str(f.line),
            ]
            for name, f in sorted(facts.items())
        ]
        lines.append(text_table(Table(["fact", "value", "line"], fact_rows), width=terminal.width))
    return fit_lines("\n".join(lines), terminal.width) + "\n"


def render_vllm_parse_json(run: VllmRun) -> str:
    log = run.log
    document = {
        "schema_version": VLLM_PARSE_SCHEMA_VERSION,
        "engine": "vllm",
        "era": run.sizing.era,
        "release": log.version,
        "path": log.path,
        "n_lines": log.n_lines,
        "n_startups": len(log.startups),
        "startup": run.index,
        "outcome": run.startup.outcome,
        "rank_tags": log.rank_tags,
        "readings": [
            {"line": r.line, "kind": r.kind, "rank": r.tag, "facts": r.facts, "text": r.text}
            for r in run.startup.readings
        ],
        "facts": {
            name: {"value": f.value, "bytes": f.bytes, "line": f.line}
            for name, f in sorted(startup_facts(log, run.startup).items())
        },
    }
    return json.dumps(document, indent=2) + "\n"


def render_vllm(run: VllmRun, fmt: str, terminal: Terminal = PLAIN) -> str:
    """`memledger parse --format FMT` of a vLLM log (the formats of SGLang's parse)."""
    from memledger.render.escape import Destination, finish
    from memledger.render.formats import choose
    from memledger.render.parse import ParseFormat

    if choose(ParseFormat, fmt) is ParseFormat.JSON:
        return finish(Destination.JSON, render_vllm_parse_json(run))
    return finish(Destination.TERMINAL, render_vllm_parse_text(run, terminal))
