"""The formulas file and its evaluator (safe by construction), and the model-config loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.errors import ConfigError
from memledger.formulas import (
    FORMULAS_ENV,
    ExpressionError,
    MissingVariable,
    evaluate,
    load_formulas,
    parse_formulas,
    render_text,
    version_code,
)
from memledger.model.ledger import RowGroup
from memledger.model.model_config import load_model_config
from tests.conftest import SAMPLES

VARIABLES = {
    "args.dcp_size": 8,
    "args.mode": "decode",
    "args.cuda_graph_config": {"decode": {"max_bs": 24}},
    "args.empty": None,
    "log.context_len": 1048576,
}

REFUSED = [
    "__import__('os').system('true')",
    "open('/etc/passwd')",
    "args.__class__",
    "args.dcp_size.__class__.__mro__",
    "(lambda: 1)()",
    "[x for x in [1, 2]]",
    "args['dcp_size']",
    "exec('1')",
    "getattr(args, 'dcp_size')",
    "min.__call__(1, 2)",
    "some_global",
    "{1: 2}",
    "f'{args.dcp_size}'",
    "(yield 1)",
    "args.dcp_size := 3",
]


@pytest.mark.parametrize("expression", REFUSED)
def test_evaluator_refuses_anything_but_arithmetic(expression: str) -> None:
    with pytest.raises(ExpressionError):
        evaluate(expression, VARIABLES)


@pytest.mark.parametrize(
    "expression",
    [
        "2 ** 1000",
        "10 ** 30 * 10 ** 30",
        "1 / 0",
        "args.mode + 1",
        "True + 1",
        "1e308 * 10",
        "x" * 2001,
        "-" * 1500 + "1",
        "(" * 300 + "1" + ")" * 300,
    ],
)
def test_evaluator_refuses_runaway_or_ill_typed_arithmetic(expression: str) -> None:
    with pytest.raises(ExpressionError):
        evaluate(expression, VARIABLES)


def test_evaluator_computes_with_namespaces_lets_and_functions() -> None:
    assert evaluate("log.context_len + 4 + args.dcp_size", VARIABLES) == 1048588
    assert evaluate("rows * 4", VARIABLES, {"rows": 209}) == 836
    assert evaluate("args.cuda_graph_config.decode.max_bs", VARIABLES) == 24
    assert evaluate("1 if args.mode == 'decode' else 0", VARIABLES) == 1
    assert evaluate("max(1, min(args.dcp_size, 4)) * ceil(5 / 2)", VARIABLES) == 12
    assert evaluate("default(args.absent, 3) + default(args.empty, 2)", VARIABLES) == 5
    assert evaluate("defined(args.dcp_size) and not defined(args.absent)", VARIABLES) is True
    assert evaluate("version('0.5.11')", VARIABLES) == version_code("0.5.11") == 5011


def test_missing_variable_names_what_is_missing() -> None:
    with pytest.raises(MissingVariable) as caught:
        evaluate("args.dcp_size * model.num_attention_heads", VARIABLES)
    assert caught.value.name == "model.num_attention_heads"
    with pytest.raises(MissingVariable):
        evaluate("args.empty + 1", VARIABLES)  # None counts as missing


def test_evidence_text_fills_placeholders() -> None:
    text = render_text(
        "{rows} rows x {log.context_len + 4} cols x 4 B {{literal}}", VARIABLES, {"rows": 209}
    )
    assert text == "209 rows x 1048580 cols x 4 B {literal}"


def test_packaged_formulas_cover_the_named_costs() -> None:
    formulas = {formula.id: formula for formula in load_formulas()}
    assert {"req_to_token", "draft_slot_map", "dcp_q_replica", "kv_free_pages"} <= set(formulas)
    assert formulas["req_to_token"].interval == "memory_pool_end"
    assert formulas["dcp_q_replica"].interval == "capture_begin"
    assert formulas["mem_fraction_static_reserve"].informational
    assert all(
        f.why and f.text and f.origin.startswith("memledger/data/formulas.toml:")
        for f in formulas.values()
    )


USER_FORMULA = """
[[formula]]
id = "req_to_token"
label = "mine"
interval = "memory_pool_end"
expression = "1024"
text = "1 KiB"
why = "overridden"

