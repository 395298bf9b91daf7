"""A pasted launch command as a source of settings (memledger.input.launch_command).

Flag names and aliases: v0.5.9 sglang/srt/server_args.py (add_cli_args :2890, from_cli_args
:5069-5075, `argparse.ArgumentParser()` with allow_abbrev at :5579).
"""

from __future__ import annotations

import io
import time

from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import Diagnosis, diagnose
from memledger.input.launch_command import (
    MAX_COMMAND_CHARS,
    MAX_FLAGS,
    find_launch_command,
    parse_arguments,
    resolve_abbreviations,
)
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind, ParsedLog
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.releases import version_code
from memledger.sizing.inputs import sizing_inputs

OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 78.08 GiB memory in use. Of the allocated memory 75.51 GiB is allocated by PyTorch, and "
    "1.01 GiB is reserved by PyTorch but unallocated."
)
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 300,'
    " in init_memory_pool",
    "    self.req_to_token_pool = ReqToTokenPool(",
    OOM_LINE,
]


def _parse(lines: list[str]) -> ParsedLog:
    return parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.log")


def _diagnose(lines: list[str]) -> Diagnosis:
    parsed = _parse(lines)
    return diagnose(parsed, build(parsed, LoadOptions()))


def test_command_alone_with_an_oom_traceback_gives_the_settings_and_says_so() -> None:
    lines = [
        "$ python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \\",
        "    --tp 4 --mem-fraction-static=0.95 --context-length 131072 \\",
        "    --enable-dp-attention --dp 2 --port 30000",
        *TRACEBACK,
    ]
    parsed = _parse(lines)
    assert parsed.startup.server_args == {
        "model_path": "meta-llama/Llama-3.1-70B-Instruct",
        "tp_size": 4,
        "mem_fraction_static": 0.95,
        "context_length": 131072,
        "enable_dp_attention": True,
        "dp_size": 2,
        "port": 30000,
    }
    settings = [e for e in parsed.startup.events if e.kind is EventKind.SERVER_ARGS]
    assert [(e.line, e.values["form"]) for e in settings] == [(1, "command")]
    inputs = sizing_inputs(parsed)
    assert inputs.knobs["tp_size"] == 4 and inputs.knobs["mem_fraction_static"] == 0.95
    assert (inputs.server_args_line, inputs.server_args_source) == (1, "pasted launch command line")

    diagnosis = _diagnose(lines)
    assert diagnosis.outcome == "oom"
    said = [f for f in diagnosis.findings if f.id == "launch_command"]
    assert len(said) == 1 and said[0].evidence == ["paste.log:1"]
    assert "not SGLang's printout" in said[0].message and "tp_size=4" in said[0].message
    context = next(s for s in diagnosis.suggestions if s.knob == "context_length")
    assert "context_length=131,072 from the pasted launch command, paste.log:1" in context.why


def test_a_printed_server_args_line_wins_over_the_command() -> None:
    # the printed line is what SGLang ran with (it may have changed a given value)
    lines = [
        "```bash",
        "python -m sglang.launch_server \\",
        "  --model-path Qwen/Qwen2.5-7B-Instruct \\",
        "  --mem-fraction-static 0.95 \\",
        "  --tp 2",
        "```",
        "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2.5-7B-Instruct', "
        "tp_size=2, mem_fraction_static=0.85, dp_size=1)",
        *TRACEBACK,
    ]
    parsed = _parse(lines)
    assert parsed.startup.server_args["mem_fraction_static"] == 0.85
    forms = [e.values["form"] for e in parsed.startup.events if e.kind is EventKind.SERVER_ARGS]
    assert forms == ["repr"]
    assert sizing_inputs(parsed).server_args_source == "server_args line"
    said = [f for f in _diagnose(lines).findings if f.id == "launch_command"]
    assert len(said) == 1 and said[0].evidence == ["paste.log:2"]
    assert "mem_fraction_static 0.95 (server_args: 0.85)" in said[0].message
    assert "tp_size" not in said[0].message  # the two agree on it


def test_values_sglang_rewrites_itself_are_not_a_disagreement() -> None:
    # v0.5.9 server_args.py:2352-2353 prints NEXTN as EAGLE, :884-885 'unquant' as None
    # (complex/003, 007 and 022 carry such pairs); a real difference is still named.
    lines = [
        "python3 -m sglang.launch_server --model-path X --speculative-algorithm NEXTN "
        "--speculative-draft-model-quantization unquant --mem-fraction-static 0.9",
        "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='X', "
        "speculative_algorithm='EAGLE', speculative_draft_model_quantization=None, "
        "mem_fraction_static=0.8)",
        *TRACEBACK,
    ]
    said = [f for f in _diagnose(lines).findings if f.id == "launch_command"]
    assert len(said) == 1
    assert "mem_fraction_static 0.9 (server_args: 0.8)" in said[0].message
    assert "speculative" not in said[0].message


