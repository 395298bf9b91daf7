"""A spool: records on a private temporary file, read back as often as a report needs, so a
report over many logs keeps none of them in memory (`memledger check`'s results, the `ledger`
fleet view).

The file is unlinked at creation (`tempfile.TemporaryFile`): no other process can open it, and
it is gone when the process ends, however it ends. A record is a fixed-size header (a `struct`
whose last field is the payload's length) and its payload; what the payload holds is the
caller's (JSON text: nothing read back is ever unpickled or executed).
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any, Protocol, Self

LENGTH = struct.Struct("<I")
"""The header of a record that is only a payload."""
_BLOCK = 1 << 16


class Spool:
    """Records appended to a private temporary file, read back in the order written; a
    context manager (the file closes, and so is deleted, with it)."""

    def __init__(self, header: struct.Struct = LENGTH) -> None:
        self._header = header
        self._file: IO[bytes] = tempfile.TemporaryFile()
        self.count = 0
        """Records written."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close (and so delete) the file."""
        self._file.close()

    def append(self, payload: bytes, *fields: Any) -> None:
        """One record: the header's fields but the last (the length), then the payload."""
        self._file.write(self._header.pack(*fields, len(payload)) + payload)
        self.count += 1

    def records(self) -> Iterator[tuple[tuple[Any, ...], int, bytes]]:
        """Every record in the order written: its header fields (the length left out), where it
        starts in the file, its payload. Positioned reads: several passes may interleave."""
        self._file.flush()
        fd, end, header = self._file.fileno(), self._file.tell(), self._header
        buffer, base, offset = b"", 0, 0
        while offset < end:
            if offset + header.size > base + len(buffer):
                buffer, base = os.pread(fd, _BLOCK, offset), offset
            *fields, length = header.unpack_from(buffer, offset - base)
            start = offset + header.size
            if start + length > base + len(buffer):
                buffer, base = os.pread(fd, max(_BLOCK, header.size + length), offset), offset
            yield tuple(fields), offset, buffer[start - base : start - base + length]
            offset = start + length

    def payloads(self) -> Iterator[bytes]:
        """Every record's payload, in the order written."""
        return (payload for _fields, _offset, payload in self.records())


class Closable(Protocol):
    def close(self) -> None: ...


def closing_after(
    parts: Sequence[Iterable[str]], spooled: Closable, *, last: bool = True
) -> Iterator[str]:
    """The parts one after the other; `spooled` is closed after the `last` reader, or when a
    reader stops early (a closed pipe, a full disk)."""
    try:
        for part in parts:
            yield from part
    except BaseException:
        spooled.close()
        raise
    if last:
        spooled.close()
