"""Hostile input stays within the memory bound (100 MiB of peak RSS for any input; what
an input may add to a process's start is GROWTH_KIB here) and gets a one-line error where it is
not a log: pathological lines, brace-led inputs, forged saved ledgers of many keys. Each case
runs `memledger` in a subprocess and reads its peak RSS.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memledger.app.open import open_input
from memledger.errors import EXIT_INPUT, EXIT_OK
from memledger.input.reader import SNIFF_BYTES
from memledger.input.saved_ledger import MAX_VALUES
from tests.conftest import CountingStream
from tests.security.helpers import log_text

_RUN = (
    "import resource, sys\n"
    "from memledger.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _measured(*args: str | Path) -> tuple[int, str, int]:
    """(exit code, stderr without the measurement, peak RSS in KiB) of one run."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    *err, last = done.stderr.rstrip("\n").split("\n")
    assert last.startswith("maxrss "), done.stderr[-2000:]
    return done.returncode, "\n".join(err), int(last.split()[1])


def _without(tmp_path: Path) -> int:
    """Peak RSS (KiB) of `ledger` on the 11-line base log, in this machine's state: a process's
    own start (the grammar tables, lark when the shape store lacks a shape) varies, 55-180 MB
    seen in one suite run; each case is measured against it, within GROWTH_KIB."""
    short = tmp_path / "short.log"
    short.write_text(log_text(), encoding="utf-8")
    code, err, rss = _measured("ledger", short)
    assert code == EXIT_OK, err
    return rss


GROWTH_KIB = 40 << 10


def test_a_long_line_of_repeated_words_does_not_blow_the_regex_stack(tmp_path: Path) -> None:
    # `(?:\w+ )*KV Cache` (KNOWN_HEAD_RE) kept one backtracking mark per word: a 4 MiB piece of
    # `GB size ` took 130 MB of RSS over the log without it (a 1 GB line: 208 MB in all); the
    # label is now at most 8 words. Measured against the same log without the line, as the
    # process's own start (the grammar tables, lark when the shape store lacks a shape) varies.
    log = tmp_path / "long.log"
    log.write_text(log_text() + "GB size " * (1 << 20) + "\n", encoding="utf-8")
    code, err, rss = _measured("ledger", log)
    assert code == EXIT_OK and "Traceback" not in err
    without = _without(tmp_path)
    assert rss - without < GROWTH_KIB, f"{rss} KiB with the line, {without} KiB without"


def test_the_kv_head_still_takes_a_label_of_words() -> None:
    from memledger.sglang.lines import KNOWN_HEAD_RE

    assert KNOWN_HEAD_RE.match("Draft target KV Cache is allocated. #tokens: 1")
    assert KNOWN_HEAD_RE.match("KV Cache VA upper bound: 1 GB")
    assert not KNOWN_HEAD_RE.match("GB size " * 1000)


def test_a_json_lines_log_is_known_from_its_head_without_reading_on() -> None:
    # Docker's *-json.log: the first line is a JSON value with more after it, which a saved
    # ledger (one JSON value) never is; no need to read the saved-ledger bound first
    filler = b'{"log": "Decode batch. #running-req: 1"}\n' * 100_000
    data = b'{"ts": 1}\n' + log_text().encode() + filler
    stream = CountingStream(data)
    with open_input(stream) as opened:
        assert opened.log is not None and opened.document is None
        assert stream.bytes_read <= 2 * SNIFF_BYTES
        assert opened.log.stream.read(10) == b'{"ts": 1}\n'  # nothing of it lost


def test_a_pretty_printed_saved_ledger_is_still_one(tmp_path: Path) -> None:
    log = tmp_path / "base.log"
    log.write_text(log_text(), encoding="utf-8")
    saved = tmp_path / "saved.json"
    code, err, _ = _measured("ledger", log, "--format", "json", "-o", saved)
    assert code == EXIT_OK, err
    pretty = json.dumps(json.loads(saved.read_text()), indent=2)
    compact = json.dumps(json.loads(saved.read_text()))
    for text in (pretty, compact, compact + "\n\n"):
        with open_input(io.BytesIO(text.encode())) as opened:
            assert opened.document is not None


