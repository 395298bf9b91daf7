"""Named fixed costs as data: the formula model and a safe expression evaluator (pure).

A formula is one entry of a TOML file (`memledger/data/formulas.toml`, plus an optional user
file): an id, the interval it is carved from, an expression over parsed parameters and model
dimensions, the evidence text and a one-line why. Expressions are Python-like arithmetic
evaluated by walking a whitelisted `ast` tree; nothing is ever passed to `eval`.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from functools import lru_cache
from typing import Any

from memledger.model.ledger import RowGroup
from memledger.record import record

FORMULAS_ENV = "MEMLEDGER_FORMULAS"
"""Environment variable naming a user formulas file, applied before any file passed to
`load_formulas` (the `--formulas FILE` options)."""

NAMESPACES = ("args", "log", "model")
"""Roots of variable names: `args.*` server_args, `log.*` read from the log, `model.*` dims."""

MAX_EXPRESSION_CHARS = 2000
MAX_NODES = 400
MAX_INT = 1 << 96
"""Results beyond this are refused (a formula never needs more than a few exabytes)."""
MAX_EXPONENT = 64
MAX_ROUND_DIGITS = 30
"""`round(x, n)` with |n| beyond this is refused: CPython computes 10 ** -n for an int x."""

ExprValue = int | float | str | bool | None
_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


class ExpressionError(ValueError):
    """An expression that is not allowed or cannot be evaluated (bad syntax, division by zero)."""


class MissingVariable(ExpressionError):
    """An expression referenced a variable that has no value here (absent or None)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"needs {name}")


@record
class Formula:
    """One named fixed cost: what it is, where it is carved from, and how to compute it."""

    id: str
    """Row id in the ledger (e.g. `req_to_token`)."""
    label: str
    """Short human description for tables."""
    interval: str | None = None
    """Checkpoint id whose incoming interval the cost is carved from (`memory_pool_end`), or an
    explicit `from->to`; None only for informational formulas."""
    expression: str
    """Bytes, as an expression over `args.*`, `log.*`, `model.*` and the `let` names."""
    text: str
    """Evidence template, `{name}` placeholders (e.g. `{rows} rows x {cols} cols x 4 B`)."""
    why: str
    """One line: why this memory exists."""
    group: RowGroup = RowGroup.WORKSPACE
    when: str | None = None
    """Applicability; false means the row is not applicable (left out), not unknown."""
    let: dict[str, str] = field(default_factory=dict)
    """Named intermediate expressions, evaluated in order; shown as the row's inputs."""
    informational: bool = False
    """True: shown beside the account, never carved from an interval or summed."""
    origin: str = ""
    """`file:line` where the entry was defined."""


# --------------------------------------------------------------------------------------------
# Safe evaluator
# --------------------------------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_FUNCTIONS: dict[str, Callable[..., ExprValue]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "round": lambda *args: _bounded_round(*args),
    "int": int,
    "float": float,
}
_LAZY_FUNCTIONS = frozenset({"default", "defined", "version"})
_ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.Load,
    ast.Tuple,
    ast.List,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.UAdd,
    *_BINARY,
    *_COMPARE,
)


