"""What a log's line formats say about its SGLang release: the markers that bound it, and
release strings as comparable numbers. memledger.sizing.version checks each marker against the
parsed events; the sizing and default-change rules compare releases with `version_code`."""

from __future__ import annotations

# The SGLang log-format markers that bound a log's release, as (marker, first, last).
# memledger.sizing.version checks each marker against the parsed events.
FORMAT_MARKERS: tuple[tuple[str, str | None, str | None], ...] = (
    ("kv_line_without_tokens", "0.4.2", "0.4.3"),
    ("kv_line_with_tokens_no_dtype", "0.4.4", "0.5.12"),
    ("kv_line_with_dtype", "0.5.13", None),
    ("kv_dtype_line", "0.5.3", "0.5.12"),
    ("load_end_without_usage", None, "0.4.3"),
    ("load_end_usage_no_elapsed", "0.4.4", "0.5.8"),
    ("load_end_elapsed_with_dtype", "0.5.9", "0.5.9"),
    ("load_end_elapsed_no_dtype", "0.5.10", None),
    ("summary_with_available_gpu_mem", "0.4.7", None),
    ("summary_without_available_gpu_mem", None, "0.4.6"),
    ("dist_end_elapsed", "0.5.9", "0.5.20"),
    ("memory_baseline", "0.5.21", None),
    ("server_args_dict", "0.5.19", None),
    ("capture_role_phase", "0.5.14", None),
    ("replay_ssm", "0.5.20", None),
    # ServerArgs prints every field it has (its dataclass repr, before 0.5.19's dict), so a
    # field's presence bounds the release: cuda_graph_max_bs is a field in 0.4.0 - 0.5.13.post1
    # and gone from 0.5.14 (checked against the wheels' ServerArgs; v0.5.13 server_args.py:735).
    # (memledger.sglang.versions' FORMAT_MARKS, the engine's, date by fields from below.)
    ("server_arg_cuda_graph_max_bs", None, "0.5.13"),
)
SERVER_ARG_MARKERS: tuple[str, ...] = tuple(
    name.removeprefix("server_arg_")
    for name, _, _ in FORMAT_MARKERS
    if name.startswith("server_arg_")
)
"""The ServerArgs fields whose presence (in the repr form) is a FORMAT_MARKERS marker."""


def version_code(text: str) -> int:
    """`0.5.8` -> 5008 and so on; a suffix (`rc2`, `.post1`) is ignored."""
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]
