"""The click group behind `memledger.cli.main`: its commands live in `memledger.commands`.

Imported by `main` after the big-log prefilter has started (click and the command modules are
most of a start-up), and by whoever wants the group itself (`memledger.cli.cli`).
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from memledger import __version__
from memledger.commands import COMMANDS
from memledger.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MemledgerError,
    Terminated,
    bounded,
    exit_codes_help,
)


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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's first sentence whole, wrapped (click cuts it at 45 columns with
        `...`, mid-sentence: `Say why a startup in LOG failed or came out small: the phase,...`)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=200)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=exit_codes_help(),
)
@click.version_option(__version__, prog_name="memledger")
def cli() -> None:
    """Turn SGLang startup logs into a GPU-memory ledger.

    \b
    Start with one log (a file, `-` for a paste on stdin, .gz works):
      memledger ledger server.log     where every GiB went
      memledger diagnose server.log   why it failed or came out small, and what to set
    then `memledger COMMAND --help`."""


def _quiet_stdout() -> None:
    """After a closed pipe: later writes (and the flush at exit) go nowhere, silently."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass


def run(argv: list[str] | None) -> int:
    """Run the click group on `argv` (None: sys.argv); errors become one line and an exit code."""
    try:
        result = cli.main(args=argv, prog_name="memledger", standalone_mode=False)
    except MemledgerError as exc:
        _say(f"memledger: error: {exc.one_line()}")
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
    """One line on stderr, which CI keeps in its job log: a path or value in it that holds a
    newline (a file name can) must not start a line of its own, such as `::error::` (a GitHub
    workflow command), nor emit a control character, nor run to 40 KB (a hostile value is
    shown by its start and end; imported here: errors only)."""
    from memledger.render.escape import one_line

    try:
        click.echo(bounded(one_line(message)), err=True)
    except (OSError, ValueError, AttributeError):
        pass  # stderr closed too
