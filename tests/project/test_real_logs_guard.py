"""The corpus is read only through tests/conftest.py: a guard over the test sources.

A test that builds its own path to the corpus (`../shared/real-logs` from `__file__`, or from
MEMLEDGER_REAL_LOGS itself) fails on a clone with nothing beside it and ignores a corpus placed
elsewhere; a test that uses conftest's REAL_LOGS without the skip fails on that clone instead of
skipping. This reads every test module (ast, nothing imported) and names each such test.

Allowed ways to the corpus (conftest.py): REAL_LOGS under a guard, the guards being the
`real_logs` mark (on the test or as the module's pytestmark), a call of require_real_logs,
real_log, real_log_paths or load_truth (in the test, a fixture it takes, or a helper it calls),
the `truth` fixture, or a parametrize list built by one of those calls (an empty list skips).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import PROJECT_ROOT

TESTS = PROJECT_ROOT / "tests"
CORPUS_NAMES = {"REAL_LOGS"}
GUARD_CALLS = {"require_real_logs", "real_log", "real_log_paths", "load_truth"}
GUARD_FIXTURES = {"truth"}
# a literal spelling a path to the corpus or to the folder beside the checkout that holds it
CORPUS_LITERAL = re.compile(r"real-logs|(^|/)\.\./shared\b|^shared/")
ENV_VARIABLE = "MEMLEDGER_REAL_LOGS"


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the constant nodes that are docstrings (prose may name the corpus)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _parent_depth(node: ast.expr) -> tuple[int, bool]:
    """(number of trailing `.parent`s, whether the chain starts at `__file__`)."""
    depth = 0
    while isinstance(node, ast.Attribute) and node.attr == "parent":
        depth += 1
        node = node.value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value  # Path(__file__).resolve().parent: skip .resolve()
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]  # Path(__file__)
    return depth, isinstance(node, ast.Name) and node.id == "__file__"


def _reads_the_variable(node: ast.AST) -> bool:
    """os.environ["MEMLEDGER_REAL_LOGS"], os.environ.get(...), os.getenv(...)."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == ENV_VARIABLE
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in {"get", "getenv"} and node.args:
            first = node.args[0]
            return isinstance(first, ast.Constant) and first.value == ENV_VARIABLE
    return False


def own_paths_to_the_corpus(path: Path, tree: ast.Module) -> Iterator[str]:
    """Every place in a module that reaches the corpus without conftest, as `file:line: why`."""
    where = path.relative_to(PROJECT_ROOT).as_posix()
    docstrings = _docstrings(tree)
    # tests/x.py: parent is tests/, parent.parent the checkout; one more leaves it
    outside = len(path.relative_to(PROJECT_ROOT).parts)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and CORPUS_LITERAL.search(node.value):
                yield f"{where}:{line}: the literal {node.value[:60]!r} spells a corpus path"
        elif isinstance(node, ast.Attribute) and node.attr == "parent":
            depth, from_file = _parent_depth(node)
            if from_file and depth > outside:
                yield f"{where}:{line}: Path(__file__) + {depth} x .parent leaves the checkout"
            base = node.value
            if isinstance(base, ast.Name) and base.id == "PROJECT_ROOT":
                yield f"{where}:{line}: PROJECT_ROOT.parent leaves the checkout"
        elif _reads_the_variable(node):
            yield f"{where}:{line}: reads {ENV_VARIABLE} itself (conftest.REAL_LOGS does)"


@dataclass
class Function:
    """What one function (or fixture) of a test module does about the corpus."""

    names: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)
    arguments: set[str] = field(default_factory=set)
    decorated_guard: bool = False


def _decorator_guards(decorator: ast.expr, guarded_lists: set[str]) -> bool:
    for node in ast.walk(decorator):
        if isinstance(node, ast.Attribute) and node.attr == "real_logs":
            return True  # @pytest.mark.real_logs
        if isinstance(node, ast.Call) and _called(node) in GUARD_CALLS:
            return True  # parametrize over real_log_paths() / load_truth(): empty list skips
        if isinstance(node, ast.Name) and node.id in guarded_lists:
            return True
    return False