def test_backslash_continued_command_in_a_markdown_block() -> None:
    # shaped as https://github.com/sgl-project/sglang/issues/11471 (docker run, inline code)
    head = "\n".join(
        [
            "The command I use is",
            "`docker run -d --gpus all \\",
            "  --shm-size 32g \\",
            "  lmsysorg/sglang:v0.5.3.post1 \\",
            "  python3 -m sglang.launch_server \\",
            "    --model-path /models/Qwen3-VL-235B-A22B-Thinking-AWQ  \\",
            "    --host 0.0.0.0 --port 30000 --tp 4 --enable-multimodal --mem-fraction-static 0.9",
            "`",
        ]
    ).encode()
    command = find_launch_command(head, whole=True)
    assert command is not None and command.line == 5
    # docker's own flags (--gpus, --shm-size) come before the marker: not SGLang's
    assert command.params == {
        "model_path": "/models/Qwen3-VL-235B-A22B-Thinking-AWQ",
        "host": "0.0.0.0",
        "port": 30000,
        "tp_size": 4,
        "enable_multimodal": True,
        "mem_fraction_static": 0.9,
    }


def test_flag_forms_aliases_and_shell_tails() -> None:
    problems: list[str] = []
    params = parse_arguments(
        "--model=X --ep 8 --tensor-parallel-size 2 --cuda-graph-bs 1 2 4 "
        "--tp --enable-torch-compile --json-model-override-args {} --x -1".split(),
        problems,
    )
    assert params == {
        "model_path": "X",
        "ep_size": 8,
        "tp_size": 2,
        "cuda_graph_bs": [1, 2, 4],
        "enable_torch_compile": True,
        "json_model_override_args": "{}",
        "x": -1,
    }
    assert problems == ["--tp has no value: not read"]
    # inline code inside prose, as https://github.com/sgl-project/sglang/issues/445 quotes it
    inline = find_launch_command(
        b"with the command `python -m sglang.launch_server --model-path ~/Llama3-70B --port"
        b" 30000` but I got on the 2 issues: running `python -m sglang.launch_server --tp 8`\n",
        True,
    )
    assert inline is not None and inline.params == {"model_path": "~/Llama3-70B", "port": 30000}
    prose: list[str] = []
    assert parse_arguments(["--port", "30000", "but", "--tp", "8"], prose) == {"port": 30000}
    assert prose == ["stopped at 'but': neither a flag nor a number"]
    serve = find_launch_command(b"sglang serve --model-path M --dp 2 2>&1 | tee log.txt\n", True)
    assert serve is not None and serve.params == {"model_path": "M", "dp_size": 2}


def test_hostile_one_megabyte_command_is_bounded_and_raises_nothing() -> None:
    flags = "".join(f"--f{i} {i} " for i in range(200_000))
    hostile = ("python -m sglang.launch_server " + flags)[: 1 << 20]
    began = time.perf_counter()
    command = find_launch_command(hostile.encode() + b"\n", whole=True)
    assert time.perf_counter() - began < 5
    assert command is not None
    assert len(command.text) <= MAX_COMMAND_CHARS and len(command.params) <= MAX_FLAGS
    assert f"launch command cut at {MAX_COMMAND_CHARS} characters" in command.problems
    # through the parser (only the input's first block is searched) and diagnose: no traceback
    lines = [hostile[:4000] + ' "unclosed \\', "'also unclosed", *TRACEBACK]
    diagnosis = _diagnose(lines)
    assert diagnosis.outcome == "oom"
    many = "python -m sglang.launch_server " + "".join(f"--g{i} 1 " for i in range(400))
    bounded = find_launch_command(many.encode(), whole=True)
    assert bounded is not None and len(bounded.params) == MAX_FLAGS
    assert f"{400 - MAX_FLAGS} flags beyond the first {MAX_FLAGS} not read" in bounded.problems


def test_no_command_no_change() -> None:
    log_line = b"[2025-01-01 00:00:00] Load weight begin. avail mem=70 GB\n"
    assert find_launch_command(log_line, True) is None
    # a word of prose naming the module, with no flags, gives no settings
    assert find_launch_command(b"I ran sglang.launch_server and it failed\n", True) is None
    # help text quoting a command, as real logs print it (real-logs single/005 line 3)
    usage = b"  Example: sglang serve --model-path <model> [options]\n"
    assert find_launch_command(usage, True) is None


