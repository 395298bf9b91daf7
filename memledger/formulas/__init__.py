"""Named fixed costs as data: the formula model and safe evaluator (`expr`, pure) and the loader
of the packaged TOML and user files (`load`).

Modules:

- `expr`: Named fixed costs as data.
- `load`: Loading formulas.
- `reserved`: Row ids a user formula may not take (issue 12, F21).
"""

from memledger.formulas.expr import (
    FORMULAS_ENV,
    NAMESPACES,
    ExpressionError,
    Formula,
    MissingVariable,
    compile_expression,
    evaluate,
    format_value,
    render_text,
    version_code,
)
from memledger.formulas.load import (
    FormulaFiles,
    load_formulas,
    parse_formulas,
    read_formulas_file,
)

__all__ = [
    "FORMULAS_ENV",
    "NAMESPACES",
    "ExpressionError",
    "Formula",
    "FormulaFiles",
    "MissingVariable",
    "compile_expression",
    "evaluate",
    "format_value",
    "load_formulas",
    "parse_formulas",
    "read_formulas_file",
    "render_text",
    "version_code",
]
