"""The model catalogue (memledger/data/models.json): every entry is a config memledger can read,
cites the file it was copied from, and is found only by a path that names its model; a ledger
built from it says so; --model-config wins. Logs here are synthetic lines in SGLang's shape."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import memledger
from memledger.model.ledger import Ledger, RowKind
from memledger.model.model_config import model_dims_from_dict
from memledger.model_catalogue import PATH_RULES, catalogue_dims, entries, match

CONFIG_FILE = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} \S+\.json$")
BUILDER = re.compile(r"^torchtune \d+\.\d+\.\d+ wheel \S+\.py:\d+-\d+ \w+$")
LITGPT = re.compile(
    r"^litgpt \d+\.\d+\.\d+ wheel litgpt/config\.py:\d+ hf_config\(org='([^']+)', name='([^']+)'\)$"
)


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.repo)
def test_each_entry_reads_as_a_config_and_cites_its_file(entry: object) -> None:
    from memledger.model_catalogue import CatalogueEntry

    assert isinstance(entry, CatalogueEntry)
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry.repo)
    dims = model_dims_from_dict(entry.config, label=entry.repo)
    if BUILDER.match(entry.source):
        # a model builder: only the keys its arguments give (no class name, no dtype)
        assert set(entry.config) <= {
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "hidden_size",
            "head_dim",
            "max_position_embeddings",
        }
    elif (litgpt := LITGPT.match(entry.source)) is not None:
        # a litgpt config: its hf_config names this repo (a `{}` stands for a variant's suffix)
        org, name = litgpt.groups()
        assert re.fullmatch(re.escape(f"{org}/{name}").replace(r"\{\}", ".*"), entry.repo)
        assert set(entry.config) <= {
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "hidden_size",
            "head_dim",
        }
    else:
        assert CONFIG_FILE.match(entry.source), entry.source
        # the cited file is named for the repo it copies (owner--name_config.json)
        assert entry.source.endswith(entry.repo.replace("/", "--", 1) + "_config.json")
        assert dims.architecture
    assert dims.num_hidden_layers and dims.num_hidden_layers > 0
    assert dims.num_attention_heads and dims.num_attention_heads > 0
    assert (
        dims.num_key_value_heads is None or dims.num_attention_heads % dims.num_key_value_heads == 0
    )


def test_repo_ids_are_unique_whatever_the_case() -> None:
    repos = [e.repo.casefold() for e in entries()]
    assert len(repos) == len(set(repos))


def test_every_path_rule_cites_the_library_release_it_was_read_in() -> None:
    for rule in PATH_RULES:
        assert re.search(r"\d+\.\d+\.\d+ \S+\.py:\d+", rule.source), rule.source
        re.compile(rule.pattern)


@pytest.mark.parametrize(
    ("path", "repo"),
    [
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
        ("qwen/qwen3-8b", "Qwen/Qwen3-8B"),  # the hub resolves repo ids in any case
        ("/models/Qwen3-8B/", "Qwen/Qwen3-8B"),
        ("/data/hub/models--Qwen--Qwen3-8B/snapshots/0123abcd", "Qwen/Qwen3-8B"),
        ("/root/.cache/modelscope/hub/models/Qwen/Qwen3-0___6B", "Qwen/Qwen3-0.6B"),
        (r"C:\models\Kimi-K2.5", "moonshotai/Kimi-K2.5"),
    ],
)
def test_a_path_that_names_the_model_matches(path: str, repo: str) -> None:
    found = match(path)
    assert found is not None and found.entry.repo == repo


@pytest.mark.parametrize(
    "path",
    [
        "/models/Qwen3-8B-sft",  # a fine-tune
        "/models/Qwen3-8B-AWQ",  # a re-quantisation
        "/data/hub/models--someone--Qwen3-8B/snapshots/0123abcd",  # another owner's copy
        "someone/Qwen3-8B-Instruct-abliterated",
        "/models/my-model",
        "",
        "Qwen3",
    ],
)
def test_any_other_name_gets_nothing(path: str) -> None:
    assert match(path) is None


def _lines(model_path: str) -> list[str]:
    """A Qwen3-8B launch (36 layers, 8 KV heads x 128, bf16): pool of 300,000 tokens."""
    tokens = 300_000
    size = (tokens + 1) * 8 * 128 * 2 * 36 / 2**30
    return [
        f"[2026-01-01 00:00:00] server_args=ServerArgs(model_path='{model_path}', tp_size=1, "
        "page_size=1, mem_fraction_static=0.85, device='cuda')",
        "[2026-01-01 00:00:01 TP0] Init torch distributed begin.",
        "[2026-01-01 00:00:01 TP0] Init torch distributed ends. mem usage=0.02 GB",
        "[2026-01-01 00:00:02 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-01-01 00:00:03 TP0] Load weight end. elapsed=1.25 s, type=Qwen3ForCausalLM, "
        "dtype=torch.bfloat16, avail mem=63.00 GB, mem usage=15.50 GB.",
        f"[2026-01-01 00:00:03 TP0] KV Cache is allocated. #tokens: {tokens}, "
        f"K size: {size:.2f} GB, V size: {size:.2f} GB",
        "[2026-01-01 00:00:03 TP0] Memory pool end. avail mem=21.00 GB",
        "[2026-01-01 00:00:04 TP0] max_total_num_tokens=300000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=64, context_len=40960, "
        "available_gpu_mem=21.00 GB",
    ]


def _ledger(model_path: str, model_config: Path | None = None) -> Ledger:
    text = "\n".join(_lines(model_path)) + "\n"
    return memledger.ledger(memledger.load_text(text), model_config=model_config)


def test_a_matched_ledger_names_the_entry_and_its_source_for_each_derived_number() -> None:
    entry = next(e for e in entries() if e.repo == "Qwen/Qwen3-8B")
    found = _ledger("/models/Qwen3-8B")
    row = found.row("kv_alloc_rounding")
    assert row is not None and row.bytes and row.bytes > 0
    assert row.evidence.inputs["model.num_hidden_layers"] == 36
    said = row.evidence.inputs["model.source"]
    assert isinstance(said, str) and "Qwen/Qwen3-8B" in said and entry.source in said
    assert any("model catalogue" in note and entry.source in note for note in found.notes)


def test_an_unknown_model_gets_no_model_dims() -> None:
    found = _ledger("/models/my-own-8b")
    row = found.row("kv_alloc_rounding")
    assert row is not None and row.kind is RowKind.UNKNOWN  # it needs the layer count
    assert "--model-config" in (row.evidence.note or "")
    assert not any("model catalogue" in note for note in found.notes)


def test_the_users_model_config_wins(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "num_hidden_layers": 36,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "torch_dtype": "bfloat16",
            }
        )
    )
    found = _ledger("Qwen/Qwen3-8B", config)
    row = found.row("kv_alloc_rounding")
    assert row is not None and row.bytes and row.bytes > 0
    assert "model.source" not in row.evidence.inputs
    assert not any("model catalogue" in note for note in found.notes)


def test_no_model_path_no_entry() -> None:
    assert catalogue_dims(None) is None
    assert catalogue_dims(3) is None
    dims = catalogue_dims("Qwen/Qwen3-8B")
    assert dims is not None and dims.catalogue is not None and "Qwen/Qwen3-8B" in dims.catalogue


def test_a_pasted_launch_command_names_the_model_too() -> None:
    # a paste without server_args: the launch command's --model-path is the model path
    lines = [
        "$ python3 -m sglang.launch_server --model-path qwen/qwen3-8b --mem-fraction-static 0.85",
        *_lines("unused")[1:],
    ]
    found = memledger.ledger(memledger.load_text("\n".join(lines) + "\n"))
    row = found.row("kv_alloc_rounding")
    assert row is not None and row.kind is RowKind.DERIVED
    assert "Qwen/Qwen3-8B" in str(row.evidence.inputs["model.source"])
