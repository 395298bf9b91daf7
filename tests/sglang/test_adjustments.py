"""SGLang's own lines that change a memory setting (memledger.sglang.adjustments): each read as a
`setting_adjusted` event carrying the setting and the value SGLang chose, in the three shapes a
paste holds it (a log line with its prefix, the line alone, quoted in a sentence), and said by
diagnose. Each row's example is also checked by the error-text table's shared test."""

from __future__ import annotations

import io
import re

import pytest

from memledger.diagnosis.model import Direction
from memledger.formulas import compile_expression
from memledger.input.error_texts import read_adjustment
from memledger.input.parsing import parse_log
from memledger.model.events import Event, EventKind
from memledger.sglang.adjustments import ADJUSTMENTS, BY_NAME, Adjustment, says
from memledger.sglang.lines import ERROR_KEYS
from tests.conftest import diagnose_paste

_SHAPES = {
    "prefixed": "[2026-01-05 10:00:00 TP0] {}",
    "alone": "{}",
    "quoted": "I keep seeing `{}` before it fails, why?",
    "bullet": "- {}",
}


def _printed(row: Adjustment) -> str:
    match = row.regex.search(row.example)
    assert match is not None
    return match.groupdict().get("value") or row.to


@pytest.mark.parametrize("row", ADJUSTMENTS, ids=[row.name for row in ADJUSTMENTS])
@pytest.mark.parametrize("shape", list(_SHAPES))
def test_each_text_is_read_with_its_setting_and_value(row: Adjustment, shape: str) -> None:
    paste = _SHAPES[shape].format(row.example) + "\n"
    read = _adjusted(paste)
    assert [e.values.get("adjustment") for e in read] == [row.name]
    assert read[0].values["setting"] == row.setting
    assert (read[0].values.get("value") or row.to) == _printed(row)
    result = diagnose_paste(paste)
    assert says(read[0].values) in [f.message for f in result.findings]
    if shape != "quoted":  # no failure: the row's levers are the suggestions, with directions
        offered = [(s.knob, s.direction) for s in result.suggestions]
        assert offered == [(lever.knob, Direction(lever.direction)) for lever in row.levers]


def _adjusted(paste: str) -> list[Event]:
    parsed = parse_log(io.BytesIO(paste.encode()), label="paste.txt")
    return [e for e in parsed.startup.events if e.kind is EventKind.SETTING_ADJUSTED]


def test_the_value_is_what_the_line_prints() -> None:
    # the Mamba cap and the DP-attention division carry the number SGLang printed
    text = "max_running_requests is capped to 17 by the mamba state cache (x)"
    message = says({"adjustment": "mamba_caps_running_requests", "value": "17"})
    assert BY_NAME["mamba_caps_running_requests"].regex.search(text) is not None
    assert message.startswith("SGLang set max_running_requests to 17 (the Mamba state cache")
    assert "--max-mamba-cache-size" in message
    chunk = says({"adjustment": "dp_attention_chunked_prefill_from", "value": "1024"})
    assert chunk.startswith("SGLang set chunked_prefill_size to 1024 (DP attention")


def test_a_text_that_prints_no_value_says_what_it_sets() -> None:
    message = says({"adjustment": "cuda_graph_off"})
    assert message.startswith("SGLang set disable_cuda_graph to True (")


def test_a_text_of_several_reasons_says_its_own() -> None:
    read = read_adjustment("Cuda graph is disabled because deepep_mode=`normal`")
    assert read is not None and read["why"] == " deepep_mode=`normal`"
    assert "; here: deepep_mode=`normal`;" in says(read)


def test_each_row_is_unique_and_cites_a_release() -> None:
    assert len(BY_NAME) == len(ADJUSTMENTS)
    keys = ERROR_KEYS["setting_adjusted"][1]
    for row in ADJUSTMENTS:
        assert re.match(r"v0\.\d+\.\d+\S* \S+\.py:\d+", row.source), row.name
        assert "value" in row.regex.groupindex or row.to, row.name
        assert all(word in row.regex.pattern.replace("\\", "") for word in row.words), row.name
        assert set(row.regex.groupindex) <= set(keys), row.name  # each group an event key
        # the lifecycle's lever shape: a direction the diagnosis has, what it changes, each knob
        # once; a value's arithmetic compiles and reads only the line's own numbers
        assert len({lever.knob for lever in row.levers}) == len(row.levers), row.name
        for lever in row.levers:
            assert Direction(lever.direction) and lever.effect, row.name
            assert re.fullmatch(r"[a-z][a-z0-9_]+", lever.knob), row.name
            if lever.value:
                compile_expression(lever.value)
                read = set(re.findall(r"log\.(\w+)", lever.value))
                assert read <= set(row.regex.groupindex), (row.name, read)


