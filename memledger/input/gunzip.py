"""Gunzip with a bound on what a gzipped input may expand to (security review F29).

Memory stays flat while a gzipped log streams, but time grows with the expanded size: the review's
20 MB bomb gave 3 GB of text and 52 s of scanning. A gzipped input may expand to at most
`MEMLEDGER_GUNZIP_MAX_BYTES` (default 16 GiB, a few minutes of scanning) and, past its first
RATIO_FREE_BYTES (256 MiB), to at most `MEMLEDGER_GUNZIP_MAX_RATIO` (default 100) times the
compressed bytes read so far. SGLang logs compress 8-15x (the real corpus, gzip -9), one line
repeated a million times ~300x, deflate's ceiling is ~1,030x. Past a bound the read stops with a
one-line InputError (exit 3) that names the variable; `0` lifts that bound.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from typing import Protocol

from memledger.errors import ConfigError, InputError
from memledger.units import GIB, MIB

MAX_BYTES_ENV = "MEMLEDGER_GUNZIP_MAX_BYTES"
MAX_RATIO_ENV = "MEMLEDGER_GUNZIP_MAX_RATIO"
DEFAULT_MAX_BYTES = 16 * GIB
DEFAULT_MAX_RATIO = 100
RATIO_FREE_BYTES = 256 * MIB
"""Expanded bytes allowed before the ratio bound applies (a small, very repetitive log is fine)."""
_READ_ALL_CHUNK = 1 << 20


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True)
class GunzipLimits:
    """The bounds in force (0: none)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_ratio: int = DEFAULT_MAX_RATIO

    @classmethod
    def from_environment(cls) -> GunzipLimits:
        """The defaults, or what the two variables say (ConfigError for a bad value)."""
        return cls(
            max_bytes=_whole(MAX_BYTES_ENV, DEFAULT_MAX_BYTES),
            max_ratio=_whole(MAX_RATIO_ENV, DEFAULT_MAX_RATIO),
        )


def _whole(variable: str, default: int) -> int:
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    if not text.isdigit() or len(text) > 20:
        raise ConfigError(f"{variable}={text[:40]!r}: expected a whole number (0: no bound)")
    return int(text)


def _size(byte_count: int) -> str:
    return f"{byte_count / GIB:.1f} GiB" if byte_count >= GIB else f"{byte_count / MIB:.1f} MiB"


class _Counted:
    """The compressed stream, counting what gzip has read of it."""

    def __init__(self, raw: _Readable) -> None:
        self._raw = raw
        self.count = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        return data

    def seek(self, offset: int, /) -> int:
        raise OSError("input stream is not seekable")  # gzip only seeks when asked to rewind


class BoundedGunzip:
    """`read(size)` of the expanded bytes; InputError once a bound of GunzipLimits is passed."""

    def __init__(self, compressed: _Readable, name: str, limits: GunzipLimits) -> None:
        self._compressed = _Counted(compressed)
        self._gzip = gzip.GzipFile(fileobj=self._compressed, mode="rb")
        self._name = name
        self._limits = limits
        self.expanded = 0

    def read(self, size: int = -1, /) -> bytes:
        if size >= 0:
            return self._checked(self._gzip.read(size))
        chunks = []
        while chunk := self.read(_READ_ALL_CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)

    def _checked(self, data: bytes) -> bytes:
        self.expanded += len(data)
        limits = self._limits
        if limits.max_bytes and self.expanded > limits.max_bytes:
            raise InputError(
                f"gzip input expands past {_size(limits.max_bytes)} (a gzip bomb?); "
                f"{MAX_BYTES_ENV}=0 lifts the bound, or gunzip it yourself",
                path=self._name,
            )
        compressed = max(self._compressed.count, 1)
        if (
            limits.max_ratio
            and self.expanded > RATIO_FREE_BYTES
            and self.expanded > limits.max_ratio * compressed
        ):
            raise InputError(
                f"gzip input expands more than {limits.max_ratio}x ({_size(self.expanded)} from "
                f"{_size(compressed)} so far: a gzip bomb?); "
                f"{MAX_RATIO_ENV}=0 lifts the bound",
                path=self._name,
            )
        return data
