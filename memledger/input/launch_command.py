"""A pasted SGLang launch command -> the settings it gives (never run, never evaluated).

Issue pastes often carry `python3 -m sglang.launch_server --model-path X --tp 8 \\` (continued
over lines with backslashes, after `$ `, inside a markdown block, a `docker run`, a systemd
`ExecStart=` or a shell script), or a docker-compose / Kubernetes `command:` (read by
memledger.input.launch_yaml), instead of SGLang's `server_args=` line. Only the input's first
block (memledger.input.reader.SNIFF_BYTES, where pastes begin) is searched, so no line of a long
log pays for it. The command's flags become ServerArgs fields (memledger.sglang.launch_flags);
values are typed as int or float when they read so, else kept as text; a shell variable is not
a value, and a release-dependent abbreviation (`--pp`) is read as the log's release reads it, or
not at all. Bounded: a command is at most MAX_COMMAND_CHARS, at most MAX_FLAGS flags are kept,
each value at most MAX_VALUE_CHARS; what is not kept is said in `problems`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from memledger.input.launch_yaml import shell_words, yaml_command_words
from memledger.input.server_args import is_read_key
from memledger.input.store import TEXT_CAP
from memledger.input.wrappers import unwrapped_text
from memledger.model.events import Event, EventKind, ParamValue
from memledger.sglang.launch_flags import (
    COMMAND_MARKERS,
    FLAG_FIELDS,
    NUMERIC_FIELDS,
    RELEASE_ABBREVIATIONS,
    SGLANG_REWRITES,
)
from memledger.sglang.release_markers import VersionRange, release_range

MAX_COMMAND_CHARS = 16384
"""A longer command is cut here (a real one is under 2 KiB)."""
MAX_CONTINUATIONS = 200
"""Physical lines joined into one command at most."""
MAX_TRIED = 32
"""Lines naming the launcher read at most (prose or usage text can name it on every line)."""
MAX_FLAGS = 256
MAX_VALUE_CHARS = 1024
NOTE_PREFIX = "launch command line "
"""How every note about a pasted launch command begins (diagnose shows them as findings)."""
_FLAG_RE = re.compile(r"--([A-Za-z][A-Za-z0-9_-]{0,79})(?:=(.*))?\Z", re.DOTALL)
_INT_RE = re.compile(r"[+-]?\d{1,18}\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:\d{1,18}\.\d{0,18}|\.\d{1,18})(?:[eE][+-]?\d{1,3})?\Z")
_SHELL_STOP = frozenset({"|", "||", "&", "&&", ";", ">", ">>", "2>&1", "<", "\\"})
_USAGE_RE = re.compile(r"<[A-Za-z_-]{1,40}>|\[options\]|\b(?:Example|[Uu]sage):")
"""A placeholder or a usage heading: help text quoting a command, not a command that ran."""
_SCRIPT_ARGUMENTS = frozenset({"$@", "$*", "${@}", "${*}"})
"""A wrapper script passing its own arguments on (`exec python -m sglang.launch_server "$@"`)."""
_PROMPT_RE = re.compile(r"^\s*(?:[$#>]\s+)?")


@dataclass
class LaunchCommand:
    """The first launch command of a paste: its physical line, text and settings."""

    line: int
    text: str
    params: dict[str, ParamValue] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _value(text: str) -> ParamValue:
    if _INT_RE.match(text):
        return int(text)
    if _FLOAT_RE.match(text):
        number = float(text)
        return number if math.isfinite(number) else text
    return text[:MAX_VALUE_CHARS]


def _arguments(tokens: list[str]) -> list[str]:
    """The tokens after `sglang.launch_server` / `sglang serve`, up to a shell operator."""
    start = None
    for index, token in enumerate(tokens):
        if token.endswith("sglang.launch_server"):
            start = index + 1
            break
        if token == "serve" and index and tokens[index - 1].endswith("sglang"):
            start = index + 1
            break
    if start is None:
        return []
    out: list[str] = []
    for token in tokens[start:]:
        if token in _SHELL_STOP or token.startswith((">", "2>", "|")):
            break
        out.append(token)
    return out


def parse_arguments(arguments: list[str], problems: list[str]) -> dict[str, ParamValue]:
    """`--flag value`, `--flag=value`, `--flag v1 v2` (a list), `--flag` (True) -> fields."""
    params: dict[str, ParamValue] = {}
    index = 0
    dropped = 0
    while index < len(arguments):
        match = _FLAG_RE.match(arguments[index])
        index += 1
        if match is None:
            if arguments[index - 1] in _SCRIPT_ARGUMENTS:
                problems.append(
                    f"{arguments[index - 1]} passes the script's own arguments on: not in the paste"
                )
            continue  # a positional word or a short option: SGLang's parser takes none
        name = match.group(1).replace("-", "_")
        name = FLAG_FIELDS.get(name, name)
        values: list[str] = [] if match.group(2) is None else [match.group(2)]
        while match.group(2) is None and index < len(arguments):
            token = arguments[index]
            if token.startswith("--") or (token.startswith("-") and not _value_like(token)):
                break
            if token in _SCRIPT_ARGUMENTS:
                break
            if values and not (_value_like(values[0]) and _value_like(token)):
                # a second word that is no number (`--port 30000 but it failed`): prose, not
                # a list flag's items (`--cuda-graph-bs 1 2 4`); nothing after it is read
                problems.append(f"stopped at {token[:40]!r}: neither a flag nor a number")
                index = len(arguments)
                break
            values.append(token)
            index += 1
        if len(params) >= MAX_FLAGS and name not in params:
            dropped += 1
            continue
        if any("$" in value or "`" in value for value in values):
            # `--tp $TP`, `--model-path "${MODEL}"`: the shell's value is not in the paste
            problems.append(f"--{match.group(1)} {values[0][:40]!r} is a shell variable: not read")
            continue
        if not values:
            if name in NUMERIC_FIELDS:
                problems.append(f"--{match.group(1)} has no value: not read")
                continue
            params[name] = True
        elif len(values) == 1:
            params[name] = _value(values[0])
        else:
            params[name] = [_value(v) for v in values[:MAX_FLAGS]]
    if dropped:
        problems.append(f"{dropped} flags beyond the first {MAX_FLAGS} not read")
    return params


def _value_like(token: str) -> bool:
    return bool(_INT_RE.match(token) or _FLOAT_RE.match(token))


def _starts_command(line: str) -> bool:
    return any(marker in line for marker in COMMAND_MARKERS)


def find_launch_command(head: bytes, whole: bool) -> LaunchCommand | None:
    """The first launch command in the input's first block (`whole`: the block is the entire
    input, else its cut last line is left out), joined over `\\` continuations."""
    if not any(marker.encode() in head for marker in COMMAND_MARKERS):
        return None  # most logs: one substring test of 8 KiB
    lines = head.decode("utf-8", "replace").split("\n")
    if not whole:
        lines.pop()
    tried = 0
    for number, line in enumerate(lines, start=1):
        if not _starts_command(line):
            continue
        tried += 1
        if tried > MAX_TRIED:
            break
        words = yaml_command_words(lines, number - 1, _starts_command)
        if words is not None:  # a compose/Kubernetes `command:`, an exec-form list
            found = _command(number, " ".join(words)[:MAX_COMMAND_CHARS], words)
            if found is not None:
                return found
        parts = [_PROMPT_RE.sub("", unwrapped_text(line), count=1)]
        follow = number
        while parts[-1].rstrip().endswith("\\") and follow < len(lines):
            if len(parts) > MAX_CONTINUATIONS or sum(map(len, parts)) > MAX_COMMAND_CHARS:
                break
            parts[-1] = parts[-1].rstrip()[:-1]
            parts.append(_PROMPT_RE.sub("", unwrapped_text(lines[follow]), count=1))
            follow += 1
        text = " ".join(part.strip() for part in parts)
        close = text.find("`", text.find("sglang"))
        if close >= 0:  # inline code (`python -m sglang.launch_server ...`) ends there
            text = text[:close]
        if _USAGE_RE.search(text[:MAX_COMMAND_CHARS]):
            continue  # SGLang's own usage text (`Example: sglang serve --model-path <model>`)
        problems: list[str] = []
        if len(text) > MAX_COMMAND_CHARS:
            problems.append(f"launch command cut at {MAX_COMMAND_CHARS} characters")
            text = text[:MAX_COMMAND_CHARS]
        found = _command(number, text, shell_words(text), problems)
        if found is not None:
            return found
    return None


def _command(
    number: int, text: str, tokens: list[str], problems: list[str] | None = None
) -> LaunchCommand | None:
    problems = [] if problems is None else problems
    params = parse_arguments(_arguments(tokens), problems)
    if not params:
        return None
    return LaunchCommand(line=number, text=text, params=params, problems=problems)


def resolve_abbreviations(
    params: dict[str, ParamValue], release: VersionRange
) -> tuple[dict[str, ParamValue], list[str]]:
    """The command's settings with each release-dependent abbreviation (`--pp`) read as SGLang's
    argparse reads it at the log's release, and what was not read: where the abbreviation is
    ambiguous (argparse refuses it) or the release does not say, it gives no setting."""
    out = dict(params)
    problems: list[str] = []
    for rule in RELEASE_ABBREVIATIONS:
        if rule.flag not in out:
            continue
        value = out.pop(rule.flag)
        shown = f"--{rule.flag.replace('_', '-')} {value!r}"
        first, last = release.first, release.last if release.consistent else None
        unique_lo, unique_hi = rule.unique_codes
        if first is not None and last is not None and unique_lo <= first and last <= unique_hi:
            out.setdefault(rule.field, value)
        elif first is not None and first > unique_hi:
            problems.append(
                f"{shown} not read: at SGLang {release.text} it is ambiguous ({rule.rivals}): "
                "SGLang's argparse refuses it"
            )
        elif last is not None and last < unique_lo - 1:
            problems.append(f"{shown} not read: SGLang {release.text} has no --{rule.long_flag}")
        else:
            problems.append(
                f"{shown} not read: it is --{rule.long_flag} at SGLang {rule.unique_text} and "
                f"ambiguous after it ({rule.rivals}: argparse refuses it); this log's release "
                f"({release.text}) does not say which"
            )
    return out, problems


def _agrees(name: str, given: ParamValue, printed: ParamValue) -> bool:
    """Whether a command's value is the one SGLang printed, counting its own rewrites."""
    if given == printed:
        return True
    rewritten = SGLANG_REWRITES.get((name, given), given) if isinstance(given, str) else given
    return rewritten == printed


