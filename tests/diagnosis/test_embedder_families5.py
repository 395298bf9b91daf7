"""Families from projects that embed or drive SGLang and from web pages (issue 24, held-out threads
124-131): a process end reported as a shell, docker or SGLang 0.4.x prints it (`Exit code 137`,
`exited with code 137`, `Child process unexpectedly failed with exitcode=9`, os.waitpid's raw
status), memory still held by a process that ended, torch_memory_saver beside PyTorch's
expandable segments, and NCCL's own buffer allocation failing outside PyTorch's cache. Each is read
in several shapes of the family through the whole command path (engine detection included, so an
unread paste raises InputError: exit 3). Every input is a synthetic line."""

from __future__ import annotations

import pytest

from memledger.input.error_texts import read_process_exit
from tests.conftest import PROSE_SHAPES, diagnose_text, knobs_of, paste_id, said_of

KILLED = "killed (SIGKILL)"


@pytest.mark.parametrize(
    "paste",
    [
        "Exit code 137. SIGKILL. No logs.",
        "docker: Exit code 137",
        "the sglang container exited with code 137",
        "sglang-server exited with code 137 after a minute",
        "process finished: exit status 137",
        "[2025-07-01 10:00:00] Child process unexpectedly failed with exitcode=9. pid=211",
        "Child process unexpectedly failed with an exit code 9. pid=32885",
        "Scheduler or DataParallelController 1234 terminated with -9",
        "`Exit code: -9`",
    ],
    ids=paste_id,
)
def test_a_killed_process_in_each_shape_is_a_crash_by_sigkill(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "crash"
    assert KILLED in result.verdict


@pytest.mark.parametrize(
    "paste",
    [
        "Child process unexpectedly failed with an exit code 256. pid=32885",
        "the launcher printed: Child process unexpectedly failed with exitcode=256. pid=7",
        "sglang exited with code 1",
        "exit status 1",
    ],
    ids=paste_id,
)
def test_a_plain_non_zero_exit_is_a_crash_but_not_a_kill(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "crash"
    assert KILLED not in result.verdict


@pytest.mark.parametrize(
    ("line", "code", "killed"),
    [
        # os.waitpid's raw status (SGLang 0.4.6-0.4.9): a signal in the low 7 bits, else code << 8
        ("Child process unexpectedly failed with exitcode=9. pid=1", -9, True),
        ("Child process unexpectedly failed with an exit code 256. pid=1", 1, False),
        ("Child process unexpectedly failed with exitcode=11. pid=1", -11, False),
        ("Child process unexpectedly failed with exitcode=512. pid=1", 2, False),
        ("Exit code 137", 137, True),
        ("exited with code 137", 137, True),
        ("Exit code: -9", -9, True),
        ("terminated with -6", -6, False),
    ],
    ids=paste_id,
)
def test_the_exit_code_is_decoded_by_who_prints_it(line: str, code: int, killed: bool) -> None:
    assert read_process_exit(line) == {"exit_code": code, "killed": killed}


def test_a_zero_status_is_no_process_end() -> None:
    assert read_process_exit("Child process unexpectedly failed with exitcode=0. pid=1") is None
    assert read_process_exit("Exit code 0") is None


OTHER = "another process holds GPU memory"


@pytest.mark.parametrize(
    "sentence",
    [
        "But the GPU still held ~90GB of unified memory.",
        "the memory is still occupied after docker kill",
        "GPU memory was held by the crashed container",
        "nvidia-smi shows the card still holding 40 GiB",
        "VRAM is still in use although the server exited",
        "the memory stays taken by the previous sglang server",
    ],
    ids=paste_id,
)
def test_memory_a_process_that_ended_still_holds_is_named(sentence: str) -> None:
    for shape in PROSE_SHAPES:
        result = diagnose_text(shape.format(s=sentence) + "\nExit code 137")
        assert result.outcome == "crash", shape
        assert OTHER in said_of(result), shape
        assert KILLED in result.verdict, shape


@pytest.mark.parametrize(
    "sentence",
    [
        "SGLang's memory is still held after release_memory_occupation",
        "the KV cache still holds 3 GB",
        "the memory is still low after the first request",
    ],
    ids=paste_id,
)
def test_memory_sglang_itself_holds_is_not_another_process(sentence: str) -> None:
    result = diagnose_text(sentence + "\nCUDA out of memory")
    assert OTHER not in said_of(result)


EXPANDABLE = "expandable_segments is not supported by torch_memory_saver"


@pytest.mark.parametrize(
    "sentence",
    [
        "torch_memory_saver doesn't work when PYTORCH_CUDA_ALLOC_CONF is set to "
        "expandable_segments:True",
        "with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the sglang offload frees nothing",
        "the env var `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` is set; without it the "
        "memory saver pause works",
        "release_memory_occupation returns but nothing is freed (expandable_segments:True)",
    ],
    ids=paste_id,
)
def test_expandable_segments_beside_the_memory_saver_is_named(sentence: str) -> None:
    for shape in PROSE_SHAPES:
        result = diagnose_text(shape.format(s=sentence))
        assert EXPANDABLE in said_of(result), shape


def test_the_allocators_own_advice_is_not_the_memory_saver_family() -> None:
    # every PyTorch OOM text advises expandable segments: that is no setting the reporter made
    paste = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 23.53 GiB of which 20.38 MiB is free. If reserved but unallocated "
        "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management"
    )
    assert EXPANDABLE not in said_of(diagnose_text(paste))
    assert EXPANDABLE not in said_of(diagnose_text("the offload ran fine.\n" + paste))


@pytest.mark.parametrize(
    "exception",
    [
        "RuntimeError: TorchMemorySaver is disabled for the current process because "
        "expandable_segments is not supported yet.",
        "RuntimeError: TorchMemorySaver is disabled for the current process because "
        "PYTORCH_CUDA_ALLOC_CONF is set to expandable_segments:True",
    ],
    ids=paste_id,
)
def test_the_memory_savers_refusal_is_a_known_crash_with_its_fix(exception: str) -> None:
    paste = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
    result = diagnose_text(paste + exception)
    assert result.outcome == "crash"
    assert "unset expandable_segments" in result.verdict
    assert "not GPU memory" in result.verdict


NCCL = "NCCL allocates them itself"


@pytest.mark.parametrize(
    "paste",
    [
        "host-1:4242:4300 [0] include/alloc.h:186 NCCL WARN Failed to CUDA calloc 6291456 bytes",
        "node3:77:77 [5] include/alloc.h:493 NCCL WARN Failed to CUDA calloc async 2097152 bytes",
        "gpu-7:1:9 [2] include/alloc.h:161 NCCL WARN Failed to CUDA malloc 33554432 bytes",
    ],
    ids=paste_id,
)
def test_nccls_own_allocation_warning_is_an_oom_of_its_buffers(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    assert NCCL in said_of(result)
    assert knobs_of(result)[:1] == [("mem_fraction_static", "lower")]


@pytest.mark.parametrize(
    "sentence",
    [
        "This is an ad-hoc fix for nccl failed to calloc error.",
        "NCCL ran out of memory during the weight sync",
        "we hit an NCCL OOM right after the rollout",
        "the nccl all-reduce failed to cuda malloc its buffer",
    ],
    ids=paste_id,
)
def test_nccls_allocation_failure_said_in_prose_is_named(sentence: str) -> None:
    for shape in PROSE_SHAPES:
        result = diagnose_text(shape.format(s=sentence))
        assert result.outcome != "ready", shape
        assert NCCL in said_of(result), shape


def test_nccl_named_without_a_failure_is_not_the_family() -> None:
    paste = "NCCL version 2.21.5+cuda12.4\nCUDA out of memory"
    assert NCCL not in said_of(diagnose_text(paste))


SHARED = "two servers on one GPU"


@pytest.mark.parametrize(
    "sentence",
    [
        "Prefill (mem-fraction default 0.88) left only 10.8 GB free on GPU 0",
        "the first server's mem_fraction_static of 0.9 left only 7 GiB for the second",
        "we run two sglang servers on the same GPU and the second one OOMs",
        "both instances share one GPU, the decode one fails to start",
        "the embedding model left just 3 GB free on GPU 1",
    ],
    ids=paste_id,
)
def test_two_servers_on_one_gpu_lower_the_fraction(sentence: str) -> None:
    for shape in PROSE_SHAPES:
        result = diagnose_text(shape.format(s=sentence))
        assert SHARED in said_of(result), shape
        assert ("mem_fraction_static", "lower") in knobs_of(result), shape


@pytest.mark.parametrize(
    "sentence",
    [
        "the weights left only 2 GB for the KV cache",
        "two GPUs, one server",
    ],
    ids=paste_id,
)
def test_one_server_alone_is_not_the_shared_gpu_family(sentence: str) -> None:
    assert SHARED not in said_of(diagnose_text(sentence + "\nCUDA out of memory"))


VERSION = "a library's version as the cause"


@pytest.mark.parametrize(
    "sentence",
    [
        "flashinfer PR #994 and everything after leads to OOM, the commit before works",
        "OOM since upgrading to sglang 0.4.6.post1",
        "after updating sgl-kernel to 0.1.5 the server runs out of memory",
        "downgrading flashinfer to 0.2.5 fixed the out of memory",
        "torch 2.7 or later goes OOM at capture",
    ],
    ids=paste_id,
)
def test_a_version_named_as_the_cause_is_said(sentence: str) -> None:
    for shape in PROSE_SHAPES:
        result = diagnose_text(shape.format(s=sentence) + "\nCUDA out of memory")
        assert VERSION in said_of(result), shape


@pytest.mark.parametrize(
    "sentence",
    [
        "sglang 0.4.6 with flashinfer 0.2.5 on an H100",
        "Later the server ran out of memory",
    ],
    ids=paste_id,
)
def test_a_version_merely_named_is_not_the_family(sentence: str) -> None:
    assert VERSION not in said_of(diagnose_text(sentence + "\nCUDA out of memory"))


RELEASE = "SGLang's release of its memory for a colocated trainer"


@pytest.mark.parametrize(
    "sentence",
    [
        "the `flush_cache` logic in sglang has been moved before the post-processing step",
        "OOM in the actor update although free_cache_engine=True",
        "calling engine.flush_cache() after generation does not help, the trainer OOMs",
    ],
    ids=paste_id,
)
def test_an_rl_frameworks_cache_flush_is_its_release(sentence: str) -> None:
    for shape in PROSE_SHAPES:
        result = diagnose_text(shape.format(s=sentence) + "\nCUDA out of memory")
        assert RELEASE in said_of(result), shape
