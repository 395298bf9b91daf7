"""Tables of the sizing section (ledger) and of `whatif`, as plain strings (no recomputation)."""

from __future__ import annotations

import textwrap

from memledger.model.sizing import CATALOGUE_NOTE, SizingResult, Term
from memledger.render.formats import Formats, ReportFormat, report_formats
from memledger.render.tables import (
    ABSENT,
    Table,
    github_table,
    inert_block_start,
    markdown_cell,
    text_table,
)
from memledger.render.terminal import PLAIN, Terminal, fit_lines
from memledger.sglang.sizing_rules import RULE
from memledger.sizing.whatif import WhatIf, WhatIfRow
from memledger.units import format_gib

WIDTH = 100
REQ_TABLE_LOGGED = "req_to_token (logged)"
REQ_TABLE_PREDICTED = "req_to_token (predicted)"
REQ_TABLE_NOTE = (
    "req_to_token (logged): SGLang's request-table rule applied to the logged "
    "max_total_num_tokens; (predicted): to the predicted count"
)


def _value(term: Term) -> str:
    value = term.value
    if value is None:
        return ABSENT
    if term.unit == "bytes" and isinstance(value, int | float):
        return f"{format_gib(int(value))} GiB"
    if term.unit == "bytes/token" and isinstance(value, int | float):
        return f"{value:,.1f} B"
    if term.unit == "MiB" and isinstance(value, int):
        return f"{value:,} MiB"
    if term.unit == "fraction" and isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _source(term: Term) -> str:
    """Short source: the log line, or the rule id (its citation goes in the footnote)."""
    return f"rule {term.rule}" if term.rule else term.source


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _verdict(result: SizingResult) -> str:
    predicted, logged = result.predicted_max_total_num_tokens, result.logged_max_total_num_tokens
    if predicted is None:
        return "no prediction"
    if logged is None:
        return f"predicted {predicted:,} tokens per rank (the log prints no total)"
    off = (predicted - logged) / logged * 100 if logged else 0.0
    state = "no match" if result.mismatch else "matches"
    return f"{state}, predicted {predicted:,} vs logged {logged:,} tokens/rank ({off:+.2f} %)"


def _rule_source(name: str) -> str:
    rule = RULE.get(name)
    return rule.source if rule is not None else "not a rule of this memledger"


def _table_shape(rows: int | None, cols: int | None) -> str:
    """`rows x cols x 4 B` (req_to_token is int32), with "1 row" for a one-request table."""
    unit = "row" if rows == 1 else "rows"
    return f"{rows:,} {unit} x {cols:,} x 4 B"


def _request_table_rows(result: SizingResult) -> list[list[str]]:
    """req_to_token from the logged token count (derived) and, where it differs, from the
    predicted one (modelled): each row says which count it was sized from."""
    pred, found = result.prediction, []
    logged = result.logged_req_to_token_bytes
    if logged is not None:
        shape = _table_shape(result.logged_req_to_token_rows, result.logged_req_to_token_cols)
        found.append([REQ_TABLE_LOGGED, f"{format_gib(logged)} GiB", "derived", shape])
    if pred.req_to_token_bytes is not None and (
        logged is None or pred.req_to_token_rows != result.logged_req_to_token_rows
    ):
        shape = _table_shape(pred.req_to_token_rows, pred.req_to_token_cols)
        found.append(
            [REQ_TABLE_PREDICTED, f"{format_gib(pred.req_to_token_bytes)} GiB", "modelled", shape]
        )
    return found


def _title(result: SizingResult) -> str:
    """The verdict line, whole (text wraps it; markdown has no width); a long one (a release
    range) drops `/rank`."""
    title = f"KV sizing (SGLang {result.version}): {_verdict(result)}"
    if len(title) > WIDTH:
        title = title.replace(" tokens/rank (", " tokens (", 1)
    return title


