"""What a bug report's environment outputs print, pasted beside the log: one row a line shape.

SGLang's and vLLM's issue templates ask for `python3 -m sglang.check_env` / `vllm collect-env`,
and reporters add `nvidia-smi`, `rocm-smi` or `pip list`. Of those outputs a diagnosis needs the
card and its memory (the weight-fit and fraction arithmetic: memledger.sizing.gpu reads a named
card through memledger.sglang.gpu_cards, a table's memory.total as is), the engine's release
(the version rules: memledger.sglang.release_markers.release_range) and the memory each process
holds on each card (nvidia-smi's process table). Each row reads one line as an event of its
`kind` (`gpu_named` or `release_named`) with the row's `form` and the groups it captures; the
first row that matches a line wins. A row's `words` are case-sensitive substrings every match
holds (the prefilter's and the quiet test's words: memledger.sglang.lines).

Read once per value per startup, at most memledger.input.store.GPU_EVIDENCE_CAP of them.
Not read: `npu-smi info` (no source to cite its table by), rocm-smi's concise table (VRAM% only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Value = str | int
"""What a row reads (an event's value; memledger.model.events is not imported: the scanner's
worker imports this module through memledger.sglang.lines)."""
INT, TEXT, SPACED, COUNT = "int", "text", "spaced", "count"
GPU_NAMED = "gpu_named"
RELEASE_NAMED = "release_named"

_CHECK_ENV = "v0.5.8 python/sglang/check_env.py"
_COLLECT_ENV = "vllm v0.11.0 vllm/collect_env.py"
_NVIDIA_SMI = (
    "nvidia-smi's default table (driver 450 on; `man nvidia-smi`: Memory Usage Total/Used in "
    "MiB, a process's Used GPU Memory)"
)


@dataclass(frozen=True)
class ReportLine:
    """One line shape of an environment output, and what it gives."""

    name: str
    kind: str
    """The event kind it makes: GPU_NAMED or RELEASE_NAMED."""
    form: str
    """The event's `form` value (which output it came from)."""
    pattern: str
    """Searched in the line (after the columns a paste put before it)."""
    words: tuple[str, ...]
    captures: tuple[tuple[str, str, str], ...]
    """(value key, regex group, how it is read: INT, TEXT, SPACED (`_` for a blank), COUNT (a
    comma-separated list's length))."""
    source: str
    example: str
    """A synthetic line in the shape the tool prints."""