@pytest.mark.parametrize(
    ("name", "body"),
    [
        # a million keys: pydantic kept an error for each (31 MB: 3.2 GB, 60 s)
        ("many keys", ",".join(f'"k{i}":0' for i in range(150_000))),
        # empty lists: the cheapest JSON value to write, ~72 B each once parsed
        ("many lists", '"x": [' + ",".join(["[]"] * 600_000) + "]"),
    ],
)
def test_a_saved_ledger_of_many_values_is_refused_within_the_bound(
    tmp_path: Path, name: str, body: str
) -> None:
    forged = tmp_path / "forged.json"
    forged.write_text('{"schema_version": 2, "rows": [], ' + body + "}", encoding="utf-8")
    assert forged.stat().st_size < 2 << 20  # within the saved-ledger bound: it is parsed
    code, err, rss = _measured("ledger", forged)
    assert code == EXIT_INPUT
    assert err == (
        f"memledger: error: {forged}: not a valid saved ledger: more than {MAX_VALUES:,} keys "
        "and values"
    )
    assert rss - _without(tmp_path) < GROWTH_KIB, f"{name}: {rss} KiB"


def test_a_brace_led_input_past_the_bound_is_streamed_as_a_log(tmp_path: Path) -> None:
    # 8 MiB of JSON is no saved ledger: it is scanned as a log, held a chunk at a time
    forged = tmp_path / "big.json"
    forged.write_text(
        '{"schema_version": 2, "rows": [' + ",".join(["1.5"] * 2_000_000) + "]}",
        encoding="utf-8",
    )
    code, err, rss = _measured("ledger", forged)
    assert code == EXIT_INPUT and err.count("\n") == 0 and "no SGLang log lines" in err
    assert rss - _without(tmp_path) < GROWTH_KIB, f"{rss} KiB"


def test_a_key_given_twice_in_a_saved_ledger_is_refused(tmp_path: Path) -> None:
    # JSON's last-one-wins would read `"rows": []` then the real rows as the rows alone: a
    # value the file holds would be ignored without a word
    log = tmp_path / "base.log"
    log.write_text(log_text(), encoding="utf-8")
    saved = tmp_path / "saved.json"
    code, err, _ = _measured("ledger", log, "--format", "json", "-o", saved)
    assert code == EXIT_OK, err
    text = saved.read_text(encoding="utf-8")
    forged = tmp_path / "twice.json"
    forged.write_text(text.replace('"rows": [', '"rows": [], "rows": [', 1), encoding="utf-8")
    code, err, _ = _measured("ledger", forged)
    assert code == EXIT_INPUT
    assert err == (
        f"memledger: error: {forged}: not a valid saved ledger: key 'rows' given twice in one "
        "object"
    )


@pytest.mark.parametrize(
    ("option", "name", "text"),
    [
        ("--budget", "budget.toml", 'version = 1\n[[budget]]\nitem = "slots"\nmax = 1{zeros}\n'),
        ("--formulas", "formulas.toml", '[[formula]]\nid = "x"\nlabel = "x"\nmax = 1{zeros}\n'),
        ("--model-config", "config.json", '{{\n"hidden_size": 1{zeros}\n}}'),
    ],
)
def test_a_number_python_cannot_read_is_a_config_error_at_its_line(
    tmp_path: Path, option: str, name: str, text: str
) -> None:
    # 5,001 digits: past Python's int_max_str_digits, tomllib/json raised a bare ValueError
    # (a traceback for a budget file)
    log = tmp_path / "base.log"
    log.write_text(log_text(), encoding="utf-8")
    config = tmp_path / name
    config.write_text(text.format(zeros="0" * 5000), encoding="utf-8")
    command = "check" if option == "--budget" else "ledger"
    code, err, _ = _measured(command, log, option, config)
    line = 4 if option != "--model-config" else 2
    assert code == 2, err
    assert err == f"memledger: error: {config}:{line}: a number of 5001 digits"
