"""The event store is bounded in the number of startups and ranks (issue 12, F8 of
shared/docs/review-security.md): what is retained is capped, and what is not kept is counted and
said. Structure, not timings (those are in benchmarks/bench_security.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import memledger.input.parsing as parsing
import memledger.input.store as store
from memledger.errors import SelectionError
from memledger.input.parsing import parse_log
from memledger.input.ranks import rank_key_values
from memledger.input.server_args import parse_server_args
from memledger.input.store import RANK_AGNOSTIC
from memledger.model.events import EventKind, ParamValue, ParsedLog
from tests.input.helpers import real_log
from tests.security.helpers import log_text


class _Peak(store.Collector):
    """The store, recording the most items it ever retained at once."""

    peak = 0

    def keep(self, item: store.Stored) -> None:
        super().keep(item)
        retained = len(self.stored) + len(self.summaries)
        _Peak.peak = max(_Peak.peak, retained)


@pytest.fixture
def peak(monkeypatch: pytest.MonkeyPatch) -> type[_Peak]:
    _Peak.peak = 0
    monkeypatch.setattr(parsing, "Collector", _Peak)
    return _Peak


def _load_avail(parsed: ParsedLog) -> float:
    event = next(e for e in parsed.startup.events if e.kind is EventKind.LOAD_BEGIN)
    return event.sizes["avail"].bytes / 2**30


def _startups_log(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "startups.log"
    path.write_text("".join(log_text(avail=f"{10 + i / 1000:.3f}") for i in range(n)))
    return path


def test_many_startups_keep_one_and_parse_one_server_args(
    tmp_path: Path, peak: type[_Peak], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _startups_log(tmp_path, 2000)
    parsed_args: list[int] = []

    def counting(
        text: str, problems: list[str], not_kept: list[str] | None = None
    ) -> dict[str, ParamValue]:
        parsed_args.append(len(text))
        return parse_server_args(text, problems, not_kept)

    monkeypatch.setattr(parsing, "parse_server_args", counting)
    parsed = parse_log(log)
    assert parsed.n_startups == 2000 and parsed.selected == 1999
    assert _load_avail(parsed) == pytest.approx(11.999)
    assert parsed.startup.first_line == 1999 * 11 + 1
    assert parsed.startup.server_args["mem_fraction_static"] == 0.88
    assert len(parsed_args) == 1  # only the selected startup's server_args line is parsed
    assert peak.peak <= 20  # one startup's events (11 lines), not 2,000 startups' worth


@pytest.mark.parametrize(("startup", "avail"), [(0, 10.0), (7, 10.007), (-3, 10.997), (-1, 10.999)])
def test_any_startup_is_still_selectable(
    tmp_path: Path, peak: type[_Peak], startup: int, avail: float
) -> None:
    parsed = parse_log(_startups_log(tmp_path, 1000), startup=startup)
    assert parsed.n_startups == 1000 and _load_avail(parsed) == pytest.approx(avail)
    expected_index = startup % 1000
    assert parsed.startup.first_line == expected_index * 11 + 1
    assert parsed.startup.last_line == parsed.startup.first_line + 10
    assert parsed.startup.outcome == "ready"
    # -3 keeps the last three startups, any other index one
    assert peak.peak <= (3 if startup == -3 else 1) * 11 + 8


def test_missing_startup_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(SelectionError, match="this log has 30 startup"):
        parse_log(_startups_log(tmp_path, 30), startup=30)
    with pytest.raises(SelectionError, match="this log has 30 startup"):
        parse_log(_startups_log(tmp_path, 30), startup=-31)


def _ranks_log(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "ranks.log"
    lines = [
        f"[2025-02-04 05:29:30 TP{rank}] Load weight begin. avail mem={20 + rank % 7}.00 GB\n"
        f"[2025-02-04 05:29:30 TP{rank}] Some unknown thing size=12 GB\n"
        for rank in range(1, n)
    ]
    path.write_text(log_text() + "".join(lines))
    return path


def test_ranks_past_the_cap_are_counted_not_summarised(
    tmp_path: Path, peak: type[_Peak], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "RANKS_CAP", 40)
    parsed = parse_log(_ranks_log(tmp_path, 300))
    ranks = parsed.startup.ranks
    assert len(ranks) == 40 and ranks[0].rank == "TP0" and ranks[-1].rank == "TP39"
    assert ranks[5].key_values["load_begin_avail"] == 25.0 and ranks[5].n_events == 1
    assert parsed.notes == [
        "more than 40 ranks: the per-rank table lists the first 40 seen; "
        "260 lines of further ranks are not in it"
    ]
    # the selected rank's events in full; every other rank one summary, its lines not kept
    # (its nine lines: the summary line that decides `ready` is listed once, as `summary`)
    assert [e.rank for e in parsed.startup.events if e.rank.startswith("TP")] == ["TP0"] * 9
    assert parsed.startup.unrecognised_count == 0  # coverage is the selected rank's
    assert peak.peak <= 12 + 40


def test_rank_table_from_summaries_equals_the_ranks_own_events() -> None:
    """Ranks that cannot be selected are summaries; reading each as the selected rank (its
    events in full) gives the same row."""
    for name in ("complex/001", "single/007", "complex/023"):
        log = real_log(name)
        table = {info.rank: info for info in parse_log(log).startup.ranks}
        assert len(table) > 1
        for tag, info in table.items():
            events = [
                e
                for e in parse_log(log, rank=tag).startup.events
                if e.rank == tag and e.kind not in RANK_AGNOSTIC
            ]
            assert info.n_events == len(events), (name, tag)
            assert info.key_values == rank_key_values(events), (name, tag)


def test_lowest_rank_without_rank0_keeps_its_events(tmp_path: Path, peak: type[_Peak]) -> None:
    # tags in falling order: each new one is the lowest so far, the previous one a summary
    path = tmp_path / "fragment.log"
    path.write_text(
        "".join(
            f"[2025-02-04 05:29:30 TP{rank}] Load weight begin. avail mem={rank}.00 GB\n"
            f"[2025-02-04 05:29:31 TP{rank}] Memory pool end. avail mem={rank}.50 GB\n"
            for rank in range(200, 0, -1)
        )
    )
    parsed = parse_log(path)
    assert parsed.startup.rank == "TP1"
    assert [(e.kind, e.rank) for e in parsed.startup.events] == [
        (EventKind.LOAD_BEGIN, "TP1"),
        (EventKind.MEMORY_POOL_END, "TP1"),
    ]
    table = {info.rank: info for info in parsed.startup.ranks}
    assert len(table) == 200 and table["TP200"].n_events == 2
    assert table["TP37"].key_values["mempool_end_avail"] == 37.5
    assert peak.peak <= 2 + 200


def test_startups_without_server_args_keep_the_newest(
    tmp_path: Path, peak: type[_Peak], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = log_text().split("\n", 1)[1]  # no server_args line: startups at rank-0 init lines
    path = tmp_path / "no-args.log"
    path.write_text(body * 500)
    whole = parse_log(path)  # 500 x 10 lines fit under the default RETAINED_CAP
    monkeypatch.setattr(store, "RETAINED_CAP", 200)
    peak.peak = 0
    parsed = parse_log(path)
    assert parsed == whole
    assert parsed.n_startups == 500 and parsed.startup.first_line == 499 * 10 + 1
    assert len([e for e in parsed.startup.events if e.kind is not EventKind.READY]) == 9
    assert parsed.notes == []  # the selected startup was kept whole
    assert peak.peak <= 200 + 20
    with pytest.raises(SelectionError, match="startup 3 was not kept: this log has 500 startups"):
        parse_log(path, startup=3)


def test_one_startup_without_markers_says_what_it_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "RETAINED_CAP", 100)
    # init lines of TP1 only: no rank-0 init line, so the whole log is one startup
    path = tmp_path / "tp1-inits.log"
    path.write_text(
        "[2025-02-04 05:21:40 TP0] Load weight begin. avail mem=22.00 GB\n"
        + "[2025-02-04 05:21:40 TP1] Init torch distributed begin.\n" * 300
    )
    parsed = parse_log(path)
    assert parsed.n_startups == 1 and parsed.startup.first_line == 1
    (note,) = parsed.notes
    assert note.startswith("memory bound: this startup's lines before line ")
    assert "events; the log has no server_args lines" in note


def test_error_events_are_capped_over_all_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parsing, "RETAINED_CAP", 50)
    path = tmp_path / "errors.log"
    path.write_text(
        log_text()
        + "".join(
            f"[2025-02-04 05:29:30 TP{rank}] torch.OutOfMemoryError: CUDA out of memory. "
            "Tried to allocate 2.00 GiB.\n"
            for rank in range(400)
        )
    )
    parsed = parse_log(path)
    messages = [e for e in parsed.startup.events if e.kind is EventKind.OOM_MESSAGE]
    assert len(messages) == 50 and parsed.startup.outcome == "oom"


FALLBACK = (
    "[2025-02-04 05:21:38] Failed to get GPU memory capacity from nvidia-smi. Falling back to "
    "torch.cuda.mem_get_info(). Reported total GPU memory per device (MiB): [{mib}], "
    "using min: {mib} MiB.\n"
)


@pytest.mark.parametrize("startup", [None, 0, 2, -2])
def test_lines_before_server_args_stay_with_the_startup_they_precede(
    tmp_path: Path, startup: int | None
) -> None:
    # SGLang prints the capacity fallback while building ServerArgs: it belongs to the startup
    # whose server_args line follows it, even when the store lets the previous startup go
    path = tmp_path / "fallback.log"
    path.write_text("".join(FALLBACK.format(mib=1000 + i) + log_text() for i in range(4)))
    parsed = parse_log(path, startup=startup)
    (fallback,) = [e for e in parsed.startup.events if e.kind is EventKind.GPU_CAPACITY_FALLBACK]
    index = 3 if startup is None else startup % 4
    assert fallback.line == index * 12 + 1 and parsed.startup.first_line == fallback.line + 1
    assert fallback.sizes["using_min"].bytes == (1000 + index) << 20
