"""F29: a gzipped input may expand only so far (memledger.input.gunzip).

The bounds are lowered here (the defaults are 16 GiB and 100x past 256 MiB) so that each case
takes milliseconds; the arithmetic is the same.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memledger.cli import main
from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.input import gunzip
from tests.conftest import SAMPLES

SERVING_LINE = b"[2025-02-04 05:30:00 TP0] Decode batch. #running-req: 1, #token: 1000\n"


def _gz(tmp_path: Path, data: bytes, name: str = "server.log.gz") -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(data, 9))
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_gzipped_log_within_the_bounds_reads_as_the_plain_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = SAMPLES / "dp2.log"
    zipped = _gz(tmp_path, plain.read_bytes())
    code, out, _ = _run(capsys, "ledger", str(zipped), "--format", "json")
    assert code == EXIT_OK
    _, reference, _ = _run(capsys, "ledger", str(plain), "--format", "json")

    def figures(text: str) -> list[tuple[str, int | None, list[int]]]:
        rows = json.loads(text)["rows"]
        return [(r["id"], r["bytes"], [s["line"] for s in r["evidence"]["sources"]]) for r in rows]

    assert figures(out) == figures(reference) and len(figures(out)) > 5


def test_expansion_past_max_bytes_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = (SAMPLES / "dp2.log").read_bytes()
    zipped = _gz(tmp_path, log + SERVING_LINE * 40_000)  # ~2.9 MB of text
    monkeypatch.setenv(gunzip.MAX_BYTES_ENV, str(2 << 20))
    code, out, err = _run(capsys, "ledger", str(zipped))
    assert code == EXIT_INPUT and out == ""
    [line] = err.strip().splitlines()
    assert f"{zipped}: gzip input expands past 2.0 MiB" in line
    assert gunzip.MAX_BYTES_ENV in line and "Traceback" not in err
    monkeypatch.setenv(gunzip.MAX_BYTES_ENV, "0")  # the bound lifted: read as any log
    assert _run(capsys, "ledger", str(zipped))[0] == EXIT_OK


def test_a_bomb_is_stopped_by_the_ratio_long_before_its_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 12 MB of one line compresses ~300x: past the first 1 MiB, more than 100x is refused
    zipped = _gz(tmp_path, (SAMPLES / "dp2.log").read_bytes() + SERVING_LINE * 170_000)
    assert zipped.stat().st_size * 100 < 12_000_000
    monkeypatch.setattr(gunzip, "RATIO_FREE_BYTES", 1 << 20)
    expanded: list[int] = []
    checked = gunzip.BoundedGunzip._checked

    def spy(self: gunzip.BoundedGunzip, data: bytes) -> bytes:
        expanded.append(self.expanded + len(data))
        return checked(self, data)

    monkeypatch.setattr(gunzip.BoundedGunzip, "_checked", spy)
    code, _, err = _run(capsys, "parse", str(zipped))
    assert code == EXIT_INPUT
    [line] = err.strip().splitlines()
    assert "expands more than 100x" in line and gunzip.MAX_RATIO_ENV in line
    assert expanded[-1] < 4 << 20  # stopped within a few chunks of the 1 MiB floor, not at 12 MB
    monkeypatch.setenv(gunzip.MAX_RATIO_ENV, "1000")
    assert _run(capsys, "parse", str(zipped))[0] == EXIT_OK


@pytest.mark.parametrize("value", ["lots", "-1", "1e9", "9" * 30])
def test_a_bad_bound_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    zipped = _gz(tmp_path, (SAMPLES / "dp2.log").read_bytes())
    monkeypatch.setenv(gunzip.MAX_RATIO_ENV, value)
    code, _, err = _run(capsys, "ledger", str(zipped))
    assert code == EXIT_USAGE
    [line] = err.strip().splitlines()
    assert gunzip.MAX_RATIO_ENV in line and "whole number" in line


def test_stdin_is_bounded_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    data = gzip.compress((SAMPLES / "dp2.log").read_bytes() + SERVING_LINE * 40_000, 9)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    monkeypatch.setenv(gunzip.MAX_BYTES_ENV, str(1 << 20))
    code, _, err = _run(capsys, "parse", "-")
    assert code == EXIT_INPUT and "gzip input expands past" in err