def with_launch_command(
    events: list[Event], server_args: dict[str, ParamValue], launch: LaunchCommand | None
) -> tuple[list[Event], dict[str, ParamValue], list[str]]:
    """The startup's events and settings with the pasted command's, and the notes saying so.

    A printed `server_args=` line is what SGLang ran with and wins on every setting it prints:
    the command adds a note naming the flags it disagrees on, and the settings a cut line lost.
    Without one, the command's settings stand in, as a SERVER_ARGS event of form `command` at the
    command's line (so every reader of server_args sees them, and every citation of that line says
    it is the pasted command).
    """
    if launch is None:
        return events, server_args, []
    head = f"{NOTE_PREFIX}{launch.line}: "
    if server_args:  # the printed line gives pp_size itself: an abbreviation adds nothing
        abbreviated = {rule.flag for rule in RELEASE_ABBREVIATIONS}
        params = {name: value for name, value in launch.params.items() if name not in abbreviated}
        resolved: list[str] = []
    else:
        params, resolved = resolve_abbreviations(launch.params, release_range(events))
    launch = LaunchCommand(launch.line, launch.text, params, [*launch.problems, *resolved])
    notes = [head + problem for problem in launch.problems]
    if server_args:
        differ = [
            f"{name} {value!r} (server_args: {server_args[name]!r})"
            for name, value in launch.params.items()
            if name in server_args and not _agrees(name, value, server_args[name])
        ]
        if differ:
            shown = "; ".join(differ[:6]) + ("; ..." if len(differ) > 6 else "")
            notes.append(
                f"{head}differs from the server_args line, whose values are used (what SGLang "
                f"ran with): {shown}"
            )
        # what the printed line does not hold (a line the paste cut short) the command still says
        lost = {name: value for name, value in launch.params.items() if name not in server_args}
        return events, {**server_args, **lost}, notes
    event = Event(
        kind=EventKind.SERVER_ARGS,
        line=launch.line,
        rank="",
        params=dict(launch.params),
        values={"form": "command"},
        text=launch.text[:TEXT_CAP],
    )
    read = [f"{k}={v!r}" for k, v in launch.params.items() if is_read_key(k)]
    shown = ", ".join(read[:8]) + (", ..." if len(read) > 8 else "")
    notes.append(
        f"{head}no server_args line: the settings used are this pasted command's"
        + (f" ({shown})" if shown else "")
        + ", not SGLang's printout"
    )
    merged = sorted([*events, event], key=lambda e: e.line)
    return merged, dict(launch.params), notes