def test_a_setting_named_in_other_words_is_no_adjustment() -> None:
    # a reporter typing the setting is their value, not SGLang's change
    assert read_adjustment("I set max_running_requests to 9 and it still OOMs") is None
    assert read_adjustment("--max-running-requests 9 --chunked-prefill-size 1024") is None
    assert read_adjustment("page_size=64, kv_cache_dtype=fp8_e4m3, disable_cuda_graph=True") is None


_MAMBA = (
    "max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=47, 5 "
    "state slots per request). To raise it: increase --mamba-full-memory-ratio"
)


@pytest.mark.parametrize(
    ("settings", "value"),
    [
        ("max_running_requests=32, dp_size=1, enable_dp_attention=False", 160),
        # under DP attention the cap is a DP worker's: 32 // 2 requests x 5 slots
        ("max_running_requests=32, dp_size=2, enable_dp_attention=True", 80),
        ("max_running_requests=None, dp_size=1", None),  # SGLang's estimate: no request to meet
        ("", None),
    ],
)
def test_the_mamba_caps_value_lifts_the_cap_to_the_requested_count(
    settings: str, value: int | None
) -> None:
    args = f"server_args=ServerArgs(model_path='m', {settings})\n" if settings else ""
    result = diagnose_paste(f"{args}[2026-01-05 10:00:00 TP0] {_MAMBA}\n")
    lever = result.suggestions[0]
    assert (lever.knob, lever.direction, lever.value) == ("max_mamba_cache_size", "raise", value)
    if value is None:
        assert "for a value add the server_args line" in lever.why
    else:
        assert "per 5" in lever.why and "max_running_requests 32" in lever.why


def test_a_dp_chunk_from_a_size_gives_dp_size_times_it() -> None:
    line = "DP attention is enabled. chunked prefill size is adjusted from 8192 to 1024."
    (lever,) = diagnose_paste(line + "\n").suggestions
    assert (lever.knob, lever.direction, lever.value) == ("chunked_prefill_size", "raise", 65536)


def test_a_failed_startup_keeps_its_own_levers() -> None:
    paste = (
        "Max running requests is reset to 48 for speculative decoding.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    result = diagnose_paste(paste)
    assert result.outcome == "oom"
    offered = {(s.knob, s.direction) for s in result.suggestions}
    assert ("max_running_requests", "raise") not in offered and offered
    assert any(f.id == "setting_adjusted" for f in result.findings)  # still said


def test_the_ledger_notes_what_sglang_set_once_with_its_line_and_source() -> None:
    from memledger.app.load import build
    from memledger.app.options import LoadOptions

    paste = (
        "".join(f"[2026-01-05 10:00:00 TP{rank}] {_MAMBA}\n" for rank in range(2))
        + "[2026-01-05 10:00:01 TP0] "
        + "Overriding the draft model's max_position_embeddings to 4096.\n"
    )
    parsed = parse_log(io.BytesIO(paste.encode()), label="run.log")
    every = build(parsed, LoadOptions()).notes
    notes = [n for n in every if "set by SGLang" in n]
    assert not any("matched no known line shape" in n for n in every)  # read, not a gap
    row = BY_NAME["mamba_caps_running_requests"]
    # each rank prints it; the ledger says it once, citing the first line and the row's source
    assert notes[0].startswith("max_running_requests 9: set by SGLang (the Mamba state cache")
    assert (
        "; run.log:1; v0.5.20 mem_cache/kv_cache_configurator.py:2285, v0.5.23 :3140)" in (notes[0])
    )
    assert row.source.startswith("v0.5.20 mem_cache/kv_cache_configurator.py:2285")
    assert (
        notes[1].startswith("context_length 4096: set by SGLang (the draft model")
        and "run.log:3" in notes[1]
    )
    assert len(notes) == 2


def test_a_line_every_rank_prints_is_said_once_with_its_whole_reason() -> None:
    line = (
        "Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled' "
        "(e.g. via --cuda-graph-backend-prefill=disabled)."
    )
    result = diagnose_paste([f"[2026-01-05 10:00:00 TP{rank}] {line}" for rank in range(4)])
    said = [f.message for f in result.findings if f.id == "setting_adjusted"]
    assert len(said) == 1
    assert "here: cuda_graph_config resolved prefill.backend='disabled'" in said[0]
    draft = read_adjustment(
        "Disable DFLASH draft cuda graph because only 0.62 GB GPU memory is available after "
        "target backend initialization."
    )
    assert draft is not None
    assert (
        draft["why"] == "only 0.62 GB GPU memory is available after target backend initialization"
    )
