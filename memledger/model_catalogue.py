"""Model dimensions of well-known public models, for a log whose user gave no --model-config.

The catalogue (`data/models.json`) is data: one entry per Hugging Face repo id, holding only the
config.json keys memledger reads, each entry citing what it was copied from (a config.json in a
public repository at a commit, or a released wheel's model builder or config that names the
repo). A log names its model (server_args `model_path`); `match` finds the entry
conservatively: the repo id itself, a Hugging Face or ModelScope cache folder that spells it, or a
path whose last component is the entry's model name, exactly. A fine-tune, a re-quantisation or
any other name gets nothing. Whatever matched is said in the ledger (`ModelDims.catalogue`), and
the user's --model-config always wins (`model_dims`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from typing import Any

from memledger.model.model_config import ModelDims, load_model_config, model_dims_from_dict
from memledger.record import record


@record
class CatalogueEntry:
    """One model of the catalogue."""

    repo: str
    """The Hugging Face repo id (`Qwen/Qwen3-0.6B`)."""
    source: str
    """Where `config` was copied from: a config.json, `owner/repository@commit path`; or a model
    builder or config of a released wheel that names the repo, `name version wheel path:line ...`
    (data/models.json's `about` says how its fields map to config.json keys)."""
    config: dict[str, Any]
    """The config.json keys memledger reads (a VLM's under `text_config`, as the file has them)."""


@record
class PathRule:
    """How a local folder spells a model's name, with the source that says so."""

    name: str
    pattern: str
    """A regular expression over the path: group `name`, and `org` when the folder spells it."""
    dot: str = "."
    """How the folder writes a `.` of the repo id."""
    source: str


PATH_RULES: tuple[PathRule, ...] = (
    PathRule(
        name="Hugging Face cache folder",
        pattern=r"(?:^|/)models--(?P<org>[^/]+?)--(?P<name>[^/]+)(?:/snapshots/[0-9a-f]+)?$",
        source=(
            "huggingface_hub 2.4.0 file_download.py:747-755 repo_folder_name "
            "(`models` + repo id parts joined by REPO_ID_SEPARATOR, constants.py:110 `--`)"
        ),
    ),
    PathRule(
        name="ModelScope folder",
        pattern=r"(?:^|/)(?P<name>[^/]*___[^/]*)$",
        dot="___",
        source=(
            "modelscope 1.40.2 hub/utils/utils.py:146-154 get_model_masked_directory "
            "(`model_id.replace('.', '___')` on download)"
        ),
    ),
)
"""Cache layouts whose folder names spell the model (each read in the library's wheel)."""


@record
class CatalogueMatch:
    """The entry a model path matched, and why."""

    entry: CatalogueEntry
    how: str
    """`model_path 'X' is the repo id`, `... names it in a Hugging Face cache folder`, ..."""


@lru_cache(maxsize=1)
def entries() -> tuple[CatalogueEntry, ...]:
    """The packaged catalogue, read once."""
    text = resources.files("memledger").joinpath("data", "models.json").read_text("utf-8")
    return tuple(
        CatalogueEntry(repo=e["repo"], source=e["source"], config=e["config"])
        for e in json.loads(text)["entries"]
    )


def match(model_path: str) -> CatalogueMatch | None:
    """The entry `model_path` names, or None: the repo id (any case, as the hub resolves it), a
    cache folder that spells it (PATH_RULES), or a last path component equal to exactly one
    entry's model name. Nothing else: `Qwen3-8B-sft` or `Qwen3-8B-AWQ` is another model."""
    path = model_path.strip().replace("\\", "/").rstrip("/")
    if not path or len(path) > 4096:
        return None
    by_repo = {e.repo.casefold(): e for e in entries()}
    entry = by_repo.get(path.casefold())
    if entry is not None:
        return CatalogueMatch(entry=entry, how=f"model_path {model_path!r} is its repo id")
    name, how = path.rsplit("/", 1)[-1], "ends in its model name"
    for rule in PATH_RULES:
        found = re.search(rule.pattern, path)
        if found is None:
            continue
        name = found["name"].replace(rule.dot, ".")
        how = f"is its {rule.name}"
        if "org" in found.groupdict():
            # the folder spells the owner too: another owner's copy is another model
            entry = by_repo.get(f"{found['org']}/{name}".casefold())
            if entry is None:
                return None
            return CatalogueMatch(entry=entry, how=f"model_path {model_path!r} {how}")
        break
    named = [e for e in entries() if e.repo.rsplit("/", 1)[-1].casefold() == name.casefold()]
    if len(named) != 1:
        return None
    return CatalogueMatch(entry=named[0], how=f"model_path {model_path!r} {how} ({name!r})")


def catalogue_dims(model_path: object) -> ModelDims | None:
    """ModelDims of the entry `model_path` matches (None when it is no string or matches none),
    carrying in `catalogue` which entry, its source and how it matched."""
    if not isinstance(model_path, str):
        return None
    found = match(model_path)
    if found is None:
        return None
    entry = found.entry
    label = f"model catalogue: {entry.repo}"
    said = f"catalogue entry {entry.repo} (copied from {entry.source}); {found.how}"
    return replace(model_dims_from_dict(entry.config, label=label), catalogue=said)


def model_dims(config_path: str | os.PathLike[str] | None, model_path: object) -> ModelDims | None:
    """The model dimensions a run uses: the user's --model-config when given, else the
    catalogue's entry for the log's model path, else None."""
    if config_path is not None:
        return load_model_config(config_path)
    return catalogue_dims(model_path)
