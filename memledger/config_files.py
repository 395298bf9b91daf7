"""Reading the user's config files (budget, formulas, model config, grammar) as text."""

from __future__ import annotations

import os
from pathlib import Path

from memledger.errors import ConfigError


def read_config_text(path: str | os.PathLike[str], what: str, *, directory_hint: str = "") -> str:
    """The file's UTF-8 text; a one-line ConfigError naming `what` and the path when it cannot be.

    `directory_hint` follows "is a directory" (e.g. "; pass its config.json").
    """
    label = os.fspath(path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", path=label) from None
    except IsADirectoryError:
        raise ConfigError(f"{what} is a directory{directory_hint}", path=label) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{what} is not UTF-8 text", path=label) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {exc.strerror or exc}", path=label) from None