def _called(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _module_names(tree: ast.Module) -> tuple[set[str], set[str], bool]:
    """(module-level names built from the corpus path, names built by a guard call, whether
    the module's pytestmark is real_logs)."""
    touching = set(CORPUS_NAMES)
    guarded: set[str] = set()
    marked = False
    changed = True
    while changed:  # names built from names built from REAL_LOGS
        changed = False
        for node in tree.body:
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            calls = {_called(n) for n in ast.walk(node.value) if isinstance(n, ast.Call)}
            if "pytestmark" in names:
                marked = marked or any(
                    isinstance(n, ast.Attribute) and n.attr == "real_logs"
                    for n in ast.walk(node.value)
                )
            if used & touching and not names <= touching:
                touching |= names
                changed = True
            if (calls & GUARD_CALLS or used & guarded) and not names <= guarded:
                guarded |= names
                changed = True
    return touching, guarded, marked


def _fixtures_used(tree: ast.Module, decorators: list[ast.expr]) -> set[str]:
    """Fixture names a test takes through @pytest.mark.usefixtures("x"), written there or in a
    module-level name (`needs_real = pytest.mark.usefixtures("_real_logs")`)."""
    values = {
        t.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    found: set[str] = set()
    for decorator in decorators:
        expressions = [decorator]
        expressions += [
            values[n.id] for n in ast.walk(decorator) if isinstance(n, ast.Name) and n.id in values
        ]
        for expression in expressions:
            for node in ast.walk(expression):
                if isinstance(node, ast.Call) and _called(node) == "usefixtures":
                    found |= {
                        a.value
                        for a in node.args
                        if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    }
    return found


def _functions(tree: ast.Module, guarded_lists: set[str]) -> dict[str, Function]:
    functions: dict[str, Function] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        function = Function()
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name):
                function.names.add(inner.id)
            elif isinstance(inner, ast.Call):
                function.calls.add(_called(inner))
        function.arguments = {a.arg for a in node.args.args}
        function.arguments |= _fixtures_used(tree, node.decorator_list)
        function.decorated_guard = any(
            _decorator_guards(d, guarded_lists) for d in node.decorator_list
        )
        functions[node.name] = function
    return functions


def _closure(functions: dict[str, Function], start: set[str]) -> set[str]:
    """The functions that are in `start` or call (or take as a fixture) one that is."""
    found = set(start)
    changed = True
    while changed:
        changed = False
        for name, function in functions.items():
            if name not in found and (function.calls | function.arguments) & found:
                found.add(name)
                changed = True
    return found


def unguarded_readers(tree: ast.Module, imported: dict[str, tuple[bool, bool]]) -> list[str]:
    """Test functions that reach conftest's REAL_LOGS (directly, through a module-level name
    or a helper) with no guard on the way. `imported`: helper name -> (touches, guarded)."""
    touching, guarded_lists, marked = _module_names(tree)
    if marked:
        return []
    functions = _functions(tree, guarded_lists)
    touches = _closure(
        functions,
        {
            name
            for name, f in functions.items()
            if f.names & touching or any(imported.get(c, (False, False))[0] for c in f.calls)
        },
    )
    guarded = _closure(
        functions,
        {
            name
            for name, f in functions.items()
            if f.decorated_guard
            or f.calls & GUARD_CALLS
            or f.arguments & GUARD_FIXTURES
            or f.names & guarded_lists
            or any(imported.get(c, (False, False))[1] for c in f.calls)
        },
    )
    return sorted(n for n in touches - guarded if n.startswith("test"))


def helper_index(sources: dict[Path, ast.Module]) -> dict[str, tuple[bool, bool]]:
    """Functions of tests/*_helpers.py and conftest: name -> (touches the corpus, guarded)."""
    index: dict[str, tuple[bool, bool]] = {}
    for path, tree in sources.items():
        if not (path.name.endswith("_helpers.py") or path.name == "conftest.py"):
            continue
        touching, guarded_lists, _ = _module_names(tree)
        functions = _functions(tree, guarded_lists)
        guards = {n for n, f in functions.items() if f.calls & GUARD_CALLS or f.decorated_guard}
        guarded = _closure(functions, guards | (GUARD_CALLS & set(functions)))
        touches = _closure(functions, {n for n, f in functions.items() if f.names & touching})
        for name in functions:
            index[name] = (name in touches, name in guarded)
    return index


def _sources() -> dict[Path, ast.Module]:
    return {
        path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for path in sorted(TESTS.rglob("*.py"))
    }


def test_no_test_builds_its_own_path_to_the_corpus() -> None:
    problems = [
        problem
        for path, tree in _sources().items()
        if path.name != "conftest.py" and path != Path(__file__)  # this file spells the patterns
        for problem in own_paths_to_the_corpus(path, tree)
    ]
    assert problems == [], "read the corpus through tests/conftest.py:\n" + "\n".join(problems)


def test_every_test_that_reads_the_corpus_skips_without_it() -> None:
    sources = _sources()
    index = helper_index(sources)
    problems = [
        f"{path.relative_to(PROJECT_ROOT).as_posix()}::{name}"
        for path, tree in sources.items()
        if path.name.startswith("test_")
        for name in unguarded_readers(tree, index)
    ]
    assert problems == [], (
        "these tests use REAL_LOGS with no real_logs mark, require_real_logs() or a list built "
        "by real_log_paths()/load_truth(): without the corpus they fail instead of skipping:\n"
        + "\n".join(problems)
    )


# --- the guard catches what it is for (sources written here, never run) ------------------------


def _parse(text: str) -> ast.Module:
    return ast.parse(text)


def test_the_guard_catches_a_path_built_from_file_and_the_variable() -> None:
    source = _parse(
        "from pathlib import Path\nimport os\n"
        'A = Path(__file__).resolve().parent.parent.parent / "shared" / "real-logs"\n'
        'B = Path(os.environ.get("MEMLEDGER_REAL_LOGS", "x"))\n'
        'C = "../shared/real-logs/single"\n'
        "D = PROJECT_ROOT.parent\n"
        'E = Path(__file__).resolve().parent.parent / "samples"\n'  # inside the checkout: fine
    )
    problems = list(own_paths_to_the_corpus(TESTS / "test_x.py", source))
    lines = sorted(int(p.split(":")[1]) for p in problems)
    assert lines == [3, 3, 4, 5, 6], problems


def test_the_guard_catches_an_unguarded_reader_and_passes_guarded_ones() -> None:
    source = _parse(
        "import pytest\n"
        "from tests.conftest import REAL_LOGS, real_log_paths, require_real_logs\n"
        'LOG = REAL_LOGS / "single" / "x.log"\n'
        "PATHS = real_log_paths()\n"
        "def _read():\n    return LOG.read_text()\n"
        "def test_bare():\n    assert _read()\n"
        "def test_direct():\n    assert (REAL_LOGS / 'a').read_text()\n"
        "@pytest.mark.real_logs\ndef test_marked():\n    assert _read()\n"
        "def test_required():\n    require_real_logs()\n    assert _read()\n"
        "@pytest.mark.parametrize('p', PATHS)\ndef test_listed(p):\n    assert (REAL_LOGS / p)\n"
        "def test_truth(truth):\n    assert (REAL_LOGS / truth[0]['file'])\n"
        "def test_unrelated():\n    assert 1\n"
    )
    assert unguarded_readers(source, {}) == ["test_bare", "test_direct"]
    marked = _parse("import pytest\npytestmark = pytest.mark.real_logs\n" + ast.unparse(source))
    assert unguarded_readers(marked, {}) == []
