"""Command-line entry point: a click group whose commands live in `memledger.commands`.

The click layer only parses options, calls one function and maps errors to exit codes.
"""

from __future__ import annotations

import importlib
import sys

import click

from memledger import __version__
from memledger.commands import COMMANDS
from memledger.errors import EXIT_USAGE, MemledgerError, exit_codes_help


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


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of raising (usable in-process by tests)."""
    try:
        result = cli.main(args=argv, prog_name="memledger", standalone_mode=False)
    except MemledgerError as exc:
        click.echo(f"memledger: error: {exc.one_line()}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if exc.exit_code == 2 else exc.exit_code
    except click.exceptions.Abort:
        click.echo("memledger: aborted", err=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    # A command may return its own exit code (check: 1 on a breach).
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