COMPOSE_AND_KUBERNETES = {
    # docker-compose: a string (with a comment), a folded block, a plain scalar over two lines,
    # entrypoint + command as flow lists, a block list, `sh -c` in a string
    "compose string": (
        "services:\n  sglang:\n    image: lmsysorg/sglang:latest\n"
        "    command: python3 -m sglang.launch_server --model-path Q/Q3 --tp 2  # two GPUs\n"
        '    ports:\n      - "30000:30000"\n',
        4,
        {"model_path": "Q/Q3", "tp_size": 2},
    ),
    "compose folded": (
        "    command: >\n      python3 -m sglang.launch_server\n      --model-path Q/Q3\n"
        "      --tp 4\n    restart: always\n",
        2,
        {"model_path": "Q/Q3", "tp_size": 4},
    ),
    "compose plain over two lines": (
        "    command: python3 -m sglang.launch_server\n      --model-path Q/Q3 --tp 4\n"
        "    ipc: host\n",
        1,
        {"model_path": "Q/Q3", "tp_size": 4},
    ),
    "compose entrypoint and command": (
        '    entrypoint: ["python3", "-m", "sglang.launch_server"]\n'
        '    command: ["--model-path", "Q/Q3", "--tp", "2", "--enable-dp-attention"]\n',
        1,
        {"model_path": "Q/Q3", "tp_size": 2, "enable_dp_attention": True},
    ),
    "compose block list": (
        "  sglang:\n    command:\n      - python3\n      - -m\n      - sglang.launch_server\n"
        '      - --model-path=Q/Q3\n      - "--tp"\n      - "8"\n'
        "    environment:\n      - --tp=1\n",
        5,
        {"model_path": "Q/Q3", "tp_size": 8},
    ),
    "compose sh -c": (
        '    command: sh -c "pip install x && python3 -m sglang.launch_server --dp 2"\n',
        1,
        {"dp_size": 2},
    ),
    # Kubernetes: a container's command + args (block lists, items at the key's column), a
    # second container's args not taken; flow lists over two lines; sh -c with a `|` block
    "kubernetes block lists": (
        "      containers:\n      - name: sglang\n        image: lmsysorg/sglang:v0.5.2\n"
        "        command:\n        - python3\n        - -m\n        - sglang.launch_server\n"
        "        args:\n        - --model-path\n        - deepseek-ai/DeepSeek-V3\n"
        '        - --tp\n        - "8"\n        - --mem-fraction-static\n        - "0.8"\n'
        "        resources:\n          limits:\n            nvidia.com/gpu: 8\n"
        '      - name: sidecar\n        args: ["--port", "9"]\n',
        7,
        {"model_path": "deepseek-ai/DeepSeek-V3", "tp_size": 8, "mem_fraction_static": 0.8},
    ),
    "kubernetes flow lists": (
        '        command: ["sglang", "serve"]\n'
        '        args: ["--model-path", "X", "--tp", "8",\n'
        '               "--context-length", "32768"]\n',
        1,
        {"model_path": "X", "tp_size": 8, "context_length": 32768},
    ),
    "kubernetes sh -c block": (
        '        command: ["/bin/sh", "-c"]\n        args:\n          - |\n'
        "            pip install foo\n            python3 -m sglang.launch_server \\\n"
        "              --model-path X \\\n              --tp 8 --port 30000\n"
        "            echo --tp 99\n",
        5,
        {"model_path": "X", "tp_size": 8, "port": 30000},
    ),
    "dockerfile exec form": (
        'CMD ["python3", "-m", "sglang.launch_server", "--host", "0.0.0.0", "--tp", "2"]\n',
        1,
        {"host": "0.0.0.0", "tp_size": 2},
    ),
    # a systemd unit (continued with backslashes) and `sglang serve` in ExecStart
    "systemd unit": (
        "[Service]\nEnvironment=HF_HOME=/data/hf\n"
        "ExecStart=/opt/sglang/.venv/bin/python -m sglang.launch_server \\\n"
        "    --model-path /models/llama --tp 2 --port 30000\nRestart=always\n",
        3,
        {"model_path": "/models/llama", "tp_size": 2, "port": 30000},
    ),
    "systemd sglang serve": (
        "ExecStart=/opt/sglang/bin/sglang serve --model-path /models/llama --dp 2\n",
        1,
        {"model_path": "/models/llama", "dp_size": 2},
    ),
}