REPORT_LINES: tuple[ReportLine, ...] = (
    ReportLine(
        "kernel config device_name",
        GPU_NAMED,
        "device_name",
        r"device_name=(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]{0,80})",
        ("device_name=",),
        (("name", "name", SPACED),),
        "a kernel-config path's `device_name=`: torch.cuda.get_device_name() with spaces as `_` "
        "(v0.5.10 layers/moe/fused_moe_triton/fused_moe_triton_config.py:27, utils/common.py:"
        "1785-1787), printed in the MoE and FP8-block config warnings",
        "Using default MoE config. Performance might be sub-optimal! Config file not found at "
        "/x/configs/E=8,N=1024,device_name=NVIDIA_H100_80GB_HBM3.json",
    ),
    ReportLine(
        "nvidia-smi memory row",
        GPU_NAMED,
        "nvidia_smi_total_mib",
        r"\|\s*(?P<used>\d{1,7})MiB\s*/\s*(?P<total>\d{1,7})MiB\s*\|",
        ("MiB /", "MiB/"),
        (("total_mib", "total", INT), ("used_mib", "used", INT)),
        f"{_NVIDIA_SMI}: a GPU's second row, `used / total` (memory.total is what SGLang's "
        "capacity query reads, v0.5.10 utils/common.py:1514-1549)",
        "| N/A   35C    P0             70W /  700W |   30215MiB /  81559MiB |      0%      "
        "Default |",
    ),
    ReportLine(
        "nvidia-smi process row",
        GPU_NAMED,
        "nvidia_smi_process",
        r"^\|\s+(?P<gpu>\d{1,3})\s+(?:\S+\s+\S+\s+)?(?P<pid>\d{1,9})\s+[CGM+]{1,3}\s+"
        r"(?P<process>\S.{0,200}?)\s+(?P<used>\d{1,7})MiB\s*\|",
        ("MiB |",),
        (
            ("gpu", "gpu", INT),
            ("pid", "pid", INT),
            ("process", "process", TEXT),
            ("used_mib", "used", INT),
        ),
        f"{_NVIDIA_SMI}: the Processes table, `GPU GI CI PID Type Process-name GPU-Memory` (GI "
        "and CI are MIG's, `N/A` without it; before driver 450: `GPU PID Type Process-name`)",
        "|    0   N/A  N/A     12345      C   python3                                  30206MiB |",
    ),
    ReportLine(
        "nvidia-smi name row",
        GPU_NAMED,
        "nvidia_smi_name",
        r"^\|\s+(?P<gpu>\d{1,3})\s+(?P<name>[A-Z].{0,60}?[^.\s])\s+(?:On|Off)\s+\|\s+[0-9A-F]{8}:",
        ("00000000:",),
        (("gpu", "gpu", INT), ("name", "name", TEXT)),
        f"{_NVIDIA_SMI}: a GPU's first row, `GPU Name Persistence-M | Bus-Id` (the name "
        "torch.cuda.get_device_name gives; a name cut to the column with `...` is not read)",
        "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    "
        "0 |",
    ),
    ReportLine(
        "check_env / collect-env GPU line",
        GPU_NAMED,
        "env_report",
        r"(?:^|: )(?:GPU|NPU) (?P<gpus>\d{1,3}(?:,\d{1,3}){0,63}): (?P<name>[A-Z].{0,80}?)"
        r"(?: \(UUID: [^)]*\))?$",
        ("GPU 0", "NPU 0"),
        (("name", "name", TEXT), ("gpus", "gpus", COUNT)),
        f"{_CHECK_ENV}:94-101 (`GPU 0,1,2,3: NAME`, the ids of each torch.cuda.get_device_name; "
        f"NPUs :337-345 `NPU 0,1: NAME`), printed `key: value` at :141-142; {_COLLECT_ENV}:190-"
        "210, 675 (`nvidia-smi -L` without the UUIDs: `GPU 0: NAME` a line; the words read the "
        "first GPU's line, which names the card)",
        "GPU 0,1,2,3,4,5,6,7: NVIDIA H100 80GB HBM3",
    ),
    ReportLine(
        "collect-env ROCm GPU",
        GPU_NAMED,
        "env_report",
        r"^GPU models and configuration\s*: (?P<name>[A-Za-z].{0,80}?) \(gfx\w+",
        ("GPU models",),
        (("name", "name", TEXT),),
        f"{_COLLECT_ENV}:190-202 (on ROCm torch.cuda.get_device_name and the gcnArchName) and :675",
        "GPU models and configuration : AMD Instinct MI300X (gfx942:sramecc+:xnack-)",
    ),
    ReportLine(
        "rocm-smi VRAM total",
        GPU_NAMED,
        "rocm_smi_vram",
        r"^GPU\[(?P<gpu>\d{1,3})\]\s*: VRAM Total Memory \(B\): (?P<bytes>\d{1,16})\s*$",
        ("Memory (B)",),
        (("gpu", "gpu", INT), ("vram_total_b", "bytes", INT)),
        "ROCm/rocm_smi_lib a129571 python_smi_tools/rocm_smi.py:2462 (`rocm-smi --showmeminfo "
        "vram`), printLog's `GPU[N]\\t\\t: NAME: VALUE` :883",
        "GPU[0]\t\t: VRAM Total Memory (B): 206141652992",
    ),
    ReportLine(
        "rocm-smi VRAM used",
        GPU_NAMED,
        "rocm_smi_vram",
        r"^GPU\[(?P<gpu>\d{1,3})\]\s*: VRAM Total Used Memory \(B\): (?P<bytes>\d{1,16})\s*$",
        ("Memory (B)",),
        (("gpu", "gpu", INT), ("vram_used_b", "bytes", INT)),
        "ROCm/rocm_smi_lib a129571 python_smi_tools/rocm_smi.py:2463 (the row above)",
        "GPU[0]\t\t: VRAM Total Used Memory (B): 298127360",
    ),
    ReportLine(
        "check_env sglang version",
        RELEASE_NAMED,
        "check_env",
        r"^sglang: (?P<release>\d{1,2}\.\d{1,3}\.\d{1,3}(?:\.?(?:post|rc|dev)\d{0,4})*)\s*$",
        ("sglang: ",),
        (("release", "release", TEXT),),
        f"{_CHECK_ENV}:74-86, :141-142 (importlib.metadata.version of each package, "
        "`sglang: X`; the same list names vllm, which is not the engine)",
        "sglang: 0.4.6.post5",
    ),
    ReportLine(
        "pip list / freeze sglang",
        RELEASE_NAMED,
        "pip",
        r"^(?:\[pip3?\] )?sglang(?:==|\s+)(?P<release>\d{1,2}\.\d{1,3}\.\d{1,3}"
        r"(?:\.?(?:post|rc|dev)\d{0,4})*)\s*$",
        ("sglang  ", "sglang=="),
        (("release", "release", TEXT),),
        "pip list (`NAME VERSION` columns), pip freeze (`NAME==VERSION`), vLLM collect-env's "
        f"pip section (`[pip3] NAME==VERSION`, {_COLLECT_ENV}:776-777): pip.pypa.io user guide",
        "sglang                            0.5.8",
    ),
)
"""Every line shape read, first match wins (the memory row before the process row: a process
row holds `MiB |` only)."""

