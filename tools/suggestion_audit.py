"""Count the suggestions `diagnose` makes that fall short of issue 24's rule: "every suggestion
has a direction; where the paste carries the numbers, also a value and its arithmetic; `no
knob helps` only when that is true".

    python tools/suggestion_audit.py PASTE_DIR [--tests tests/diagnosis] [--show]

It reads two kinds of input:
- every `*.txt` paste in PASTE_DIR, each run as `memledger diagnose --format json -`;
- with --tests, every synthetic paste the tests diagnose through `tests.conftest.diagnose_paste`
  (the one way the tests diagnose made-up text): pytest runs them with this file as a plugin,
  which records each paste's text and its Diagnosis.

For each suggestion it counts
  (a) no direction;
  (b) no value, although the paste's text carries every number the lever's formula needs
      (NEEDS below: the fraction's P, mfs and the amount to free; a table lever's `args.*` and
      `log.*` names, memledger.sglang.levers.Lever.value), in any shape memledger may not read:
      SGLang's own line, a server_args repr, a launch flag, a reporter's sentence;
  (c) no suggestion at all ("none: no memory knob helps") while a finding names a lever.
The shapes in NEEDS are deliberately wider than memledger's readers: a (b) is a number the
formula does not reach. Not shipped in memledger/: a measuring aid.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

_NUM = r"\d+(?:\.\d+)?"
_P = re.compile(
    rf"Load weight begin[^\n]*avail mem=\s*{_NUM}"  # SGLang's reading before the weights
    rf"|(?i:free (?:memory )?before (?:the weights|loading|load)\D{{0,20}}{_NUM})"
)
_A = re.compile(
    rf"Load weight end[^\n]*avail mem=\s*{_NUM}"
    rf"|(?i:(?:free|avail\w*) after (?:the )?(?:weights|loading|load)\D{{0,20}}{_NUM})"
)
_MFS = re.compile(
    r"(?i:mem[-_ ]fraction[-_ ]static|gpu[-_ ]memory[-_ ]utilization)\W{0,6}"
    r"(?:(?:of|to|at|=|is)\W{0,3})?0?\.\d+"
)
_AMOUNT = re.compile(
    rf"Tried to allocate {_NUM}|(?i:{_NUM}\s*(?:MiB|GiB|GB|MB)\s+(?:short|more than))"
)
_KV = re.compile(
    rf"#tokens:\s*{_NUM}[^\n]*(?:K size|KV size)|max_total_num_tokens\W{{1,4}}{_NUM}"
    rf"|(?i:max[-_ ]total[-_ ]num[-_ ]tokens\W{{0,6}}(?:(?:is|of|=)\W{{0,3}})?{_NUM})"
)
_CAPACITY = re.compile(rf"total capacity of {_NUM}")
NEEDS: dict[tuple[str, str], tuple[tuple[str, re.Pattern[str]], ...]] = {
    # d >= amount / P lower (v0.5.8 model_runner_kv_cache_mixin.py:138-140), from mfs
    ("mem_fraction_static", "lower"): (("P", _P), ("mfs", _MFS), ("amount", _AMOUNT)),
    # minimum viable 1 - A / P (v0.5.23 mem_cache/kv_cache_configurator.py:3044-3056)
    ("mem_fraction_static", "raise"): (("P", _P), ("A", _A)),
    # the tokens whose bytes were missing off the pool's (diagnosis.levers.kv_cap_lever)
    ("max_total_tokens", "lower"): (("kv", _KV), ("amount", _AMOUNT)),
    # SGLang's default for the GPU the OOM text sizes (diagnosis.levers.table_value; it also
    # reads an nvidia-smi memory row or a named card, which this count does not ask for)
    ("cuda_graph_max_bs", "lower"): (("capacity", _CAPACITY),),
    ("chunked_prefill_size", "lower"): (("capacity", _CAPACITY),),
}

_PRESCRIBED = re.compile(r"\b(?:lower|raise|set|enable|disable|pass)\s+(--[a-z][a-z0-9-]+)")


def _table_needs() -> None:
    """Each table lever with a formula (Lever.value): its `args.*` and `log.*` names."""
    import gc

    import memledger.sglang.adjustments
    import memledger.sglang.lifecycle  # noqa: F401
    from memledger.sglang.levers import Lever

    for lever in (o for o in gc.get_objects() if isinstance(o, Lever) and o.value):
        names = sorted(set(re.findall(r"\b(?:args|log)\.(\w+)", lever.value)))
        shapes = tuple(
            (name, re.compile(rf"(?i:{name}|{name.replace('_', '[- ]')})\W{{0,4}}{_NUM}"))
            for name in names
        )
        NEEDS.setdefault((lever.knob, lever.direction), shapes)


def audit(text: str, diagnosis: dict[str, Any]) -> list[str]:
    """The shortfalls of one diagnosis: `a:knob`, `b:knob`, `c:--flag`."""
    out: list[str] = []
    suggestions = diagnosis.get("suggestions") or []
    for s in suggestions:
        direction = str(s.get("direction") or "")
        if not direction:
            out.append(f"a:{s.get('knob')}")
        needs = NEEDS.get((str(s.get("knob")), direction))
        if s.get("value") is None and needs and all(p.search(text) for _, p in needs):
            out.append(f"b:{s.get('knob')}:{direction}")
    if not suggestions:
        named = [
            m.group(1)
            for f in diagnosis.get("findings") or []
            for m in _PRESCRIBED.finditer(str(f.get("message")))
        ]
        out += [f"c:{named[0]}"] if named else []
    return out


def _pastes(folder: Path, show: bool) -> Counter[str]:
    """`memledger diagnose --format json PASTE` on each paste, in this process."""
    import contextlib
    import io

    from memledger.cli import main as memledger_main

    counts: Counter[str] = Counter()
    for paste in sorted(folder.glob("*.txt")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = memledger_main(["diagnose", "--format", "json", str(paste)])
        if code == 3 or not out.getvalue().strip():
            counts["exit 3"] += 1
            continue
        diagnosis = json.loads(out.getvalue())
        counts["diagnoses"] += 1
        counts["suggestions"] += len(diagnosis.get("suggestions") or [])
        counts["unvalued"] += sum(s.get("value") is None for s in diagnosis["suggestions"])
        counts["none"] += not diagnosis.get("suggestions")  # the text's `none: ...`
        for item in audit(paste.read_text(errors="replace"), diagnosis):
            counts[item.split(":")[0]] += 1
            if show:
                print(f"{paste.stem}: {item}")
    return counts


# the pytest plugin: records (text, diagnosis) of every diagnose_paste call
_SEEN: list[tuple[str, dict[str, Any]]] = []


def pytest_configure(config: Any) -> None:
    import tests.conftest as conftest
    from memledger.render.diagnose import render_json

    real = conftest.diagnose_paste

    def recorded(paste: Any, **kwargs: Any) -> Any:
        result = real(paste, **kwargs)
        text = paste if isinstance(paste, str) else "\n".join(paste) + "\n"
        rendered = render_json(result)
        _SEEN.append((text, json.loads(rendered)))
        return result

    conftest.diagnose_paste = recorded
    for module in list(sys.modules.values()):  # test modules import it by name
        if getattr(module, "diagnose_paste", None) is real:
            module.diagnose_paste = recorded  # type: ignore[attr-defined]
    config.pluginmanager.register(_Rebind(real, recorded), "suggestion_audit_rebind")


class _Rebind:
    def __init__(self, real: Any, recorded: Any) -> None:
        self.real, self.recorded = real, recorded

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            module = getattr(item, "module", None)
            if module is not None and getattr(module, "diagnose_paste", None) is self.real:
                module.diagnose_paste = self.recorded


def pytest_unconfigure(config: Any) -> None:
    out = Path(config.getoption("basetemp") or ".") / "suggestion_audit.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_SEEN))


def _tests(where: str, show: bool) -> Counter[str]:
    base = Path(tempfile.gettempdir()) / f"suggestion-audit-{os.getpid()}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tools.suggestion_audit",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(base),
            where,
        ],
        cwd=ROOT,
        check=False,
        capture_output=True,
    )
    seen = json.loads((base / "suggestion_audit.json").read_text())
    counts: Counter[str] = Counter()
    unique = dict(seen)  # one count a paste
    for text, diagnosis in unique.items():
        counts["diagnoses"] += 1
        counts["suggestions"] += len(diagnosis.get("suggestions") or [])
        counts["unvalued"] += sum(s.get("value") is None for s in diagnosis["suggestions"])
        counts["none"] += not diagnosis.get("suggestions")
        for item in audit(text, diagnosis):
            counts[item.split(":")[0]] += 1
            if show:
                print(f"test paste {text[:70]!r}: {item}")
    return counts


def main() -> None:
    args = sys.argv[1:]
    show = "--show" in args
    _table_needs()
    if args and not args[0].startswith("--"):
        print("pastes:", dict(_pastes(Path(args[0]), show)))
    if "--tests" in args:
        print("tests: ", dict(_tests(args[args.index("--tests") + 1], show)))


if __name__ == "__main__":
    main()