def sizing_table(result: SizingResult) -> Table:
    """The budget arithmetic with this log's numbers, each term with its line or rule."""
    pred = result.prediction
    rows = [[t.name, _value(t), t.kind, _source(t)] for t in pred.terms]
    if result.theoretical_bytes_per_token is not None:
        rows.append(
            [
                "bytes/token ("
                + (
                    "model catalogue"
                    if result.theoretical_note.startswith(CATALOGUE_NOTE)
                    else "--model-config"
                )
                + ")",
                f"{result.theoretical_bytes_per_token:,} B",
                "modelled",
                result.theoretical_note,
            ]
        )
    if result.predicted_range is not None:
        low, high = result.predicted_range
        rows.append(["± range (printing)", f"{low:,} .. {high:,}", "modelled", "±"])
    if result.logged_max_total_num_tokens is not None:
        rows.append(
            [
                "logged max_total_num_tokens",
                f"{result.logged_max_total_num_tokens:,}",
                "measured",
                result.logged_source,
            ]
        )
    if pred.tokens_per_instance is not None and pred.tokens_per_instance != pred.tokens:
        rows.append(
            [
                "KV tokens per DP group",
                f"{pred.tokens_per_dp_group:,}",
                "modelled",
                "rule dcp_scope",
            ]
        )
        rows.append(
            [
                "KV tokens per instance",
                f"{pred.tokens_per_instance:,}",
                "modelled",
                "rule dcp_scope",
            ]
        )
    rows.extend(_request_table_rows(result))
    if result.min_mem_fraction_static is not None:
        rows.append(
            [
                "minimum viable mfs = 1 - A/P",
                f"{result.min_mem_fraction_static:.4f}",
                "modelled",
                "SGLang's refusal (see footnote)",
            ]
        )
    if result.fitted_mem_fraction_static is not None:
        rows.append(
            [
                "mfs that gives the logged pool",
                f"{result.fitted_mem_fraction_static:.4f}",
                "inferred",
                "SGLang's arithmetic solved for mfs",
            ]
        )
    if result.implied_mem_fraction_static is not None:
        rows.append(
            [
                "mfs the logged pools imply",
                f"{result.implied_mem_fraction_static:.4f}",
                "inferred",
                "1 - (A - pools as printed) / P",
            ]
        )
    if result.slack_bytes is not None and result.slack_used_bytes is not None:
        rows.append(
            [
                "slack used after sizing",
                f"{format_gib(result.slack_used_bytes)} of {format_gib(result.slack_bytes)} GiB",
                "measured",
                f"A - pools - free at end {format_gib(result.free_last_bytes)} GiB",
            ]
        )
    used = sorted({rule for _, _, _, rule in rows if rule.startswith("rule ")})
    # a saved ledger may name a rule this memledger does not know: say so, never KeyError
    notes = [f"{name}: {_rule_source(name.removeprefix('rule '))}" for name in used]
    if any(row[0] in (REQ_TABLE_LOGGED, REQ_TABLE_PREDICTED) for row in rows):
        notes.append(REQ_TABLE_NOTE)
    if result.min_mem_fraction_static is not None:
        notes.append(
            "minimum viable mfs: SGLang's own refusal text, "
            "v0.5.16 mem_cache/kv_cache_configurator.py:1553-1567"
        )
    footnote_parts = []
    if result.mismatch:
        footnote_parts.append(f"Why: {result.mismatch}")
    footnote_parts += pred.notes
    footnote_parts += notes
    footnote = "\n".join(
        # a part never starts with whitespace, so an indented line is always its wrapping
        textwrap.fill(" ".join(part.split()), WIDTH, subsequent_indent="  ")
        for part in footnote_parts
    )
    return Table(
        headers=["term", "value", "kind", "source"],
        rows=[[_fit(row[0], 28), _fit(row[1], 22), row[2], _fit(row[3], 36)] for row in rows],
        align=["left", "right", "left", "left"],
        title=_title(result),
        footnote=footnote or None,
    )


def _cell(row: WhatIfRow, value: int | float | None) -> str:
    if value is None:
        return ABSENT
    if row.unit == "bytes":
        return f"{format_gib(int(value))} GiB"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def _delta(row: WhatIfRow) -> str:
    if row.delta is None:
        return ""
    text = (
        f"{format_gib(int(row.delta), signed=True)} GiB"
        if row.unit == "bytes"
        else f"{row.delta:+,}"
    )
    return text + (f" ({row.delta_pct:+.2f} %)" if row.delta_pct is not None else "")


