"""A per-user cache of the packaged grammar's LALR tables, without pickle.

Building the tables takes 0.15-0.33 s per run; reading them back takes ~0.01 s (plus ~0.03 s to
check them). Lark's own cache (`Lark(cache=...)`) unpickles a file at a path anyone could predict,
which runs whatever a planted file says (security review F5). This cache stores Lark's serialised
tables as JSON (tuples and non-string keys tagged), which builds plain data and never runs code,
only in a directory private to the user (a real directory, owned by the user, mode 0700), opened
without following symlinks, and written by rename from a fresh file. The caller still checks what
it loaded against the packaged example lines (memledger.input.linegrammar), so a damaged or
tampered file is rebuilt, never trusted.

MEMLEDGER_NO_GRAMMAR_CACHE=1 disables it; so does a directory that is not private.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

FORMAT = "memledger-grammar-tables 2"
MAX_CACHE_BYTES = 4 << 20
"""A cache file larger than this is not read (today's tables take ~130 KB)."""
T = TypeVar("T")

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def cache_directory() -> Path | None:
    """`$XDG_CACHE_HOME/memledger` (default `~/.cache/memledger`), or None when disabled."""
    if os.environ.get("MEMLEDGER_NO_GRAMMAR_CACHE"):
        return None
    if not hasattr(os, "getuid") or not _NOFOLLOW:
        return None  # no owner check or no O_NOFOLLOW on this platform: build every time
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memledger"


def state_directory() -> Path | None:
    """`$XDG_STATE_HOME/memledger` (default `~/.local/state/memledger`), or None when disabled:
    where the store key lives, apart from the cache (a restored cache comes without it)."""
    if cache_directory() is None:
        return None
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "memledger"


def _digest(grammar_text: str, lark_version: str, format_: str = FORMAT) -> str:
    return hashlib.sha256(f"{format_}\n{lark_version}\n{grammar_text}".encode()).hexdigest()


def _open_private_directory(directory: Path) -> int | None:
    """A descriptor of the cache directory if it is ours alone (created 0700 when missing)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise OSError("not a directory of this user")
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o700)  # ours, but group/other could write or list it: close it up
    except OSError:
        os.close(fd)
        return None
    return fd


def _read(fd: int, name: str, digest: str, format_: str = FORMAT) -> dict[str, Any] | None:
    try:
        handle = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=fd)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.getuid()
            or info.st_mode & 0o022
            or info.st_size > MAX_CACHE_BYTES
        ):
            return None
        with os.fdopen(handle, "rb", closefd=False) as stream:
            raw = stream.read(MAX_CACHE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(handle)
    header, _, body = raw.partition(b"\n")
    if header != f"{format_} {digest}".encode():
        return None
    try:
        data = _decoded(json.loads(body))
    except (ValueError, TypeError, KeyError, MemoryError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _encoded(value: Any) -> Any:
    """Plain data as JSON-able data: tuples and dicts with non-string keys tagged."""
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _encoded(item) for key, item in value.items()}
        return {"~dict": [[_encoded(key), _encoded(item)] for key, item in value.items()]}
    if isinstance(value, tuple):
        return {"~tuple": [_encoded(item) for item in value]}
    if isinstance(value, list):
        return [_encoded(item) for item in value]
    return value


def _decoded(value: Any) -> Any:
    """The inverse of `_encoded` (a `~dict` key must be hashable: TypeError otherwise)."""
    if isinstance(value, dict):
        if "~dict" in value:
            return {_decoded(key): _decoded(item) for key, item in value["~dict"]}
        if "~tuple" in value:
            return tuple(_decoded(item) for item in value["~tuple"])
        return {key: _decoded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decoded(item) for item in value]
    return value


def _write(fd: int, name: str, digest: str, tables: dict[str, Any], format_: str = FORMAT) -> None:
    try:
        text = json.dumps(_encoded(tables))
        if _decoded(json.loads(text)) != tables:
            return  # not plain data in this lark version: JSON cannot hold it
    except (ValueError, TypeError, KeyError, MemoryError, RecursionError):
        return
    temporary = f"{name}.{os.getpid()}.tmp"
    try:
        handle = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=fd
        )
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(f"{format_} {digest}\n".encode() + text.encode("utf-8"))
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError:
        try:
            os.unlink(temporary, dir_fd=fd)
        except OSError:
            pass


def _with_directory(use: Callable[[int], T], directory: Path | None = None) -> T | None:
    """`use(fd)` on the private cache directory (or `directory`), closed after; None when it is
    unusable."""
    directory = directory or cache_directory()
    if directory is None:
        return None
    fd = _open_private_directory(directory)
    if fd is None:
        return None
    try:
        return use(fd)
    finally:
        os.close(fd)


def load_tables(grammar_text: str, lark_version: str) -> dict[str, Any] | None:
    """The cached serialised tables of this grammar and lark version, if a usable file has them."""
    digest = _digest(grammar_text, lark_version)
    return _with_directory(lambda fd: _read(fd, f"grammar-{digest[:24]}.tables", digest))


def store_tables(grammar_text: str, lark_version: str, tables: dict[str, Any]) -> None:
    """Save serialised tables for the next run (silently nothing when the cache is unusable)."""
    digest = _digest(grammar_text, lark_version)
    _with_directory(lambda fd: _write(fd, f"grammar-{digest[:24]}.tables", digest, tables))


def load_data(
    format_: str, prefix: str, grammar_text: str, lark_version: str
) -> dict[str, Any] | None:
    """Another kind of per-grammar file in the same private directory (memledger.input.shapestore):
    `format_` names its layout, `prefix` its file name."""
    digest = _digest(grammar_text, lark_version, format_)
    return _with_directory(lambda fd: _read(fd, f"{prefix}-{digest[:24]}.json", digest, format_))


def store_data(
    format_: str, prefix: str, grammar_text: str, lark_version: str, data: dict[str, Any]
) -> None:
    """Save a `load_data` file (silently nothing when the cache is unusable)."""
    digest = _digest(grammar_text, lark_version, format_)
    _with_directory(lambda fd: _write(fd, f"{prefix}-{digest[:24]}.json", digest, data, format_))


KEY_FORMAT = "memledger-store-key 1"
_KEY_FILE = "store-key.json"


def store_key() -> bytes | None:
    """This user's secret for binding stored entries (memledger.input.shapestore), kept in the
    private state directory, created on first use; None when that directory is unusable."""

    def read(fd: int) -> bytes | None:
        found = _read(fd, _KEY_FILE, "key", KEY_FORMAT)
        key = None if found is None else found.get("key")
        if isinstance(key, str) and len(key) == 64:
            try:
                return bytes.fromhex(key)
            except ValueError:
                return None
        return None

    def read_or_create(fd: int) -> bytes | None:
        key = read(fd)
        if key is None:
            _write(fd, _KEY_FILE, "key", {"key": os.urandom(32).hex()}, KEY_FORMAT)
            key = read(fd)  # another process may have written its own meanwhile: theirs stands
        return key

    directory = state_directory()
    return None if directory is None else _with_directory(read_or_create, directory)