REPORT_WORDS: tuple[str, ...] = tuple(dict.fromkeys(w for row in REPORT_LINES for w in row.words))
"""Every row's words (the prefilter's and the quiet test's)."""

_COMPILED: dict[str, re.Pattern[str]] = {}


def _regex(row: ReportLine) -> re.Pattern[str]:
    found = _COMPILED.get(row.name)
    if found is None:
        found = _COMPILED[row.name] = re.compile(row.pattern)
    return found


def report_evidence(text: str) -> tuple[str, tuple[tuple[str, Value], ...]] | None:
    """(event kind, the event's values as pairs, `form` first) of the first row that reads this
    line, else None. The line's trailing blanks are dropped first: a pattern's end is then `$`,
    never a blank run tried from each place a lazy name could end."""
    text = text.rstrip()
    for row in REPORT_LINES:
        if not any(word in text for word in row.words):
            continue
        found = _regex(row).search(text)
        if found is None:
            continue
        values: list[tuple[str, Value]] = [("form", row.form)]
        for key, group, how in row.captures:
            raw = found.group(group).strip()
            value: Value = raw
            if how == INT:
                value = int(raw)
            elif how == SPACED:
                value = raw.replace("_", " ")
            elif how == COUNT:
                value = len(raw.split(","))
            values.append((key, value))
        return row.kind, tuple(values)
    return None


OWN_TITLE = "sglang::"
"""SGLang's processes title themselves (setproctitle), and nvidia-smi lists them by that title:
one `sglang::scheduler_TP<n>` a GPU (v0.4.6 managers/scheduler.py:1994, v0.5.8 :2906), beside
`sglang::detokenizer` and `sglang::data_parallel_controller` (v0.5.8 managers/
detokenizer_manager.py:419, data_parallel_controller.py:551), which hold no GPU memory."""
SCHEDULER_TITLE = "sglang::scheduler"
INTERPRETER = re.compile(r"(?:^|/)python(?:\d(?:\.\d{1,2})?)?$")
"""A Python interpreter's name: this server before its scheduler titles itself, its front end
(fast image processors run on the GPU), or any other Python program: it is not counted as
another's when SGLang's scheduler shares the GPU, and the largest one is taken as this server's
when none does."""


@dataclass(frozen=True)
class Held:
    """What nvidia-smi's process table shows held on one GPU by processes not this server's."""

    gpu: int
    mib: int
    processes: tuple[tuple[str, int, int], ...]
    """(name, pid, MiB) of each process counted, largest first."""
    total_mib: int | None
    """The GPU's memory.total from its memory row, when the table has it."""
    lines: tuple[int, ...]

    @property
    def who(self) -> str:
        """`ollama (pid 12345) with 21.69 GiB, ...`."""
        return ", ".join(f"{n} (pid {p}) with {m / 1024:.2f} GiB" for n, p, m in self.processes)


def held_by_others(rows: Iterable[tuple[int, Mapping[str, object]]]) -> list[Held]:
    """Per GPU, the memory nvidia-smi's process table lists for processes other than this SGLang
    server's scheduler, most first, from (line, values) of `gpu_named` readings (REPORT_LINES):
    every process that is neither SGLang's (OWN_TITLE) nor a Python interpreter, every scheduler
    but the largest (a second server on the GPU), and, where no scheduler is listed, every
    interpreter but the largest. A GPU's memory row follows its name row (nvidia-smi's layout)."""
    procs: dict[int, list[tuple[str, int, int, int]]] = {}
    totals: dict[int, int] = {}
    named: dict[int, object] = {}  # a name row's line: its GPU
    for line, values in rows:
        form, gpu, used = values.get("form"), values.get("gpu"), values.get("used_mib")
        if form == "nvidia_smi_name":
            named[line] = gpu
        elif form == "nvidia_smi_total_mib" and isinstance(total := values.get("total_mib"), int):
            totals[named.get(line - 1, -1)] = total  # type: ignore[index]
        elif form == "nvidia_smi_process" and isinstance(gpu, int) and isinstance(used, int):
            pid = values.get("pid")
            row = (str(values.get("process")).strip(), pid if isinstance(pid, int) else 0, used)
            procs.setdefault(gpu, []).append((*row, line))
    found = []
    for gpu, listed in procs.items():
        listed.sort(key=lambda p: -p[2])
        schedulers = [p for p in listed if p[0].startswith(SCHEDULER_TITLE)]
        python = [p for p in listed if INTERPRETER.search(p[0])]
        others = [p for p in listed if not p[0].startswith(OWN_TITLE) and p not in python]
        others = sorted(
            others + (schedulers[1:] if schedulers else python[1:]), key=lambda p: -p[2]
        )
        if others:
            held = tuple(p[:3] for p in others)
            lines = tuple(sorted(p[3] for p in others))
            found.append(Held(gpu, sum(p[2] for p in others), held, totals.get(gpu), lines))
    return sorted(found, key=lambda h: -h.mib)
