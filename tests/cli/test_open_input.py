"""The one input opener: gunzip first, then the saved-ledger sniff, on a bounded peek."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from memledger.app import load
from memledger.app import open as opener
from memledger.app.load import load_ledger
from memledger.app.open import open_input
from memledger.app.options import LoadOptions
from memledger.cli import main
from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE, InputError
from memledger.input.reader import SNIFF_BYTES
from tests.conftest import SAMPLES, CountingStream


def saved_pair(tmp_path: Path) -> tuple[Path, Path]:
    """The dp2 sample's ledger saved as JSON, and the same file gzipped."""
    plain = tmp_path / "saved.json"
    assert main(["ledger", str(SAMPLES / "dp2.log"), "--format", "json", "-o", str(plain)]) == 0
    zipped = tmp_path / "saved.json.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    return plain, zipped


def test_a_gzipped_saved_ledger_reads_like_the_plain_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, zipped = saved_pair(tmp_path)
    capsys.readouterr()
    outputs = []
    for path in (plain, zipped):
        code = main(["ledger", str(path), "--format", "csv"])
        captured = capsys.readouterr()
        assert (code, captured.err) == (EXIT_OK, "")
        outputs.append(captured.out)
    assert outputs[0] == outputs[1] and "req_to_token" in outputs[0]
    # The same file as a diff side and as a check baseline.
    assert main(["diff", str(zipped), str(SAMPLES / "dp2.log"), "--format", "json"]) == EXIT_OK
    assert '"status": "changed"' not in capsys.readouterr().out
    budget = SAMPLES / "budget.toml"
    code = main(
        ["check", str(SAMPLES / "dp2.log"), "--budget", str(budget), "--baseline", str(zipped)]
    )
    assert code in (EXIT_OK, 1)
    assert "not found" not in capsys.readouterr().out


def test_log_options_are_refused_for_a_gzipped_saved_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, zipped = saved_pair(tmp_path)
    capsys.readouterr()
    assert main(["ledger", str(zipped), "--rank", "TP1"]) == EXIT_USAGE
    assert "--rank cannot apply to a saved ledger" in capsys.readouterr().err


def test_a_log_is_sniffed_from_its_first_block_only() -> None:
    log = (SAMPLES / "dp16.log").read_bytes()
    assert len(log) > 3 * SNIFF_BYTES
    stream = CountingStream(log)
    with open_input(stream) as opened:
        assert opened.document is None and opened.log is not None
        assert stream.bytes_read == SNIFF_BYTES


def test_a_brace_led_log_longer_than_the_bound_is_streamed_as_a_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = b"{not json at all}\n" + (SAMPLES / "dp2.log").read_bytes()
    monkeypatch.setattr(opener, "SAVED_LEDGER_MAX_BYTES", 2 * SNIFF_BYTES)
    stream = CountingStream(log)
    with open_input(stream) as opened:
        assert opened.log is not None
        assert stream.bytes_read <= 2 * SNIFF_BYTES + 1
    ledger = load_ledger(io.BytesIO(log))
    assert ledger.summary.slots == load_ledger(SAMPLES / "dp2.log").summary.slots


def test_json_that_is_not_a_saved_ledger_is_one_input_error(tmp_path: Path) -> None:
    path = tmp_path / "other.json.gz"
    path.write_bytes(gzip.compress(b'{"hello": "world"}'))
    with pytest.raises(InputError, match="JSON, but not a saved ledger") as info:
        load_ledger(path)
    assert info.value.exit_code == EXIT_INPUT


def test_parse_says_a_saved_ledger_is_not_a_log(tmp_path: Path) -> None:
    plain, _ = saved_pair(tmp_path)
    with pytest.raises(InputError, match="a saved ledger, not a log"):
        load.load_parsed(plain, LoadOptions())