def test_compose_kubernetes_dockerfile_and_systemd_shapes() -> None:
    for name, (text, line, params) in COMPOSE_AND_KUBERNETES.items():
        command = find_launch_command(text.encode(), whole=True)
        assert command is not None, name
        assert (command.line, command.params, command.problems) == (line, params, []), name


def test_a_shell_script_s_variables_are_said_and_never_taken_as_values() -> None:
    script = (
        "#!/bin/bash\nMODEL=/models/x\n"
        'exec python3 -m sglang.launch_server --model-path "$MODEL" --tp ${TP:-2} '
        '--mem-fraction-static 0.9 "$@"\n'
    )
    command = find_launch_command(script.encode(), whole=True)
    assert command is not None and command.params == {"mem_fraction_static": 0.9}
    assert command.problems == [
        "--model-path '$MODEL' is a shell variable: not read",
        "--tp '${TP:-2}' is a shell variable: not read",
        "$@ passes the script's own arguments on: not in the paste",
    ]


def _pp_settings(dating_line: str) -> tuple[dict[str, object], list[str]]:
    parsed = _parse(
        ["python -m sglang.launch_server --model-path X --pp 2 --tp 4", dating_line, *TRACEBACK]
    )
    return dict(parsed.startup.server_args), parsed.notes


def test_pp_is_read_as_sglang_s_argparse_reads_it_at_the_log_s_release() -> None:
    # `--pp` is the unique prefix of `--pp-size` at v0.4.6.post2 - v0.5.3 and ambiguous from
    # v0.5.4 (`--pp-max-micro-batch-size`; argparse refuses it): sglang/launch_flags.py
    reason = resolve_abbreviations(
        {"pp": 2, "tp_size": 4}, VersionRange(first=version_code("0.5.0"), last=5003)
    )
    assert reason == ({"pp_size": 2, "tp_size": 4}, [])
    params, problems = resolve_abbreviations({"pp": 2}, VersionRange(first=5009, last=None))
    assert params == {}
    assert problems == [
        "--pp 2 not read: at SGLang >= 0.5.9 it is ambiguous (--pp-size, "
        "--pp-max-micro-batch-size from 0.5.4, --pp-async-batch-depth from 0.5.9): SGLang's "
        "argparse refuses it"
    ]
    params, problems = resolve_abbreviations({"pp": 2}, VersionRange(first=4003, last=4005))
    assert params == {} and problems == ["--pp 2 not read: SGLang 0.4.3 .. 0.4.5 has no --pp-size"]
    # a log whose lines do not date it: said, not guessed
    settings, notes = _pp_settings("[2025-06-01 10:00:00] Load weight begin. avail mem=70.00 GB")
    assert "pp" not in settings and "pp_size" not in settings and settings["tp_size"] == 4
    assert any("--pp 2 not read: it is --pp-size at SGLang 0.4.7 .. 0.5.3" in n for n in notes)


def test_hostile_yaml_shapes_are_bounded() -> None:
    # lists never closed, keys on every line, deep block lists: each marker line is read
    # within fixed bounds (MAX_TRIED lines, MAX_VALUE_LINES per value), far under a second
    shapes = [
        '  command: ["sglang.launch_server", "--tp", "2",\n' * 2000,
        "command:\n" + "- sglang.launch_server\n- --tp\n" * 2000,
        "".join(
            f"{' ' * (i % 40)}args: > \n{' ' * 41}sglang.launch_server --x {i}\n"
            for i in range(2000)
        ),
        "  - command: |\n" + "      python -m sglang.launch_server --tp 1 \\\n" * 3000,
    ]
    for text in shapes:
        began = time.perf_counter()
        find_launch_command(text.encode(), whole=True)
        assert time.perf_counter() - began < 2, text[:40]


def test_a_compose_file_pasted_above_the_error_gives_the_settings() -> None:
    text, line, params = COMPOSE_AND_KUBERNETES["kubernetes block lists"]
    parsed = _parse([*text.rstrip("\n").split("\n"), *TRACEBACK])
    assert parsed.startup.server_args == params
    settings = [e for e in parsed.startup.events if e.kind is EventKind.SERVER_ARGS]
    assert [(e.line, e.values["form"]) for e in settings] == [(line, "command")]
    assert sizing_inputs(parsed).knobs["tp_size"] == 8


def test_pp_beside_a_printed_server_args_line_adds_no_note() -> None:
    lines = [
        "python -m sglang.launch_server --model-path X --pp 2",
        "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='X', pp_size=2, tp_size=1)",
        *TRACEBACK,
    ]
    parsed = _parse(lines)
    assert parsed.startup.server_args["pp_size"] == 2
    assert not any("--pp" in note for note in parsed.notes)
