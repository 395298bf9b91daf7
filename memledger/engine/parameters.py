"""`Ledger.parameters`: the memory-relevant server_args, the values the engine used
(`ledger.*`) and the settings the log reveals (`log.*`, from `sglang.rows.LOG_SETTINGS`)."""

from __future__ import annotations

import json
from typing import Any

from memledger.engine.chain import Chain
from memledger.engine.variables import Variables
from memledger.model.events import Event
from memledger.model.ledger import LEDGER_PARAM_PREFIX, LOG_PARAM_PREFIX
from memledger.sglang.rows import LOG_SETTINGS, PARAMETER_KEYS, SECRET_KEYS
from memledger.sglang.versions import version_text

MAX_PARAM_TEXT = 200
"""Longer list/dict parameter texts are cut (parameters are for reading, not computing)."""

_LEDGER_VALUES = (
    "dp_size",
    "tp_size",
    "dcp_size",
    "max_running_requests",
    "extra_slots",
    "slots",
    "context_len",
    "kv_tokens",
    "max_mamba_cache_size",
)

Parameter = int | float | str | bool | None


def parameters(chain: Chain, variables: Variables) -> dict[str, Parameter]:
    params: dict[str, Parameter] = {}
    for key, value in sorted(chain.args.items()):
        if not PARAMETER_KEYS.match(key) or SECRET_KEYS.search(key):
            continue
        params[key] = _param_value(value)
    for name in _LEDGER_VALUES:
        value = variables.log(name)
        if value is not None:
            params[LEDGER_PARAM_PREFIX + name] = value
    params[LEDGER_PARAM_PREFIX + "format_version_at_least"] = version_text(variables.format_version)
    params.update(log_settings(chain))
    return params


def log_settings(chain: Chain) -> dict[str, Parameter]:
    """`log.<name>` for every `LOG_SETTINGS` entry whose line the log printed."""
    found: dict[str, Parameter] = {}
    settled: set[str] = set()
    for setting in LOG_SETTINGS:
        name = LOG_PARAM_PREFIX + setting.name
        if name in settled:
            continue
        lines = [
            e
            for e in chain.events
            if e.kind == setting.kind
            and (setting.role is None or e.value("role") == setting.role)
            and all(key in e.values or key in e.sizes for key in setting.keys)
        ]
        if not lines:
            continue
        settled.add(name)  # the first entry that finds its line decides, even to skip
        if setting.count:
            found[name] = len(lines)
            continue
        printed = [_printed(lines[0], key) for key in setting.keys]
        value = printed[0] if len(printed) == 1 else "/".join(str(v) for v in printed)
        if setting.unless_arg is not None and chain.args.get(setting.unless_arg) == value:
            continue
        found[name] = _param_value(value)
    return found


def _printed(event: Event, key: str) -> Any:
    """A line's value under `key`; a size as printed (`28.01 MB`), not as bytes."""
    size = event.size(key)
    if size is not None and key not in event.values:
        return size.text
    return event.value(key)


def _param_value(value: Any) -> Parameter:
    """A parameter as a scalar: lists and dicts become their (capped) JSON text."""
    if isinstance(value, int | float | str | bool | None):
        return value
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_PARAM_TEXT else text[: MAX_PARAM_TEXT - 3] + "..."
