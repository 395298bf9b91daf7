"""The shared reader of user config files: one-line ConfigErrors naming the file and its role."""

from __future__ import annotations

from pathlib import Path

import pytest

from memledger.config_files import read_config_text
from memledger.errors import EXIT_USAGE, ConfigError


def test_reads_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "budget.toml"
    path.write_text("version = 1  # ≤ 8 GiB\n", encoding="utf-8")
    assert read_config_text(path, "budget file") == "version = 1  # ≤ 8 GiB\n"


def _unreadable(tmp_path: Path, case: str) -> Path:
    if case == "missing":
        return tmp_path / "absent.json"
    if case == "directory":
        return tmp_path
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(b'{"name": "caf\xe9"}')
    return latin1


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing", "model config not found"),
        ("directory", "model config is a directory; pass its config.json"),
        ("not utf-8", "model config is not UTF-8 text"),
    ],
)
def test_errors_are_one_line_config_errors_with_the_path(
    tmp_path: Path, case: str, expected: str
) -> None:
    path = _unreadable(tmp_path, case)
    with pytest.raises(ConfigError) as caught:
        read_config_text(path, "model config", directory_hint="; pass its config.json")
    assert caught.value.exit_code == EXIT_USAGE
    assert caught.value.one_line() == f"{path}: {expected}"
