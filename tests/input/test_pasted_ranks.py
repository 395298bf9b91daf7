"""Which rank a paste is read as when some ranks print no memory line in it.

The keyword scan skips lines without a memory word, so the rank rule also reads the prefixes of
the input's first block (memledger.input.ranks.head_tags): a rank 0 that only printed loader
chatter or import notices is still rank 0, and another rank's numbers are not its facts. The
shapes follow PR sgl-project/sglang#17985 (a MUSA PP2 x TP2 paste cut during loading) and
#17499 (DP2 x TP2 import notices); the lines here are synthetic.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from memledger.input.facts import facts_of
from memledger.input.parsing import parse_log
from memledger.input.ranks import head_tags, later_rank0
from memledger.model.events import ParsedLog
from tests.conftest import run_cli

P = "[2026-01-30 20:54:{:02d} {}] "


def _parse(lines: list[str]) -> ParsedLog:
    return parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.log")


def test_a_rank0_with_only_loader_chatter_is_still_rank0() -> None:
    parsed = _parse(
        [
            P.format(50, "PP1 TP0") + "Load weight begin. avail mem=78.38 GB",
            P.format(54, "PP0 TP1") + "Beginning to load weights",
            P.format(54, "PP0 TP0") + "Beginning to load weights",
            P.format(56, "PP1 TP1") + "Load weight end. type=Qwen3ForCausalLM, "
            "avail mem=76.05 GB, mem usage=2.33 GB.",
        ]
    )
    facts = facts_of(parsed)
    # PP1 TP0's 78.38 is another pipeline stage's reading, never rank 0's
    assert (facts["rank_tag"], facts["load_begin_avail"], facts["load_end_avail"]) == (
        "PP0 TP0",
        None,
        None,
    )
    assert not any("no rank 0" in note for note in parsed.notes)


def test_without_rank0_in_the_input_the_lowest_rank_is_still_read_and_said() -> None:
    parsed = _parse(
        [
            P.format(50, "PP1 TP0") + "Load weight begin. avail mem=78.38 GB",
            P.format(54, "PP1 TP1") + "Beginning to load weights",
        ]
    )
    assert facts_of(parsed)["load_begin_avail"] == 78.38
    assert parsed.notes == [
        "no rank 0 in this input: 2 ranks present (PP1 TP0, PP1 TP1), fragments of different "
        "ranks; read PP1 TP0, the lowest (--rank reads another)"
    ]


def test_prefixed_lines_without_a_memory_word_are_an_sglang_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        f"[2026-01-21 19:39:12 DP{dp} TP{tp}] Ignore import error when loading "
        f"sglang.srt.models.nemotron_h: No module named 'cuda'"
        for dp in (0, 1)
        for tp in (0, 1)
    ]
    facts = facts_of(_parse(lines))
    assert (facts["rank_tag"], facts["n_startups"], facts["outcome"]) == ("DP0 TP0", 1, "truncated")
    log = tmp_path / "notices.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_cli(["parse", log], capsys)
    assert code == 0 and "no SGLang log lines" not in err
    # and a text with no SGLang prefix at all is still refused
    prose = tmp_path / "prose.txt"
    prose.write_text("just some notes\nabout a server\n", encoding="utf-8")
    code, _, err = run_cli(["parse", prose], capsys)
    assert code == 3 and "no SGLang log lines found" in err


def test_head_tags_reads_whole_lines_only() -> None:
    head = b"[2026-01-30 20:54:54 PP0 TP0] Beginning\r\nnoise\n[2026-01-30 20:54:55 PP1 T"
    assert list(head_tags(head, whole=False)) == [("PP0 TP0", 1)]
    # the whole input: its last line counts even without a newline
    assert list(head_tags(head + b"P1] x", whole=True)) == [("PP0 TP0", 1), ("PP1 TP1", 3)]


def test_a_rank_range_prefix_reads_as_its_first_ranks_line() -> None:
    # The shape of a hand-edited XPU paste (public notes on a Nemotron-H TP4 run): the author
    # wrote one `[TP0..3]` line for what each of TP0-TP3 printed alike, cut the timestamps and
    # wrapped each line after a comma with an indent. The lines here are synthetic.
    parsed = _parse(
        [
            "[TP0..3] Load weight end. elapsed=36.9 s, type=NemotronHForCausalLM,",
            "         avail mem=7.95 GB, mem usage=14.76 GB",
            "[TP0-3] KV Cache is allocated. #tokens: 1557504,",
            "         K size: 2.23 GB, V size: 2.23 GB",
            "[TP0..TP3] Memory pool end. avail mem=3.39 GB",
            "[TP0]    max_total_num_tokens=1557504, chunked_prefill_size=1024,",
            "         max_prefill_tokens=16384, max_running_requests=8,",
            "         context_len=8192, available_gpu_mem=3.39 GB",
        ]
    )
    facts = facts_of(parsed)
    assert (facts["rank_tag"], facts["load_end_avail"], facts["load_end_mem_usage"]) == (
        "TP0",
        7.95,
        14.76,
    )
    assert (facts["kv_tokens"], facts["k_size"], facts["mempool_end_avail"]) == (
        1557504,
        2.23,
        3.39,
    )
    assert (facts["max_running_requests"], facts["outcome"]) == (8, "ready")
    assert not any("no rank 0" in note for note in parsed.notes)


def test_a_rank_range_without_rank0_is_another_ranks_line() -> None:
    parsed = _parse(["[TP4..7] Memory pool end. avail mem=3.39 GB"])
    assert facts_of(parsed)["mempool_end_avail"] == 3.39
    assert parsed.notes == ["no rank 0 in this input: read TP4, the only rank present"]
    # prose in brackets is no prefix: `[0..3]` names no parallel kind
    prose = _parse(["[TP0] Memory pool end. avail mem=1.00 GB", "ranks [0..3] Memory pool end."])
    assert facts_of(prose)["mempool_end_avail"] == 1.0


def _late_rank0_lines() -> list[str]:
    """PP1's memory lines fill the first block; PP0 TP0, rank 0, prints only loader chatter,
    after it (the shape of a pipeline log whose first stage loads slowly). Synthetic lines."""
    filler = [
        P.format(i % 60, "PP1 TP0") + f"Ignore import error when loading sglang.srt.models.m{i}"
        for i in range(150)
    ]
    return [
        P.format(1, "PP1 TP0") + "Load weight begin. avail mem=78.38 GB",
        *filler,
        P.format(2, "PP0 TP1") + "Beginning to load weights",
        P.format(3, "PP0 TP0") + "Beginning to load weights",
        P.format(4, "PP1 TP0") + "Load weight end. type=Qwen3ForCausalLM, "
        "avail mem=76.05 GB, mem usage=2.33 GB.",
    ]


def test_a_rank0_whose_only_lines_come_after_the_first_block_is_still_rank0(
    tmp_path: Path,
) -> None:
    text = "\n".join(_late_rank0_lines()) + "\n"
    assert text.index("PP0 TP0") > 8192  # past the block head_tags reads
    log = tmp_path / "pp.log"
    log.write_text(text, encoding="utf-8")
    gz = tmp_path / "pp.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    for path in (log, gz):
        parsed = parse_log(path)
        facts = facts_of(parsed)
        assert (facts["rank_tag"], facts["load_begin_avail"], facts["load_end_avail"]) == (
            "PP0 TP0",
            None,
            None,
        ), path
        assert not any("no rank 0" in note for note in parsed.notes)
    # a stream is read once: its rank 0 is what its first block and memory lines show (a note
    # says which rank was read instead)
    streamed = _parse(_late_rank0_lines())
    assert facts_of(streamed)["load_begin_avail"] == 78.38
    assert any("no rank 0" in note for note in streamed.notes)


def test_later_rank0_reads_only_rank0_prefixes_across_blocks() -> None:
    long_line = b"x" * (3 << 20)  # a line longer than a block: searched in pieces
    body = b"[2026-01-30 20:54:54 PP1 TP0] a\n" + long_line + b"\n[00:00:01 TP0 EP1] b\n"
    assert later_rank0(io.BytesIO(body)) is None  # EP1: not every index is 0
    assert later_rank0(io.BytesIO(body + b"noise [TP0] c\n[gpu_id=0] d\n")) == ("TP0", 4)
    assert later_rank0(io.BytesIO(body + b"[TP0..3] e")) == ("TP0", 4)  # no newline at the end