def whatif_table(answer: WhatIf) -> Table:
    rows = []
    for row in answer.rows:
        spread = ""
        if row.low is not None and row.high is not None and row.predicted is not None:
            half = (row.high - row.low) / 2
            spread = f"±{half / (1 << 30):.2f} GiB" if row.unit == "bytes" else f"±{half:,.0f}"
        rows.append(
            [
                _fit(row.name, 30),
                _cell(row, row.measured) if row.measured is not None else "-",
                _cell(row, row.predicted),
                _delta(row),
                spread,
                row.kind,
            ]
        )
    changes = ", ".join(f"{k}={v}" for k, v in answer.changes.items()) or "no change"
    return Table(
        headers=["figure", "measured", "what-if", "Δ (Δ%)", "±", "kind"],
        rows=rows,
        align=["left", "right", "right", "right", "right", "left"],
        title=f"What if {changes}",
        keep=(1, 2, 3, 4),  # numbers are never cut to fit a terminal; the names give way
    )


def _arithmetic_lines(answer: WhatIf) -> list[str]:
    return [f"{t.name} = {_value(t)}  [{t.kind}; {_source(t)}]" for t in answer.arithmetic]


def _verdict_whatif(answer: WhatIf) -> str:
    solved = answer.solved
    if solved is not None:
        if solved.value is None or solved.reached is None:
            return solved.note
        return (
            f"lowest {solved.setting} for {solved.figure} >= {solved.target:,}: "
            f"{solved.value:.3f} (gives {solved.reached:,})"
        )
    rows = {row.name: row for row in answer.rows}
    tokens = rows.get("KV tokens per rank")
    if answer.missing or tokens is None or tokens.predicted is None:
        return f"no prediction: {answer.missing or 'no KV pool'}"
    return (
        f"KV tokens per rank {_cell(tokens, tokens.measured)} -> {_cell(tokens, tokens.predicted)}"
        f" {_delta(tokens)}"
    )


ANCHORED_NOTE = (
    "anchored = measured + (model(new) - model(log's settings)); modelled = no measured value"
)


def _solved_notes(answer: WhatIf) -> list[str]:
    solved = answer.solved
    return [] if solved is None or solved.value is None else [solved.note]


def render_whatif_text(answer: WhatIf, terminal: Terminal = PLAIN) -> str:
    """The verdict, the what-if table, its arithmetic and notes, fitted to the terminal."""
    width = terminal.width
    if answer.missing and answer.solved is None:
        # nothing to show but why: no table of `-` and no empty arithmetic (review 2, m5)
        notes = [f"- {n}" for n in answer.notes]
        return fit_lines("\n".join([_verdict_whatif(answer), *notes]), width) + "\n"
    table = whatif_table(answer)
    title = _fit(table.title, width)
    verdict = _verdict_whatif(answer)
    if not answer.changes and answer.solved is None:
        verdict += (
            " (no --set given: the log's own settings; try --set mem_fraction_static=0.85, or "
            "--solve SETTING --for FIGURE=VALUE)"
        )
    parts = [verdict, "", title, "-" * len(title)]
    parts += [text_table(table, width=width), "", "Arithmetic (new settings)"]
    parts += ["-------------------------", *_arithmetic_lines(answer)]
    notes = [ANCHORED_NOTE, *_solved_notes(answer), *answer.notes]
    parts += ["", "Notes", "-----"]
    parts += [textwrap.fill(f"- {n}", width, subsequent_indent="  ") for n in notes]
    return fit_lines("\n".join(parts), width) + "\n"


def render_whatif_markdown(answer: WhatIf) -> str:
    table = whatif_table(answer)
    parts = [
        f"## {markdown_cell(_verdict_whatif(answer))}",
        "",
        f"### {markdown_cell(table.title)}",
    ]
    parts += ["", github_table(table), "", "### Arithmetic (new settings)", ""]
    parts += [f"- {inert_block_start(markdown_cell(line))}" for line in _arithmetic_lines(answer)]
    parts += ["", "### Notes", ""]
    notes = (ANCHORED_NOTE, *_solved_notes(answer), *answer.notes)
    parts += [f"- {inert_block_start(markdown_cell(n))}" for n in notes]
    return "\n".join(parts) + "\n"


WHATIF_FORMATS: Formats[ReportFormat, Terminal, WhatIf] = report_formats(
    render_whatif_text, render_whatif_markdown
)
"""`memledger whatif --format` choices."""