def version_code(text: str) -> int:
    """`"0.5.11"` -> 5011 (major x 10^6 + minor x 10^3 + patch), for version comparisons."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if match is None:
        raise ExpressionError(f"version() needs 'MAJOR.MINOR[.PATCH]', got {text!r}")
    major, minor, patch = (int(part) if part else 0 for part in match.groups())
    return major * 1_000_000 + minor * 1_000 + patch


@lru_cache(maxsize=512)
def compile_expression(text: str, extra_names: frozenset[str] = frozenset()) -> ast.Expression:
    """Parse and validate an expression once; ExpressionError says what is not allowed."""
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not a valid expression: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError("expression nested too deeply") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExpressionError(f"expression has more than {MAX_NODES} parts")
    for node in nodes:
        if not isinstance(node, _ALLOWED_NODES):
            raise ExpressionError(f"{type(node).__name__} is not allowed in a formula")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ExpressionError(f"attribute {node.attr!r} is not allowed")
        if isinstance(node, ast.Constant) and not isinstance(
            node.value, int | float | str | bool | type(None)
        ):
            raise ExpressionError(f"constant {node.value!r} is not allowed")
        if isinstance(node, ast.Constant):
            _checked(node.value, node)  # 1e400 is inf, a 2000-digit literal is out of range
        if isinstance(node, ast.Call):
            _check_call(node)
        if isinstance(node, ast.Name) and not _name_allowed(node, tree, extra_names):
            raise ExpressionError(
                f"unknown name {node.id!r}: use args.*, log.*, model.* or a let name"
            )
    return tree


def _check_call(node: ast.Call) -> None:
    if not isinstance(node.func, ast.Name):
        raise ExpressionError("only plain function calls are allowed")
    name = node.func.id
    if name not in _FUNCTIONS and name not in _LAZY_FUNCTIONS:
        allowed = ", ".join(sorted({*_FUNCTIONS, *_LAZY_FUNCTIONS}))
        raise ExpressionError(f"function {name!r} is not allowed (allowed: {allowed})")
    if node.keywords:
        raise ExpressionError(f"{name}() takes no keyword arguments")
    if any(isinstance(arg, ast.Starred) for arg in node.args):
        raise ExpressionError(f"{name}() takes no *arguments")


def _name_allowed(node: ast.Name, tree: ast.Expression, extra_names: frozenset[str]) -> bool:
    if node.id in NAMESPACES or node.id in extra_names:
        return True
    # A function name is a Name too; it was checked in _check_call.
    return any(isinstance(call, ast.Call) and call.func is node for call in ast.walk(tree))


def evaluate(
    text: str,
    variables: Mapping[str, Any],
    local_names: Mapping[str, ExprValue] | None = None,
) -> ExprValue:
    """Evaluate an expression; MissingVariable names what is absent, ExpressionError the rest.

    `variables` maps dotted names (`args.dcp_size`) to values; a dict value can be entered with
    further dots (`args.cuda_graph_config.decode`). `local_names` holds `let` results.
    """
    locals_ = dict(local_names or {})
    tree = compile_expression(text, frozenset(locals_))
    result: ExprValue = _Evaluator(variables, locals_).visit(tree.body)
    return result


class _Evaluator:
    """Walks a validated tree; every node type has one method."""

    def __init__(self, variables: Mapping[str, Any], local_names: Mapping[str, ExprValue]):
        self.variables = variables
        self.local_names = local_names

    def visit(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return _checked(node.value, node)
        if isinstance(node, ast.Name | ast.Attribute):
            return _checked(self._lookup(node), node)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.BoolOp):
            return self._boolean(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Tuple | ast.List):
            return [self.visit(item) for item in node.elts]
        raise ExpressionError(f"{type(node).__name__} is not allowed in a formula")

    def _lookup(self, node: ast.Name | ast.Attribute) -> Any:
        path = _dotted(node)
        if path in self.local_names:
            return self.local_names[path]
        value = _resolve(path, self.variables)
        if value is None:
            raise MissingVariable(path)
        return value

    def _binary(self, node: ast.BinOp) -> Any:
        left, right = self.visit(node.left), self.visit(node.right)
        for operand in (left, right):
            if isinstance(operand, bool) or not isinstance(operand, int | float):
                raise ExpressionError(f"arithmetic on a non-number ({operand!r}) in {_shown(node)}")
        if isinstance(node.op, ast.Pow) and (
            not isinstance(right, int) or abs(right) > MAX_EXPONENT or abs(left) > MAX_INT
        ):
            raise ExpressionError(f"exponent out of range in {_shown(node)}")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ExpressionError(f"division by zero in {_shown(node)}") from None
        except OverflowError:  # float ** float, a huge int / int or int + float
            raise ExpressionError(f"result out of range in {_shown(node)}") from None
        return _checked(result, node)

    def _unary(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            raise ExpressionError(f"sign of a non-number in {_shown(node)}")
        return -operand if isinstance(node.op, ast.USub) else +operand

    def _boolean(self, node: ast.BoolOp) -> Any:
        result: Any = isinstance(node.op, ast.And)
        for value_node in node.values:
            result = self.visit(value_node)
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def _compare(self, node: ast.Compare) -> bool:
        left = self.visit(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.visit(right_node)
            try:
                if not _COMPARE[type(op)](left, right):
                    return False
            except TypeError:
                raise ExpressionError(f"cannot compare in {_shown(node)}") from None
            left = right
        return True

    def _call(self, node: ast.Call) -> Any:
        assert isinstance(node.func, ast.Name)  # guaranteed by compile_expression
        name = node.func.id
        if name == "default":
            if len(node.args) != 2:
                raise ExpressionError("default(expression, fallback) takes two arguments")
            try:
                return self.visit(node.args[0])
            except MissingVariable:
                return self.visit(node.args[1])
        if name == "defined":
            if len(node.args) != 1:
                raise ExpressionError("defined(expression) takes one argument")
            try:
                self.visit(node.args[0])
            except MissingVariable:
                return False
            return True
        if name == "version":
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant):
                raise ExpressionError("version('MAJOR.MINOR.PATCH') takes one literal string")
            return _checked(version_code(str(node.args[0].value)), node)
        arguments = [self.visit(arg) for arg in node.args]
        try:
            return _checked(_FUNCTIONS[name](*arguments), node)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ExpressionError(f"{name}() failed in {_shown(node)}: {exc}") from None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ExpressionError("attributes are only allowed on variable names")


def _resolve(path: str, variables: Mapping[str, Any]) -> Any:
    """A dotted name from the flat map, entering dict values for the remaining parts."""
    if path in variables:
        return variables[path]
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in variables:
            value = variables[head]
            for part in parts[cut:]:
                if not isinstance(value, dict) or part not in value:
                    return None
                value = value[part]
            return value
    return None


def _bounded_round(number: Any, digits: Any = None) -> Any:
    if digits is None:
        return round(number)
    if isinstance(digits, bool) or not isinstance(digits, int) or abs(digits) > MAX_ROUND_DIGITS:
        raise ValueError(f"digits must be an integer within ±{MAX_ROUND_DIGITS}")
    return round(number, digits)


def _checked(result: Any, node: ast.AST) -> Any:
    """`result` when it is a bounded number (or not a number); ExpressionError otherwise.

    Every constant, variable, operation and call result goes through here, so each operand of
    an operation is within MAX_INT and no later step can overflow or run for long."""
    what = "number" if isinstance(node, ast.Constant) else "result"
    if isinstance(result, float) and not math.isfinite(result):
        raise ExpressionError(f"{what} is not finite in {_shown(node)}")
    if isinstance(result, int) and abs(result) > MAX_INT:
        raise ExpressionError(f"{what} out of range in {_shown(node)}")
    return result


def render_text(template: str, variables: Mapping[str, Any], local_names: Mapping[str, Any]) -> str:
    """Fill `{expression}` placeholders of an evidence template; `{{`/`}}` are literal braces."""
    escaped = template.replace("{{", "\x00").replace("}}", "\x01")

    def fill(match: re.Match[str]) -> str:
        return format_value(evaluate(match.group(1), variables, local_names))

    return _PLACEHOLDER.sub(fill, escaped).replace("\x00", "{").replace("\x01", "}")


def format_value(value: Any) -> str:
    """Numbers as a reader wants them in arithmetic: integers plain, floats short."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    return str(value)


def _shown(node: ast.AST) -> str:
    return _elided(ast.unparse(node))


def _shown_text(text: str) -> str:
    return repr(_elided(text))


def _elided(text: str) -> str:
    """An expression for a message: a 400-digit literal is elided, not printed whole."""
    text = re.sub(r"\d{25,}", lambda m: f"<{len(m.group(0))} digits>", text)
    return text if len(text) <= 80 else text[:77] + "..."
