"""memledger.sglang.lines: one LineSpec per kind, feeding the prefilter, head check and chain."""

from __future__ import annotations

import re
import subprocess
import sys

from memledger.input.scan import LineFilter
from memledger.model.events import EventKind
from memledger.sglang import lines
from memledger.sglang.examples import EXAMPLES


def test_every_event_kind_has_exactly_one_spec() -> None:
    kinds = [spec.kind for spec in lines.LINES]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == {kind.value for kind in EventKind}


def test_every_example_line_passes_the_prefilter_and_its_own_words() -> None:
    line_filter = LineFilter()
    prefixed = [f"[2026-01-01 00:00:00 TP0] {example.message}".encode() for example in EXAMPLES]
    assert [number for number, _ in line_filter.candidates(prefixed, 1)] == list(
        range(1, len(prefixed) + 1)
    )
    for example in EXAMPLES:
        spec = lines.SPECS[example.kind]
        # a spec's own words must catch its lines, not only a generic memory word
        if spec.words:
            assert any(word in example.message for word in spec.words), example.message


def test_every_example_starts_with_a_known_head() -> None:
    # its rule's leading words in the grammar, or its kind's head where the grammar cannot say
    from memledger.input.linegrammar import known_head

    for example in EXAMPLES:
        head = lines.SPECS[example.kind].head
        assert not head or re.match(head, example.message), example.message
        assert known_head(example.message), example.message


def test_the_grammar_gives_the_head_a_spec_leaves_out() -> None:
    # a kind without a head in lines.py is known by its rule's leading words alone (a new
    # wording in the grammar is known without a head of its own); garbled or cut copies of its
    # lines are malformed, other text is not
    from memledger.input.linegrammar import known_head, packaged_leads

    headless = {spec.kind for spec in lines.LINES if not spec.head}
    for kind in ("load_begin", "memory_pool_end", "dist_init_end", "lora", "imbalance"):
        assert kind in headless
    assert known_head("Load weight begin. avail mem=oops")
    assert known_head("Init nccl ends. mem usage=")
    assert known_head("LoRA adapter unloading: ???")
    assert known_head("The memory capacity is unbalanced. Some GPUs may be occupied")
    assert not known_head("Load the weights please")
    assert not known_head("Memory usage is fine")
    assert all(len(lead) >= 2 for lead in packaged_leads())  # one word says too little


def test_checkpoint_kinds() -> None:
    assert EventKind.LOAD_BEGIN in lines.AVAIL_KINDS and EventKind.CAPTURE_END in lines.AVAIL_KINDS
    # tqdm progress and the summary's available_gpu_mem are not checkpoints (no empty_cache)
    assert EventKind.CAPTURE_PROGRESS not in lines.AVAIL_KINDS
    assert EventKind.SUMMARY not in lines.AVAIL_KINDS


def test_lines_imports_only_the_standard_library() -> None:
    # the scan worker process imports it: pydantic or lark would slow every worker start
    probe = (
        "import sys, memledger.sglang.lines; "
        "print(sorted(m for m in ('pydantic', 'lark', 'memledger.model.events') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_engine_chain_uses_the_specs_checkpoints() -> None:
    from memledger.sglang.rows import AVAIL_KINDS

    assert AVAIL_KINDS == {EventKind(kind) for kind in lines.AVAIL_KINDS}
    assert all(isinstance(kind, EventKind) for kind in AVAIL_KINDS)
