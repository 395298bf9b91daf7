"""Command-line entry point: a click group whose commands live in `memledger.commands`.

The click layer only parses options, calls one function and maps errors to exit codes.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from types import FrameType

import click

from memledger import __version__
from memledger.commands import COMMANDS
from memledger.errors import EXIT_INTERRUPTED, EXIT_USAGE, MemledgerError, exit_codes_help


class LazyGroup(click.Group):
    """A group whose commands are imported when used (or listed by --help), not at start-up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=exit_codes_help(),
)
@click.version_option(__version__, prog_name="memledger")
def cli() -> None:
    """Turn SGLang startup logs into a GPU-memory ledger."""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like Ctrl-C, so every `finally` stops its scan worker or grep."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = 128 + signum


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


def _quiet_stdout() -> None:
    """After a closed pipe: later writes (and the flush at exit) go nowhere, silently."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of raising (usable in-process by tests).

    Without `argv` (the console script, `python -m memledger`) the process ends as soon as the
    output is flushed: the interpreter's teardown (freeing every module and object, ~50 ms of a
    0.3 s run) does nothing a finished command needs.
    """
    if argv is None:
        # pydantic scans every installed package's entry points for plugins when the first
        # model is built; the CLI's models want none (saves the scan, ~2-20 ms a start)
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (an embedding caller): leave signals alone
        pass
    try:
        if argv is None:
            _prestart(sys.argv[1:])
        code = _run(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if "memledger.input.grep_scan" in sys.modules:  # no grep outlives the command
            sys.modules["memledger.input.grep_scan"].stop_all()
    if argv is None:
        _exit_now(code)
    return code


def _prestart(args: list[str]) -> None:
    """Start grep on a big log named in `args` before the command's imports (~0.2 s), so the
    two overlap (memledger.input.grep_scan)."""
    try:
        from memledger.input.grep_scan import prestart

        prestart(args)
    except Exception:  # an optimisation only: the reader starts the scan itself
        pass


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None when the process started with that fd closed
                stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: what could not be written is lost either way
    os._exit(code)


def _run(argv: list[str] | None) -> int:
    try:
        result = cli.main(args=argv, prog_name="memledger", standalone_mode=False)
    except MemledgerError as exc:
        click.echo(f"memledger: error: {exc.one_line()}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        if isinstance(exc, _NO_ARGS_IS_HELP):
            exc.show()  # `memledger` alone: the help itself (click >= 8.2 raises it as an error)
        else:
            _say(usage_error_line(exc))
        return EXIT_USAGE if exc.exit_code == 2 else exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        # click turns Ctrl-C into Abort; either way it is an interrupt, not a usage error
        _say("memledger: interrupted")
        return EXIT_INTERRUPTED
    except Terminated as exc:
        _say("memledger: terminated")
        return exc.exit_code
    except BrokenPipeError:
        _quiet_stdout()  # the reader went away (`| head`): nothing more to say
        return 0
    # A command may return its own exit code (check: 1 on a breach).
    return result if isinstance(result, int) else 0


_NO_ARGS_IS_HELP: tuple[type[click.ClickException], ...] = (
    (click.exceptions.NoArgsIsHelpError,)
    if hasattr(click.exceptions, "NoArgsIsHelpError")
    else ()  # click 8.1 prints the help itself
)
"""click >= 8.2's exception for a group called without a command: its message is the help."""


def usage_error_line(exc: click.ClickException) -> str:
    """A click error as one line, like every other error: `memledger: error: MESSAGE (see
    'memledger CMD --help')`. click's own form is three lines (Usage / Try / Error)."""
    message = " ".join(exc.format_message().split()).removesuffix(".")
    if not isinstance(exc, click.UsageError):
        return f"memledger: error: {message}"  # a file click could not open, ...
    ctx = exc.ctx
    help_hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    if ctx is not None and message.startswith("Missing argument"):
        # which arguments, in the order the usage line names them
        help_hint = (
            f" (usage: {ctx.command_path} {' '.join(ctx.command.collect_usage_pieces(ctx))})"
        )
    return f"memledger: error: {message}{help_hint}"


def _say(message: str) -> None:
    try:
        click.echo(message, err=True)
    except (OSError, ValueError, AttributeError):
        pass  # stderr closed too


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
