"""SGLang's KV refusals whose own text or arithmetic names a lever besides the fraction: the SWA
pool's cap (`Reduce --max-running-requests, ...`) and a DP worker's share of
--max-running-requests rounded down to zero. The lever leads, with its value where the settings
carry the numbers. Synthetic lines in the shapes people paste them."""

from __future__ import annotations

import pytest

from tests.conftest import PROSE_SHAPES, diagnose_paste, knobs_of

P = "[2026-03-01 10:00:00] "
_SWA = (
    "RuntimeError: SWA pool cap (1843200 tokens, 21.09 GiB) leaves no room for the full KV pool "
    "within the available 18.50 GiB. Reduce --max-running-requests, lower "
    "SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static."
)
_DSV4 = (
    "RuntimeError: The DSV4 SWA pool cap (921600 tokens, 30.00 GB) leaves no room for the full "
    "KV pool within the available 24.00 GB. Reduce --max-running-requests, lower "
    "--swa-prefix-tails or SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static."
)
_ZERO = "AssertionError: max_running_request is zero"


def _args(**settings: object) -> str:
    listed = ", ".join(f"{k}={v!r}" for k, v in {"model_path": "m", **settings}.items())
    return P + f"server_args=ServerArgs({listed})"


@pytest.mark.parametrize(
    ("refusal", "value"),
    [(_SWA, 112), (_DSV4, 102)],  # floor(256 x 18.50 / 21.09 / 2), floor(256 x 24 / 30 / 2)
)
def test_the_swa_caps_refusal_leads_with_fewer_requests_valued(refusal: str, value: int) -> None:
    result = diagnose_paste([_args(max_running_requests=256, disable_radix_cache=True), refusal])
    first = result.suggestions[0]
    assert (first.knob, first.direction.value, first.value) == (
        "max_running_requests",
        "lower",
        value,
    )
    assert f"lower --max-running-requests to {value}" in result.verdict
    assert ("mem_fraction_static", "raise") in knobs_of(result)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_the_swa_caps_refusal_quoted_alone_leads_with_the_direction(shape: str) -> None:
    result = diagnose_paste(shape.format(s=_SWA) + "\n")
    assert knobs_of(result)[:2] == [
        ("max_running_requests", "lower"),
        ("mem_fraction_static", "raise"),
    ]
    assert result.suggestions[0].value is None
    assert "for a value add the server_args line" in result.suggestions[0].why


def test_a_dp_workers_share_rounded_to_zero_raises_the_requests_to_dp_size() -> None:
    result = diagnose_paste(
        [_args(tp_size=8, dp_size=8, enable_dp_attention=True, max_running_requests=4), _ZERO]
    )
    first = result.suggestions[0]
    assert (first.knob, first.direction.value, first.value) == ("max_running_requests", "raise", 8)
    assert "// dp_size" in first.why


@pytest.mark.parametrize(
    "settings",
    [
        {"tp_size": 8, "dp_size": 8, "enable_dp_attention": True, "max_running_requests": 256},
        {"tp_size": 8, "dp_size": 8, "max_running_requests": 4},  # DP replicas: no division
        {},
    ],
)
def test_a_zero_not_from_the_dp_division_keeps_the_fractions_lever(
    settings: dict[str, object],
) -> None:
    result = diagnose_paste([_args(**settings), _ZERO])
    assert "max_running_requests" not in [k for k, _ in knobs_of(result)]
    assert knobs_of(result)[0] == ("mem_fraction_static", "raise")