[[formula]]
id = "fork_scratch"
label = "fork scratch buffer"
interval = "capture_begin"
group = "workspace"
expression = "args.dcp_size * 1048576"
text = "{args.dcp_size} x 1 MiB"
why = "the fork keeps a scratch buffer per DCP rank"
"""


def test_user_file_adds_and_replaces_formulas(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(USER_FORMULA)
    formulas = load_formulas(path)
    by_id = {f.id: f for f in formulas}
    assert by_id["req_to_token"].why == "overridden"
    assert by_id["fork_scratch"].group == RowGroup.WORKSPACE
    assert by_id["fork_scratch"].origin == f"{path}:10"
    assert [f.id for f in formulas].count("req_to_token") == 1


def test_environment_variable_names_a_user_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "env.toml"
    path.write_text(USER_FORMULA)
    monkeypatch.setenv(FORMULAS_ENV, str(path))
    assert "fork_scratch" in {f.id for f in load_formulas()}
    monkeypatch.delenv(FORMULAS_ENV)
    assert "fork_scratch" not in {f.id for f in load_formulas()}


def entry(**fields: str | None) -> str:
    """One [[formula]] table; keys in this order, a None value leaves the key out."""
    keys: dict[str, str | None] = {
        "id": "'x'",
        "label": "'l'",
        "interval": "'a'",
        "expression": "'1'",
    }
    keys |= {"text": "'t'", "why": "'w'"}
    keys.update(fields)
    return "[[formula]]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items() if v is not None)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            entry(label=None, interval=None, expression=None, text=None, why=None),
            1,
            "missing label",
        ),
        (entry(expression="'import os'"), 5, "expression"),
        (entry(text="'{os.system}'"), 6, "text"),
        (entry(group="'nope'"), 8, "group"),
        (entry(id="'X Y'"), 2, "lower_snake_case"),
        (entry(interval=None), 1, "interval"),
        (entry(colour="1"), 1, "unknown key"),
        (entry() + entry(), 8, "duplicate"),
        ("[[formula]\nid = 'x'\n", 1, "not valid TOML"),
    ],
)
def test_bad_entries_fail_with_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_formulas(text, "bad.toml")
    assert caught.value.path == "bad.toml"
    assert caught.value.line == line
    assert message in caught.value.message


def test_missing_formulas_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_formulas(tmp_path / "absent.toml")
    assert caught.value.exit_code == 2 and "not found" in caught.value.message


def test_k3_config_gives_the_dims_the_formulas_need() -> None:
    dims = load_model_config(SAMPLES / "k3-config.json")
    assert (dims.mla_layers, dims.linear_attn_layers, dims.num_hidden_layers) == (24, 69, 93)
    assert (dims.num_attention_heads, dims.qk_nope_head_dim, dims.qk_rope_head_dim) == (96, 128, 64)
    assert (dims.q_lora_rank, dims.kv_lora_rank, dims.weight_bytes) == (1536, 512, 1)
    variables = dims.as_variables()
    assert variables["model.n_routed_experts"] == 384  # any scalar key is reachable
    # The article's DCP replica: per layer q_b_proj 96 x 192 x 1536 (fp8) + w_kc 96 x 128 x 512 x 2.
    assert 24 * (96 * 192 * 1536 + 96 * 128 * 512 * 2) / 2**30 == pytest.approx(0.91, abs=0.005)


def test_vlm_text_config_is_merged(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["VLM"], "text_config": {"num_hidden_layers": 7}}))
    dims = load_model_config(path)
    assert dims.num_hidden_layers == 7 and dims.architecture == "VLM"


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ('{\n  "num_hidden_layers": 4,\n  "hidden_size": }\n', 3, "not valid JSON"),
        (
            '{\n  "num_hidden_layers": 4,\n  "num_attention_heads": "96"\n}\n',
            3,
            "num_attention_heads",
        ),
        ('{\n  "torch_dtype": "float13"\n}\n', 2, "unknown dtype"),
        ('{\n  "linear_attn_config": {\n    "kda_layers": "all"\n  }\n}\n', 3, "kda_layers"),
        ("[1, 2]\n", None, "JSON object"),
    ],
)
def test_bad_model_config_fails_with_file_and_line(
    tmp_path: Path, content: str, line: int | None, message: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as caught:
        load_model_config(path)
    assert caught.value.line == line and message in caught.value.message
    assert caught.value.path == str(path)


def test_missing_model_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_model_config(tmp_path / "nope.json")
    assert "not found" in caught.value.message
    with pytest.raises(ConfigError):
        load_model_config(tmp_path)  # a directory
