"""Writing a command's `Output`: the report to stdout or `-o FILE`, the extra files appended
(the GitHub step summary), and the terminal a report goes to."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from memledger.app.options import STDIN, Output, PathLike
from memledger.errors import ConfigError
from memledger.render.terminal import PLAIN, Terminal


def _write_stdout(pieces: Iterable[str]) -> None:
    """Write to stdout; a closed stdout (`>&-`) takes nothing, a full disk is a one-line error.

    A closed pipe (BrokenPipeError) propagates: the CLI ends quietly on it."""
    if sys.stdout is None:
        for _ in pieces:  # still produced: a streamed report's spool closes at its end
            pass
        return
    try:
        for text in pieces:
            sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot write output: {exc.strerror or exc}", path="<stdout>") from None


def _write_file(path: Path, pieces: Iterable[str]) -> None:
    """Replace a regular file whole (a temporary file renamed over it), so a failed write never
    leaves half a report; anything else (a device, a FIFO) is written as it is."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if path.exists() and not path.is_file():
        with path.open("w", encoding="utf-8") as device:
            device.writelines(pieces)
        return
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.writelines(pieces)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def terminal_for(destination: PathLike | None) -> Terminal:
    """The terminal a report goes to: stdout's width and colour, or 100 columns and no colour
    for a file."""
    if destination is None or os.fspath(destination) == STDIN:
        return Terminal.detect(sys.stdout)
    return PLAIN


def emit(output: Output, destination: PathLike | None = None) -> int:
    """Write the report to `destination` (stdout when None or `-`), append the extra files;
    return the exit code."""
    report = itertools.chain([output.text], output.chunks)
    if destination is None or os.fspath(destination) == STDIN:
        _write_stdout(report)
    else:
        try:
            _write_file(Path(destination), report)
        except OSError as exc:
            raise ConfigError(
                f"cannot write output: {exc.strerror or exc}", path=os.fspath(destination)
            ) from None
    for extra in output.extra_files:
        try:
            with extra.path.open("a", encoding="utf-8") as handle:
                handle.write(extra.text)
                handle.writelines(extra.chunks)
        except OSError as exc:
            raise ConfigError(
                f"cannot append to {extra.what}: {exc.strerror or exc}", path=str(extra.path)
            ) from None
    return output.exit_code
