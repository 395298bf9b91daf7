"""Every error text memledger reads, one `ErrorText` per text: allocator OOM messages, SGLang's
refusals and pool exhaustion, Python traceback parts, process ends, and the phrases that say how a
startup ended.

Each entry says which reader makes an event of it (`kind`, read by memledger.input.error_texts),
whether it states the startup's outcome (`outcome`, read by memledger.input.outcome), its family,
the source that prints it, and an example line (tests/sglang/test_errors.py checks every entry
against its example with one function). `words` are what every match of `regex` holds: the
readers' cheap test before the regex, the quiet-line test (memledger.input.quiet) and the
prefilter (memledger.sglang.lines.PREFILTER_WORDS) are all derived from them, so a new text is
one entry here and never a word list elsewhere. A test checks that every branch of each regex
holds one of its words, and that each word is the regex's own.

Stdlib only: the scan worker imports this module through memledger.sglang.lines.

Adding one: the contributor guide, memledger.sglang (task 2).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from memledger.sglang.adjustments import ADJUSTMENTS
from memledger.sglang.failure_rules import CRASH_CAUSES
from memledger.sglang.frameworks import FRAMEWORK_WORDS


class Family(StrEnum):
    """Who prints the text."""

    ALLOCATOR = "torch allocator"
    """PyTorch's caching allocator (CUDA, ROCm/HIP and torch_npu builds print the same text)."""
    CUDA = "CUDA"
    HIP = "HIP"
    NPU = "NPU"
    TPU = "TPU"
    """XLA on a TPU (sglang-jax)."""
    TRITON = "Triton"
    TORCH_MEMORY_SAVER = "torch_memory_saver"
    NCCL = "NCCL"
    SGLANG_REFUSAL = "SGLang refusal"
    """SGLang refusing to size its KV pool."""
    SGLANG_POOL = "SGLang pool"
    """One of SGLang's own pools (sized at startup) full while serving."""
    SGLANG_ASSERTION = "SGLang assertion"
    SGLANG_EXIT = "SGLang exit"
    SGLANG_ADJUSTMENT = "SGLang adjustment"
    """SGLang changing a memory setting by itself (memledger.sglang.adjustments)."""
    """SGLang's launcher reporting a failed child or startup."""
    HOST = "host memory"
    SHM = "shared memory"
    PYTHON = "Python"
    """A traceback's parts and exception lines, whoever raised them."""
    SHELL = "shell"
    DEBUG_PRINT = "debug print"
    """SGLang's own variables printed through its logger by someone debugging it (a PR's
    instrumentation): read on a log line like SGLang's own texts."""
    SGLANG_LOG = "SGLang log line"
    """SGLang's own info line that names a stage (read on a prefixed log line, where a reporter's
    words are not)."""
    REPORTER = "reporter"
    """Words people write around a log (`OOM`)."""


_LIBRARY = r"(?:flashinfer|sgl[-_]kernel|sglang|pytorch|torch|triton|transformers|vllm|nccl|cuda)"
"""The libraries whose version people name as an OOM's cause (said_version_regression)."""


class Outcome(StrEnum):
    """What a text says about how the startup ended (memledger.input.outcome, in this order)."""

    OOM = "oom"
    """An out-of-memory phrase: the OOM outcome, the matched phrase its reason."""
    REFUSAL = "refusal"
    """SGLang refused to size the KV pool: the OOM outcome (sglang.failure_rules)."""
    CRASH = "crash"
    """A crash phrase: the crash outcome, the matched phrase its reason."""
    EXIT = "exit"
    """An exit code: a crash when it is not 0."""


class Regex:
    """A regex compiled when it is first used: the table is read at every start, and most of its
    rows run only on a line that holds one of their words (`ErrorText.find`), so a clean log
    compiles few of them."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.compiled.groupindex

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(text, pos)

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.match(text, pos)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)


@dataclass(frozen=True)
class ErrorText:
    """One error text: how to find it, what it means, where it comes from."""

    name: str
    """Unique id."""
    regex: Regex | re.Pattern[str]
    """Read as a `Regex` (compiled when first used); a compiled pattern is taken as one."""
    words: tuple[str, ...]
    """Every match of `regex` holds one (case-sensitive, or in any case if the regex ignores
    case): the cheap test before the regex, and the prefilter's words."""
    family: Family
    source: str
    """Where the text is printed: `vX path:line` of the engine (or the library's file)."""
    example: str
    """A line in the family's shape that the regex reads (synthetic, checked by the tests)."""
    kind: str = ""
    """The event kind its reader makes (an `EventKind` value), or "" for an outcome phrase only."""
    outcome: Outcome | None = None
    values: Mapping[str, str] = field(default_factory=dict)
    """Values every event of this text carries (`pool`, `shape`), before the captured ones."""
    captures: tuple[tuple[str, str, type[int] | type[float]], ...] = ()
    """(value key, regex group, type) of the numbers it carries, in this order."""
    wrap_words: tuple[str, ...] = ()
    """What the second half of the text holds when a narrow terminal wrapped it: lines with
    these are read too (prefilter and quiet test), so the reader can join them back."""
    strip: bool = False
    """The regex is matched at the start of the stripped text (`re.match`), not searched."""
    glued: tuple[tuple[str, re.Pattern[str]], ...] = ()
    """(value key, regex) of a count line a paste glued onto this text, its newline lost: the
    int the regex's group 1 reads, searched in the rest of the text."""
    sizes: tuple[tuple[str, str], ...] = ()
    """(size key, regex group) of the byte counts an OOM text prints, read as its sizes (the keys
    of memledger.input.error_texts.ALLOCATOR_FIELDS: `requested`, `free`, `capacity`)."""
    masks_oom: bool = False
    """The text holds an out-of-memory phrase but states no out-of-memory end: a retraction the
    server survives, a warning it recovers from, an on-chip scratch limit. A line it matches
    states no OOM outcome (memledger.input.outcome)."""

    _any_case: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.regex, re.Pattern):
            object.__setattr__(self, "regex", Regex(self.regex.pattern, self.regex.flags))
        # read once: a flag test on the regex is an enum operation, and find runs per line
        object.__setattr__(self, "_any_case", bool(self.regex.flags & re.IGNORECASE))

    def find(self, text: str) -> re.Match[str] | None:
        """The regex's match in `text` (after the cheap word test), or None."""
        if self._any_case:
            lowered = text.lower()
            if text.isascii() and not any(word.lower() in lowered for word in self.words):
                return None
        elif not any(word in text for word in self.words):
            return None
        if self.strip:
            return self.regex.match(text.strip())
        return self.regex.search(text)


_MFS = r"(?P<mfs>\d+(?:\.\d+)?)"
GLUED_AVAILABLE_RE = re.compile(r"Ava(?:li|il)able tokens: ?(\d{1,12})")
"""The free-token count of a Prefill/Decode raise pasted on the raise's own line, its newlines
lost (`...Try to allocate 1444 tokens.Avaliable tokens:5120self.token...`, sglang PR #5081; the
count lines SGLang prints, v0.4.5 managers/schedule_batch.py:856-860)."""
_GLUED = (("glued_available", GLUED_AVAILABLE_RE),)

DRAFT_WINDOW_WORDS = (
    "num-draft-token",
    "num draft token",
    "draft-token window",
    "draft token window",
    "draft-tokens window",
    "draft tokens window",
    "draft-token count",
    "draft token count",
    "draft-tokens count",
    "draft tokens count",
    "number of draft tokens",
    "verify workspace",
    "spec-verify",
    "spec verify",
    "speculative-verify",
    "speculative verify",
)
"""The draft-token window as people name it (not server_args' `speculative_num_draft_tokens=`,
which every speculative run prints): the said_draft_window row's words and its regex."""


ERRORS: tuple[ErrorText, ...] = (
    # ---- allocator OOM messages (kind oom_message)
    ErrorText(
        "allocator_oom",
        # its numbers retold in Chinese (`GPU7尝试分配448MB内存失败`: tried to allocate, and
        # 空闲 free, 私有池 private pools, 预留但未分配 reserved but unallocated: ALLOCATOR_FIELDS)
        Regex(
            r"(?:(?P<device>CUDA|HIP|NPU|XPU|MUSA|MPS|GPU)\s+)?out of memory|尝试分配",
            re.IGNORECASE,
        ),
        ("out of memory", "尝试分配"),
        Family.ALLOCATOR,
        "torch c10/cuda/CUDACachingAllocator.cpp (torch >= 2.1), torch_npu's NPU allocator; "
        "retold in Chinese: https://blog.gitcode.com/02a94e2c011f43fa54d9ca12046f9296.html (a "
        "page retelling sgl-project/sglang#5755)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 812.00 MiB is free. Including non-PyTorch memory, "
        "this process has 78.38 GiB memory in use.",
        kind="oom_message",
        # what the second half of a wrapped message holds (ALLOCATOR_FIELDS)
        wrap_words=("PyTorch",),
    ),
    ErrorText(
        "hsa_out_of_resources",
        Regex("HSA_STATUS_ERROR_OUT_OF_RESOURCES"),
        ("HSA_STATUS_ERROR_OUT_OF_RESOURCES",),
        Family.HIP,
        "ROCm runtime; https://github.com/sgl-project/sglang/issues/25797 (a lower "
        "--mem-fraction-static fixed it)",
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary "
        "resources. This error may also occur when the core runtime library needs to allocate",
        kind="oom_message",
        values={"device": "HIP", "runtime": "HSA_STATUS_ERROR_OUT_OF_RESOURCES"},
    ),
    ErrorText(
        "cann_memory_allocation",
        # CANN's error EL0004 and the runtime's failed rtMalloc under it (its size in bytes):
        # memory taken outside torch_npu's caching allocator (GE, op workspaces), no `out of
        # memory` words
        # (`EL0004: [PID: N] <time> Failed to allocate memory.` in newer CANN); an aclnn operator's
        # failure with ACL_ERROR_RT_MEMORY_ALLOCATION (207001) and the resource line under it
        Regex(
            r"Memory_Allocation_Failure\(EL0004\)"
            r"|\bEL0004: (?:\[PID: ?\d+\] [^\n]{0,40}?)?Failed to allocate memory"
            r"|Call rtMalloc fail\b(?:[^\n]*?\bsize:\s?(?P<requested>\d+))?"
            r"(?:[^\n]*?\bdevice_id:\s?(?P<gpu>\d+))?"
            r"|failed, error code is 207001\b"
            r"|Failed to allocate resource\[DeviceMemory\] with info \[size:(?P<resource>\d+)\]"
        ),
        ("EL0004", "rtMalloc fail", "error code is 207001", "Failed to allocate resource["),
        Family.NPU,
        "CANN (Ascend) error code EL0004 Memory_Allocation_Failure: 'Failed to allocate memory "
        "... Possible Cause: Available memory is insufficient', with the runtime's `Call rtMalloc "
        "fail, purpose: ..., size:N, device_id:D` lines under it; "
        "https://github.com/PKU-YuanGroup/Helios/issues/62 (a 910B, GE page caching); ACL's "
        "ACL_ERROR_RT_MEMORY_ALLOCATION = 207001 (CANN acl_base.h) as torch_npu prints an "
        "operator's failure (`call aclnnX failed, error code is 207001`, with `Failed to allocate "
        "resource[DeviceMemory] with info [size:N]. Reason: Memory resources are exhausted.`: "
        "https://github.com/vllm-project/vllm-ascend/issues/3141, an HCCL dispatch buffer)",
        "[PID: 1] 2026-01-01-00:00:00.000.000 Memory_Allocation_Failure(EL0004): Failed to "
        "allocate memory requested by GE module.",
        kind="oom_message",
        values={"device": "NPU", "runtime": "CANN"},
        captures=(("gpu", "gpu", int),),
        sizes=(("requested", "requested"), ("requested", "resource")),
    ),
    # the BLAS libraries' allocation status, as c10 prints it when a handle or its workspace is
    # made (`when calling cublasCreate(handle)`): cuBLAS's docs (cublasStatus_t) say of
    # CUBLAS_STATUS_ALLOC_FAILED 'Resource allocation failed inside the cuBLAS library. This is
    # usually caused by a cudaMalloc() failure'; hipBLAS's status mirrors it
    ErrorText(
        "cublas_alloc_failed",
        Regex(r"\bCUBLAS_STATUS_ALLOC_FAILED\b"),
        ("CUBLAS_STATUS_ALLOC_FAILED",),
        Family.CUDA,
        "cuBLAS docs, cublasStatus_t CUBLAS_STATUS_ALLOC_FAILED (a cudaMalloc failure inside "
        "cuBLAS)",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        kind="oom_message",
        values={"device": "CUDA", "runtime": "cuBLAS"},
    ),
    ErrorText(
        "hipblas_alloc_failed",
        Regex(r"\bHIPBLAS_STATUS_ALLOC_FAILED\b"),
        ("HIPBLAS_STATUS_ALLOC_FAILED",),
        Family.HIP,
        "hipBLAS docs, hipblasStatus_t HIPBLAS_STATUS_ALLOC_FAILED (resource allocation failed)",
        "RuntimeError: HIPBLAS_STATUS_ALLOC_FAILED when calling `hipblasCreate(handle)`",
        kind="oom_message",
        values={"device": "HIP", "runtime": "hipBLAS"},
    ),
    ErrorText(
        "caching_allocator_oom_warning",
        Regex(
            r"memory allocation failed with OOM on device (?P<gpu>\d+) while trying to allocate "
            r"(?P<requested>\d+) bytes \(free: (?P<free>\d+), total: (?P<capacity>\d+)\)"
        ),
        ("memory allocation failed with OOM",),
        Family.ALLOCATOR,
        "torch c10/cuda/CUDACachingAllocator.cpp: the warning `[W... CUDACachingAllocator.cpp:N]` "
        "printed when cudaMalloc fails (recent torch; sizes in bytes; the allocator may still "
        "free its cache and retry, so alone it is not always fatal); "
        "https://github.com/sgl-project/sglang/issues/38202 (a draft's KV pool at startup, the "
        "paste's only OOM text)",
        "[rank0]:[W101 12:00:00.000000000 CUDACachingAllocator.cpp:3900] memory allocation failed "
        "with OOM on device 0 while trying to allocate 2147483648 bytes (free: 1073741824, total: "
        "85899345920).",
        kind="oom_message",
        values={"device": "CUDA"},
        captures=(("gpu", "gpu", int),),
        sizes=(("requested", "requested"), ("free", "free"), ("capacity", "capacity")),
    ),
    # torch_memory_saver (SGLang's --enable-memory-saver, which RL frameworks set to release and
    # resume its memory): its CUDA/HIP driver-error line; code 2 is CUDA_ERROR_OUT_OF_MEMORY /
    # hipErrorOutOfMemory (https://github.com/fzyzcjy/torch_memory_saver/issues/4), in this order
    ErrorText(
        "memory_saver_hip_oom",
        Regex(r"\[torch_memory_saver\.cpp\] hipError_t error:?\s+(?:result=)?2\b"),
        ("torch_memory_saver",),
        Family.TORCH_MEMORY_SAVER,
        "torch_memory_saver csrc/torch_memory_saver_hip.cpp cu_mem_create (hipMemCreate); "
        "https://github.com/fzyzcjy/torch_memory_saver/issues/9 (ROCm: large allocations must be "
        "made chunk-wise)",
        "[torch_memory_saver.cpp] hipError_t error  result=2 file=csrc/torch_memory_saver_hip.cpp "
        "func=cu_mem_create line=103",
        kind="oom_message",
        outcome=Outcome.OOM,
        values={"runtime": "torch_memory_saver", "device": "HIP", "cause": "memory_saver_hip_vmm"},
    ),
    ErrorText(
        "memory_saver_resume_oom",
        Regex(
            r"\[torch_memory_saver\.cpp\] (?:CUresult|cudaError|hipError_t) error:?\s+"
            r"(?:result=)?2\b.{0,80}?func=resume"
        ),
        ("torch_memory_saver",),
        Family.TORCH_MEMORY_SAVER,
        "torch_memory_saver csrc/core.cpp resume (v0.0.9: cudaError 2 at :172); "
        "https://github.com/fzyzcjy/torch_memory_saver/issues/99 (the trainer still held the "
        "memory when verl resumed SGLang's KV cache)",
        "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=csrc/core.cpp "
        "func=resume line=172",
        kind="oom_message",
        outcome=Outcome.OOM,
        values={"runtime": "torch_memory_saver", "phase": "resume"},
    ),
    ErrorText(
        "memory_saver_oom",
        Regex(
            r"\[torch_memory_saver\.cpp\] (?:(?:CUresult|cudaError|hipError_t) error:?\s+"
            r"(?:result=)?2\b|cuMemCreate CUDA_ERROR_OUT_OF_MEMORY)"
            # the same line quoted without its file tag (`'CUresult error  result=2' means OOM`):
            # CURESULT_CHECK's own words, which no CUDA library prints itself
            r"|(?<![\w.])CUresult error:?\s+result=2\b"
        ),
        ("torch_memory_saver", "CUresult error"),
        Family.TORCH_MEMORY_SAVER,
        "torch_memory_saver csrc/torch_memory_saver.cpp cu_mem_create (:103, CURESULT_CHECK of "
        "cuMemCreate; csrc/torch_memory_saver_hip.cpp on ROCm); "
        "https://github.com/fzyzcjy/torch_memory_saver/issues/4 (result=2 is "
        "CUDA_ERROR_OUT_OF_MEMORY); the bare quote: https://github.com/verl-project/verl/issues/"
        "1394",
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
        "func=cu_mem_create line=103 (5)",
        kind="oom_message",
        outcome=Outcome.OOM,
        values={"runtime": "torch_memory_saver"},
    ),
    ErrorText(
        "memory_saver_margin_oom",
        Regex(
            r"TorchMemorySaver::malloc return OOM since memory_margin_bytes=(?P<margin>\d+) "
            r"(?:\(alloc\)size|allocation_size)=(?P<requested>\d+) free_bytes=(?P<free>\d+)"
        ),
        ("TorchMemorySaver::malloc return OOM",),
        Family.TORCH_MEMORY_SAVER,
        "torch_memory_saver csrc/core.cpp TorchMemorySaver::malloc: refuses an allocation when "
        "the margin a framework set (set_memory_margin_bytes) plus its size exceed the free "
        "memory (v0.0.9 prints `(alloc)size=`, fzyzcjy/torch_memory_saver 49611e5; "
        "`allocation_size=` from 57bf4b3)",
        "[torch_memory_saver.cpp] TorchMemorySaver::malloc return OOM since "
        "memory_margin_bytes=1073741824 (alloc)size=4294967296 free_bytes=2147483648",
        kind="oom_message",
        outcome=Outcome.OOM,
        values={"runtime": "torch_memory_saver"},
        # no sizes: the margin check is the framework's (a trainer's allocation too), not the
        # allocator's last request, and it would read as one forward's working set
    ),
    ErrorText(
        "runtime_oom_code",
        Regex(r"cudaErrorMemoryAllocation|hipErrorOutOfMemory|CUDA_ERROR_OUT_OF_MEMORY"),
        ("cudaErrorMemoryAllocation", "hipErrorOutOfMemory", "CUDA_ERROR_OUT_OF_MEMORY"),
        Family.CUDA,
        "the CUDA runtime's and driver's and HIP's out-of-memory codes by name "
        "(cudaErrorMemoryAllocation = 2, CUDA_ERROR_OUT_OF_MEMORY = 2, hipErrorOutOfMemory = 2), "
        "as libraries print them without PyTorch's sizes",
        "cudaErrorMemoryAllocation: out of memory",
        kind="oom_message",
        outcome=Outcome.OOM,
        values={"runtime": "CUDA runtime"},
    ),
    # XLA's HBM running out on a TPU (sglang-jax): a buffer, a program's reservation, or the
    # compiler's own count; XLA prints sizes as `15.65G` (no byte counts). `memory space vmem` is
    # the on-chip scratch, not HBM: `tpu_vmem` below
    ErrorText(
        "xla_hbm_exhausted",
        Regex(
            r"RESOURCE_EXHAUSTED: (?:Error allocating device buffer: Attempting to allocate"
            r"|Error loading program [^\n]{0,200}?Attempting to reserve"
            r"|XLA:TPU compile permanent error\. Ran out of memory in memory space hbm"
            r"|TPU TensorCore Hbm usage)"
        ),
        ("RESOURCE_EXHAUSTED",),
        Family.TPU,
        "XLA docs/errors/error_0100.md (buffer allocation), error_0101.md (program "
        "allocation: 'Attempting to reserve ... at the bottom of memory'), error_1000.md "
        "(compile-time HBM OOM); sglang-jax runs on it",
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: "
        "Attempting to allocate 15.65G. That was not possible. There are 11.08G free.; "
        "(0x0x0_HBM0)",
        kind="oom_message",
        outcome=Outcome.OOM,
        values={"device": "TPU", "runtime": "XLA"},
    ),
    # SGLang's own free-memory checks outside its static pool (v0.5.23), each naming a buffer
    ErrorText(
        "sglang_buffer_no_memory",
        Regex(
            r"insufficient free VRAM for one top-k expert working set: free=(?P<free>\d+), "
            r"object=(?P<requested>\d+)"
            r"|Masked grouped-GEMM workspace allocation failed"
        ),
        (
            "insufficient free VRAM",
            "workspace allocation failed",
        ),
        Family.SGLANG_POOL,
        "v0.5.23 layers/moe/expert_pack.py:377 (MemoryError, bytes), "
        "layers/moe/moe_runner/deep_gemm.py:779 (the int8 mamba checkpoint pool's refusal, "
        "which names its own lever, is failure_rules' int8_mamba_checkpoint_pool)",
        "MemoryError: insufficient free VRAM for one top-k expert working set: free=1073741824, "
        "object=2147483648",
        kind="oom_message",
        values={"runtime": "SGLang"},
        sizes=(("requested", "requested"), ("free", "free")),
    ),
    # ---- SGLang refusing to size the KV pool (kind kv_refusal), in this order
    ErrorText(
        "negative_profile",
        Regex(
            r"max_total_tokens=(?P<cap>\d+) is larger than the profiled value "
            r"(?P<profiled>-\d+|0)\b"
        ),
        ("profiled value",),
        Family.SGLANG_REFUSAL,
        "v0.4.8 model_executor/model_runner.py:914-932; v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:299-305 (the refusal follows at :328-331)",
        "max_total_tokens=8192 is larger than the profiled value -1200. Use the profiled value "
        "instead.",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "negative_profile"},
        captures=(("profiled_tokens", "profiled", int), ("max_total_tokens", "cap", int)),
    ),
    ErrorText(
        "no_room_for_kv",
        Regex(
            r"Loaded weights leave no GPU memory for the KV cache"
            r"(?: under --mem-fraction-static=" + _MFS + ")?"
            # SGLang's advice, or as people shorten it quoting it (`Raise above 0.627`)
            r"(?:.*?[Rr]aise (?:--mem-fraction-static |it )?above (?P<above>\d+(?:\.\d+)?))?"
            r"(?:.*?minimum viable = [^=]*= (?P<minimum>\d+(?:\.\d+)?))?"
        ),
        ("Loaded weights leave no GPU memory",),
        Family.SGLANG_REFUSAL,
        "v0.5.23 mem_cache/kv_cache_configurator.py:3042-3058",
        "RuntimeError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.8. Raise --mem-fraction-static above 0.91 (minimum viable = "
        "1 - available/pre = 0.9).",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "no_room_for_kv"},
        # the advice prints the minimum rounded up to 0.001; the minimum itself, printed after
        # it, wins when the paste has it (a quote often keeps only `Raise above 0.627`)
        captures=(
            ("mem_fraction_static", "mfs", float),
            ("minimum_viable", "above", float),
            ("minimum_viable", "minimum", float),
        ),
    ),
    ErrorText(
        "not_enough_memory",
        Regex(
            r"Not enough memory\. Please try to increase --mem-fraction-static"
            r"(?:\.\s*Current value:\s*(?:self\.server_args\.)?mem_fraction_static\s*=\s*"
            + _MFS
            + r")?"
            # the same RuntimeError quoted without its advice (sgl-project/sglang-omni#293)
            r"|RuntimeError: Not enough memory\.?\s*$"
            # or its advice quoted alone: no other text of SGLang's says it
            r"|Please try to increase --mem-fraction-static"
        ),
        ("Not enough memory", "Please try to increase --mem-fraction-static"),
        Family.SGLANG_REFUSAL,
        "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:327-331 (without `Current value` "
        "in v0.4.x and in v0.5.23 model_executor/pool_configurator.py:96)",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.88",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "not_enough_memory"},
        captures=(("mem_fraction_static", "mfs", float),),
    ),
    # the pool sized so small that not one request fits: the scheduler's own check after sizing
    ErrorText(
        "pool_too_small",
        Regex(r"Memory pool size is too small"),
        ("Memory pool size is too small",),
        Family.SGLANG_ASSERTION,
        "v0.4.0 managers/tp_worker.py:107, v0.5.8 :293, v0.5.23 :425 (assert max_req_len = "
        "min(context_len - 1, max_total_num_tokens - 1) > 0 and max_req_input_len = max_req_len "
        "- 5 > 0: the KV pool holds about five tokens or none)",
        "AssertionError: Memory pool size is too small",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "pool_too_small"},
    ),
    # the same check one step earlier: not one request slot after sizing. max_running_requests
    # is min(max_total_num_tokens // 2, or --max-running-requests // dp_size under DP attention,
    # the request table's size): zero when the KV pool holds a token or none (v0.5.8
    # model_executor/model_runner.py:558-566)
    ErrorText(
        "max_running_zero",
        Regex(r"max_running_request is zero"),
        ("max_running_request is zero",),
        Family.SGLANG_ASSERTION,
        "v0.5.8 managers/tp_worker.py:281, v0.5.23 :420 (assert max_running_requests > 0, "
        "'max_running_request is zero')",
        "AssertionError: max_running_request is zero",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "max_running_zero"},
    ),
    # v0.5.23's refusals for a hybrid model's state pool and the unified pool: what is left
    # after the weights holds no request's state
    ErrorText(
        "state_pool_refused",
        Regex(
            r"Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache"
            r"|Hybrid \(mamba/linear-attention\) state cache is too small to serve any requests"
            r"|byte budget \d+ cannot fit ONE worst-case request"
        ),
        (
            "linear-attention) state cache",
            "cannot fit ONE worst-case request",
        ),
        Family.SGLANG_REFUSAL,
        "v0.5.23 mem_cache/kv_cache_configurator.py:3393, :3153 ('Try: (1) reduce "
        "--max-running-requests, (2) increase --mem-fraction-static'; v0.5.13 "
        "model_executor/model_runner_kv_cache_mixin.py:897); "
        "mem_cache/unified_memory_pool.py:1563 ('Raise --mem-fraction-static, lower the model "
        "context length')",
        "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
        "Computed max_mamba_cache_size=0 (total_rest_memory=1.2 GB, mamba_cache_per_req=80.0 MB).",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "state_pool"},
    ),
    # a radix-less hybrid SWA model with --max-running-requests set sizes its SWA pool to the
    # worst case of that many requests (v0.5.23 model_executor/pool_configurator.py:924-965):
    # SGLang's own advice starts with fewer requests
    ErrorText(
        "swa_cap_refused",
        Regex(
            r"pool cap \((?P<tokens>\d+) tokens, (?P<swa>[\d.]+) Gi?B\) leaves no room for the "
            r"full KV pool(?: within the available (?P<available>[\d.]+) Gi?B)?"
        ),
        ("leaves no room for the full KV pool",),
        Family.SGLANG_REFUSAL,
        "v0.5.16 model_executor/pool_configurator.py:540, v0.5.17 :575, v0.5.20 :892, v0.5.23 "
        ":1026-1031 "
        "('SWA pool cap (N tokens, X GiB) leaves no room for the full KV pool within the "
        "available Y GiB. Reduce --max-running-requests, lower SGLANG_SWA_EVICTION_INTERVAL, or "
        "increase --mem-fraction-static.'), :1681-1686 (DSV4's, in GB)",
        "RuntimeError: SWA pool cap (1843200 tokens, 21.09 GiB) leaves no room for the full KV "
        "pool within the available 18.50 GiB. Reduce --max-running-requests, lower "
        "SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static.",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "swa_cap"},
        captures=(
            ("swa_cap_tokens", "tokens", int),
            ("swa_cap_gib", "swa", float),
            ("available_gib", "available", float),
        ),
    ),
    # the refusal as reporters describe it (`a negative value for self.max_total_num_tokens`):
    # the v0.3 text SGLang printed before raising (v0.3.0 model_executor/model_runner.py:
    # `if self.max_total_num_tokens <= 0: raise RuntimeError("Not enough memory...")`)
    ErrorText(
        "negative_tokens_said",
        Regex(
            r"negative (?:value )?(?:for |of )?\W?(?:self\.)?max_total_num_tokens"
            r"|max_total_num_tokens\W? (?:is |was |becomes |became |gets |goes )?negative"
        ),
        ("max_total_num_tokens",),
        Family.REPORTER,
        "what people write for SGLang's refusal (v0.3.0 model_executor/model_runner.py "
        "init_memory_pool: max_total_num_tokens <= 0 -> 'Not enough memory')",
        "If I decrease it, I receive a negative value for `self.max_total_num_tokens`.",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "said"},
    ),
    # the refusal in the words of SGLang's own arithmetic, quoted by a reporter (`which results in
    # rest_memory < 0`): rest_memory is what profile_max_num_token divides by the cell size (v0.5.8
    # model_executor/model_runner_kv_cache_mixin.py:138-144); at or below zero tokens SGLang
    # refuses (same file :327-331)
    ErrorText(
        "negative_rest_memory_said",
        Regex(
            r"rest_memory\W{0,3}\s*(?:<=?|≤)\s*0(?![.\d])"
            r"|rest_memory\W{0,3} (?:is |was |becomes |became |gets |goes )?(?:negative|below zero)"
            r"|negative\W{0,3}(?:value (?:for |of )?)?\W?rest_memory"
        ),
        ("rest_memory",),
        Family.REPORTER,
        "what people write for SGLang's KV refusal in its own variable's name (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:138-144: rest_memory = available - "
        "total x (1 - mfs); :327-331 refuses when it leaves no token)",
        "so rest_memory < 0 once the weights are in and the server stops",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "said"},
    ),
    # the refusal as reporters describe it in plain words: the KV pool could not be allocated
    # once the weights were in (`the default --mem-fraction-static causes the KV pool allocation
    # to fail`, `not enough memory for the KV cache`): SGLang refuses when rest_memory leaves no
    # token (v0.5.8 model_executor/model_runner_kv_cache_mixin.py:138-144, :327-331)
    ErrorText(
        "kv_pool_failed_said",
        Regex(
            r"[Kk][Vv][ _-]?(?:[Cc]ache|[Pp]ool)(?: pool)? (?:allocation|creation) (?:fails|failed"
            r"|failure|to fail|fail)"
            r"|[Ff]ail(?:s|ed)? (?:to allocate|to create) (?:the )?[Kk][Vv][ _-]?"
            r"(?:[Cc]ache|[Pp]ool)"
            r"|(?:[Nn]ot enough (?:GPU |gpu )?(?:memory|room|space)|[Nn]o memory|[Nn]o GPU memory"
            r"|[Nn]o room|[Nn]o space) (?:left )?(?:for|to allocate) (?:the )?[Kk][Vv][ _-]?"
            r"(?:[Cc]ache|[Pp]ool)"
            r"|[Kk][Vv][ _-]?(?:[Cc]ache|[Pp]ool) budget (?:is |was |becomes |goes )?(?:negative"
            r"|zero|below zero|<= ?0)"
        ),
        (
            "allocation",
            "creation",
            "to allocate",
            "to create",
            "enough",
            "o memory",
            "o GPU memory",
            "o room",
            "o space",
            "budget",
        ),
        Family.REPORTER,
        "what people write for SGLang's KV refusal in plain words (v0.5.8 model_executor/"
        "model_runner_kv_cache_mixin.py:138-144: rest_memory = available - total x (1 - mfs); "
        ":327-331 refuses when it leaves no token)",
        "the default --mem-fraction-static (~0.65) causes the KV pool allocation to fail",
        kind="kv_refusal",
        outcome=Outcome.REFUSAL,
        values={"shape": "said"},
    ),
    # ---- SGLang's own pools (and the host's memory) running out (kind pool_exhausted), in order
    # SGLang 0.1's raise after its own scheduler had admitted the batch (`nerver` as printed)
    ErrorText(
        "pool_raise_admitted",
        Regex(r"(?:Prefill|Decode) out of memory\. This should ne(?:r)?ver happen"),
        ("of memory",),
        Family.SGLANG_POOL,
        "v0.1.14 managers/router/infer_batch.py:229-239 (prefill), :388-396 (decode)",
        "Prefill out of memory. This should nerver happen.",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "admitted"},
    ),
    ErrorText(
        "prefill_out_of_memory",
        Regex(r"Prefill out of memory\.(?:.*?Try to allocate (?P<tokens>\d+) tokens)?"),
        ("of memory",),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:284; v0.4.6 managers/schedule_batch.py:901",
        "Prefill out of memory. Try to lower your batch size.",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "prefill"},
        captures=(("tokens", "tokens", int),),
        glued=_GLUED,
    ),
    ErrorText(
        "decode_out_of_memory",
        Regex(r"Decode out of memory\. Try to lower"),
        ("of memory",),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:413; v0.4.6 managers/schedule_batch.py:936",
        "Decode out of memory. Try to lower your batch size.",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "decode"},
        glued=_GLUED,
    ),
    ErrorText(
        "req_slots_out_of_memory",
        # v0.2.13 to v0.4.0 said it without the function's name; a PD decode worker asserts it
        Regex(
            r"alloc_req_slots runs out of memory"
            r"|Out of memory\. Please set a smaller number for .--max-running-requests"
            r"|req_pool_indices is full! There is a bug in memory estimation"
        ),
        ("of memory", "req_pool_indices is full"),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:321; v0.3.0 managers/schedule_batch.py:377, v0.4.0 :564; "
        "v0.5.8 disaggregation/decode.py:665, v0.5.23 :2260 (the PD decode worker's assert)",
        "alloc_req_slots runs out of memory. Please set a smaller number for "
        "`--max-running-requests`.",
        kind="pool_exhausted",
        values={"pool": "req_slots", "shape": "alloc_req_slots"},
    ),
    ErrorText(
        "token_slots_out_of_memory",
        # alloc_token_slots, under extend (page size 1), decode and speculative drafts; the PD
        # decode worker's assert when its pre-allocation overran the pool
        Regex(
            r"Out of memory\. Try to lower your batch size"
            r"|KV cache is full! (?:There is a b|B)ug in memory estimation"
        ),
        ("of memory", "KV cache is full!"),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:217 (alloc_token_slots; callers :361 extend, :439 decode, "
        "speculative/eagle_info.py:112), v0.5.23 mem_cache/allocation.py:163; v0.5.8 "
        "disaggregation/decode.py:688, v0.5.23 :2358",
        "RuntimeError: Out of memory. Try to lower your batch size.",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "alloc_token_slots"},
        glued=_GLUED,
    ),
    ErrorText(
        "kv_pool_full_retract",
        Regex(r"KV cache pool is full\. Retract requests"),
        ("pool is full",),
        Family.SGLANG_POOL,
        "v0.5.8 managers/scheduler.py:2209",
        "KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.7",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "retract"},
    ),
    ErrorText(
        "decode_retracted",
        # an INFO line: the server retracts requests and goes on (no OOM end)
        Regex(r"[Dd]ecode out of memory happened[.,](?:.*?#retracted_reqs: (?P<tokens>\d+))?"),
        ("of memory",),
        Family.SGLANG_POOL,
        "v0.4.6 managers/scheduler.py:1499; v0.3.0 managers/tp_worker.py:662; v0.2.13 "
        "managers/tp_worker.py:581 (`decode out of memory happened, #retracted_reqs: N`)",
        "Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4 -> 0.6",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "retract"},
        captures=(("tokens", "tokens", int),),
        masks_oom=True,
    ),
    ErrorText(
        "retract_aborted",
        # where older releases raised `Out of memory even after retracting all other requests`
        Regex(r"retract_decode: aborted last request \S+ due to OOM"),
        ("retract_decode: aborted",),
        Family.SGLANG_POOL,
        "v0.5.23 managers/schedule_batch.py:3529 (the last request aborted when retracting all "
        "others left no room for it; v0.5.8 :1886-1892 raised instead)",
        "retract_decode: aborted last request 9f2c1e due to OOM",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "decode"},
    ),
    # the count lines SGLang prints under its Prefill/Decode raise: asked, then free + evictable
    ErrorText(
        "tokens_asked",
        Regex(r"^Try to allocate (?P<tokens>\d+) tokens\.?$"),
        ("Try to allocate ",),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:283-287, :413-417",
        "Try to allocate 4096 tokens.",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "asked"},
        captures=(("tokens", "tokens", int),),
    ),
    ErrorText(
        "tokens_available",
        Regex(r"^Ava(?:li|il)able tokens: (?P<tokens>\d+)"),
        ("able tokens: ",),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:283-287; v0.4.5 managers/schedule_batch.py:856-860 "
        "(`Avaliable`)",
        "Available tokens: 1022",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "available"},
        captures=(("tokens", "tokens", int),),
    ),
    ErrorText(
        "full_tokens_available",
        Regex(r"^Available full tokens: (?P<tokens>\d+)"),
        ("able full tokens: ",),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:500-516 (hybrid SWA models)",
        "Available full tokens: 2048",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "available_full"},
        captures=(("tokens", "tokens", int),),
    ),
    ErrorText(
        "swa_tokens_available",
        Regex(r"^Available swa tokens: (?P<tokens>\d+)"),
        ("able swa tokens: ",),
        Family.SGLANG_POOL,
        "v0.5.8 mem_cache/common.py:500-516 (hybrid SWA models)",
        "Available swa tokens: 512",
        kind="pool_exhausted",
        values={"pool": "kv", "shape": "available_swa"},
        captures=(("tokens", "tokens", int),),
    ),
    ErrorText(
        "request_too_long",
        Regex(
            r"Input length \((?P<tokens>\d+) tokens\) exceeds the maximum allowed length "
            r"\((?P<limit>\d+) tokens\)"
        ),
        ("maximum allowed length",),
        Family.SGLANG_POOL,
        "v0.5.8 managers/utils.py:121 (M = min(context_len - 1, max_total_num_tokens - 1) - 5, "
        "managers/tp_worker.py:286-290)",
        "Input length (40000 tokens) exceeds the maximum allowed length (32762 tokens). Use a "
        "shorter input or enable --allow-auto-truncate.",
        kind="pool_exhausted",
        values={"pool": "request_length", "shape": "too_long"},
        captures=(("tokens", "tokens", int), ("limit", "limit", int)),
    ),
    ErrorText(
        "shared_memory",
        # docker's /dev/shm is 64 MB by default: NCCL's segments, PyTorch's workers, a SIGBUS
        # when a segment cannot grow
        Regex(
            r"Error while creating shared memory segment \S*(?: \(size (?P<size>\d+)\))?"
            r"|failed to extend /dev/shm|insufficient shared memory \(shm\)|\bBus error\b"
        ),
        ("shared memory", "/dev/shm", "Bus error"),
        Family.SHM,
        "NCCL src/misc/shmutils.cc; torch/utils/data/_utils/worker.py",
        "misc/shmutils.cc:72 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-abc123 (size 9637888)",
        kind="pool_exhausted",
        values={"pool": "shm", "shape": "shm"},
        captures=(("size", "size", int),),
    ),
    ErrorText(
        "host_memory",
        Regex(
            r"\[Errno 12\] Cannot allocate memory"
            r"|DefaultCPUAllocator: can't allocate memory|DefaultCPUAllocator: not enough memory"
            r"|std::bad_alloc"
            r"|Unable to allocate [\d.]+ [KMGTP]?i?B for an array with shape"
            # bare, at the line's end or closing a quote (`"MemoryError"` in a sentence)
            r"|(?<![\w.])MemoryError(?:\s*$|(?=[\"'`]))"
        ),
        (
            "allocate memory",
            "not enough memory",
            "bad_alloc",
            "for an array with shape",
            "MemoryError",
        ),
        Family.HOST,
        "Linux ENOMEM; torch c10/core/impl/alloc_cpu.cpp (DefaultCPUAllocator; `not enough "
        "memory` on Windows); numpy's _ArrayMemoryError ('Unable to allocate 12.0 GiB for an "
        "array with shape'); CPython's bare MemoryError when malloc fails (Objects/obmalloc.c, "
        "PyErr_NoMemory)",
        # the example without its `OSError:`, the phrase that states the crash being its own
        "[Errno 12] Cannot allocate memory",
        kind="pool_exhausted",
        outcome=Outcome.CRASH,
        values={"pool": "host", "shape": "host_memory"},
    ),
    ErrorText(
        "oom_killer",
        # the kernel's words for the host running out: no GPU memory in them
        # and a JIT build's compiler it killed (FlashInfer, DeepGEMM, sgl-kernel compile at first
        # use: too many parallel jobs for the host's RAM)
        Regex(
            r"Out of memory: Kill(?:ed)? process|invoked oom-killer"
            r"|Memory cgroup out of memory: Kill(?:ed)? process"
            r"|Killed signal terminated program cc1plus"
            r"|nvcc error\s*:\s*'[^'\n]*' died due to signal 9"
        ),
        (
            "Out of memory: Kill",
            "invoked oom-killer",
            "out of memory: Kill",
            "Killed signal terminated",
            "died due to signal 9",
        ),
        Family.HOST,
        "Linux mm/oom_kill.c, the kernel's OOM killer as dmesg prints it (`Out of memory: Killed "
        "process N (name)`, `invoked oom-killer`; in a container's memory cgroup `Memory cgroup "
        "out of memory: Killed process N (name)`); the compilers' words when it killed them: "
        "GCC's driver (`c++: fatal error: Killed signal terminated program cc1plus`), nvcc "
        "(`nvcc error : 'cicc' died due to signal 9 (Kill signal)`)",
        "Out of memory: Killed process 12345 (python3) total-vm:123456789kB, anon-rss:98765432kB",
        kind="pool_exhausted",
        outcome=Outcome.CRASH,
        values={"pool": "host", "shape": "host_memory"},
        masks_oom=True,
    ),
    # ---- what reporters write around a paste (kind reported; memledger.input.reported reads
    # a bare line's settings and mentions): a setting's name, then the values typed after it
    ErrorText(
        "said_fraction_near_one",
        # SGLang's fraction typed at 0.97 or more (0.99, `=0.98`, `to .97`, 1.0): above the
        # default SGLang itself picks on any card up to 288 GB (lifecycle MENTIONS). Kept before
        # typed_fraction: both start at the setting's name, and the line's reader takes a
        # setting's values up to the next name that starts after it
        Regex(
            r"(?:mem[-_ ]?fraction(?:[-_ ]?static)?|gpu[-_]memory[-_]utilization)`?"
            r"(?:\s*[=:]\s*|\s+(?:(?:was|is|been|be|set|to|of|at|as)\s+){0,3})`?"
            r"(?:0?\.9[7-9]\d{0,2}|1\.0{1,3})(?![\d.])",
            re.I,
        ),
        ("fraction", "utilization"),
        Family.REPORTER,
        "a --mem-fraction-static (or an RL framework's gpu_memory_utilization, which sets it: "
        "memledger.sglang.frameworks) typed at 0.97 or more (memledger.sglang.lifecycle MENTIONS)",
        "The config sets --mem-fraction-static=0.99 so the model barely fits on a 24GB card",
        kind="reported",
        values={"mention": "fraction_near_one"},
    ),
    ErrorText(
        "typed_fraction",
        Regex(r"mem[-_ ]?fraction(?:[-_ ]?stati?c?\w*)?|gpu[-_]memory[-_]utilization", re.I),
        ("fraction", "utilization"),
        Family.REPORTER,
        "what people write: SGLang's --mem-fraction-static (RL frameworks' gpu_memory_utilization "
        "sets it: memledger.sglang.frameworks)",
        "when setting --mem-fraction-static to 0.85, I get a CUDA out of memory error",
        kind="reported",
        values={"knob": "mem_fraction_static"},
    ),
    ErrorText(
        "typed_host_memory",
        # the host's RAM as people type it: `Mem: 256GB`, `256 GB RAM`, `host memory 512G`, the
        # figure HiCache's host pools (one a rank) must fit in (memledger.sglang.lifecycle
        # MENTIONS hicache_host)
        Regex(
            r"(?:host memory|Host memory|host RAM|Host RAM|host ram|system memory|System memory"
            r"|system RAM|System RAM|system ram|CPU memory|CPU RAM|cpu memory|cpu ram)\b"
            r"|\d ?[GT]i?B RAM\b|\bRAM:|\bMem:"
        ),
        (
            "host memory",
            "Host memory",
            "host RAM",
            "Host RAM",
            "host ram",
            "system memory",
            "System memory",
            "system RAM",
            "System RAM",
            "system ram",
            "CPU memory",
            "CPU RAM",
            "cpu memory",
            "cpu ram",
            "B RAM",
            "RAM:",
            "Mem:",
        ),
        Family.REPORTER,
        "what people write for the host's RAM, in GB (v0.5.8 mem_cache/memory_pool_host.py:"
        "164-176 compares each rank's host pool with it, less 10 GiB)",
        "Mem: 256GB, TP: 4",
        kind="reported",
        values={"knob": "host_memory_gb"},
    ),
    ErrorText(
        "said_hicache_host",
        # HiCache and the host's RAM in one sentence: `hicache=40GB and TP=4, so 40GB*4=160GB`,
        # `buff/cache grows until it fails with --hicache-size 40`; not SGLang's own `Allocating
        # X GB host memory for hierarchical KV cache.` (a line of a healthy start)
        Regex(
            r"(?:\bhicache\b|hierarchical[ _-]cache)[^\n]{0,200}?(?:\bhost\b|\bram\b|buff/cache"
            r"|\bmem\b|memory usage|\bpinned\b)"
            r"|(?:\bhost\b|\bram\b|buff/cache)[^\n]{0,200}?(?<!memory for )(?<!size of the )"
            r"(?:\bhicache\b|hierarchical[ _-]cache)",
            re.I,
        ),
        ("hicache", "hierarchical"),
        Family.REPORTER,
        "HiCache's host pool said in words beside the host's RAM (memledger.sglang.lifecycle "
        "MENTIONS hicache_host)",
        "with --hicache-size 40 and TP=4 the host RAM fills up and init fails",
        kind="reported",
        values={"mention": "hicache_host"},
    ),
    ErrorText(
        "said_hicache_guard_twice",
        # the host-pool guard said to count the peers' pools twice: `the peers' pools are
        # subtracted twice`, `HiCache's guard double-counts`
        re.compile(
            r"(?:hicache|hierarchical|host pool|host-pool)[^\n]{0,1000}?"
            r"(?:\btwice\b|double[- ]?count)"
            r"|(?:\btwice\b|double[- ]?count)[^\n]{0,300}?(?:hicache|hierarchical|host pool"
            r"|host-pool)",
            re.I,
        ),
        ("hicache", "hierarchical", "host pool", "host-pool"),
        Family.REPORTER,
        "HiCache's host-pool guard said to count pools twice (memledger.sglang.lifecycle MENTIONS "
        "hicache_guard_twice)",
        "the HiCache host-pool guard subtracts the peers' pools twice and refuses",
        kind="reported",
        values={"mention": "hicache_guard_twice"},
    ),
    ErrorText(
        "said_logprob",
        # also in words: `log probabilities`, `log-probs`
        Regex(r"logprob|log prob(?:s\b|abilit)|log-prob(?:s\b|abilit)", re.I),
        ("logprob", "Logprob", "LOGPROB", "log prob", "Log prob", "log-prob", "Log-prob"),
        Family.REPORTER,
        "a request's return_logprob / logprob_start_len (SGLang's sampling params): input "
        "logprobs are computed over every token from logprob_start_len on (v0.5.8 "
        "layers/logits_processor.py:478-513)",
        "I set return_logprob=True and logprob_start_len=0",
        kind="reported",
        values={"mention": "logprob"},
    ),
    ErrorText(
        "said_draft_window",
        # the draft-token window named in prose: `num-draft-tokens = 8`, `a large draft-token
        # window`, `the spec-verify workspace`; not server_args' `speculative_num_draft_tokens=`
        # (every speculative run prints it)
        Regex("|".join(re.escape(word) for word in DRAFT_WINDOW_WORDS), re.I),
        DRAFT_WINDOW_WORDS,
        Family.REPORTER,
        "speculative decoding's draft-token window named in prose (what the target's verify pass "
        "runs a request: memledger.sglang.lifecycle MENTIONS draft_window)",
        "with a large draft-token window the decode OOMs mid-traffic",
        kind="reported",
        values={"mention": "draft_window"},
    ),
    ErrorText(
        "said_speculative",
        Regex(
            r"[Ss]peculative|\bEAGLE3?\b|\bNEXTN\b|\bNextN\b|\bMTP\b"
            r"|\bdraft pools?|\bdraft models?|\bdraft workers?"
        ),
        (
            "peculative",
            "EAGLE",
            "NEXTN",
            "NextN",
            "MTP",
            "draft pool",
            "draft model",
            "draft worker",
        ),
        Family.REPORTER,
        "speculative decoding named in prose (SGLang's draft worker: memledger.sglang.lifecycle "
        "stage draft)",
        "I am trying speculative decoding on one GPU",
        kind="reported",
        values={"mention": "speculative"},
    ),
    ErrorText(
        "said_kv_cap",
        # the KV pool's cap named in prose, a flag, a config key or an embedder's name for it
        # (`--max-total-tokens`, `sglang_max_total_tokens`, an env var's `..._MAX_TOTAL_TOKENS`);
        # not a server_args dump's unset `max_total_tokens=None`, nor the pool's size,
        # `max_total_num_tokens`
        Regex(r"(?:max_total_tokens|max-total-tokens|max total tokens)\b(?!\s*=\s*None)", re.I),
        ("max_total_tokens", "max-total-tokens", "max total tokens"),
        Family.REPORTER,
        "SGLang's --max-total-tokens named in prose or flags (v0.5.8 server_args.py, applied at "
        "model_executor/model_runner_kv_cache_mixin.py:299-306: memledger.sglang.lifecycle "
        "MENTIONS)",
        "We set max_total_tokens to batch x max_length and the rollout runs out of memory",
        kind="reported",
        values={"mention": "kv_cap"},
    ),
    ErrorText(
        "said_per_request_rows",
        # memory said to be sized by the running-request count: `sized by max_running_requests`,
        # `rows == max_running_requests + 1`, `one row per concurrent request`
        Regex(
            r"(?:sized|scales?|grows?|allocated|proportional|multiplied)\W+(?:\w+\W+){0,4}?"
            r"(?:by|with|to|per|from)\W+(?:the\W+)?(?:max_running_requests|max-running-requests)"
            r"|\brows?\W{0,3}(?:==|=)\W{0,3}(?:max_running_requests|max-running-requests)"
            r"|(?:one|a|1) (?:row per|slot per|entry per) (?:[\w-]+ )?"
            r"(?:running |concurrent |in-flight )?request",
            re.I,
        ),
        ("max_running_requests", "max-running-requests", "row per", "slot per", "entry per"),
        Family.REPORTER,
        "what people write when a buffer or table has a row for each request SGLang may run "
        "(its request table: v0.5.8 mem_cache/memory_pool.py:136; memledger.sglang.lifecycle "
        "MENTIONS)",
        "the buffer is sized by max_running_requests, one row per possibly-concurrent request",
        kind="reported",
        values={"mention": "per_request_rows"},
    ),
    ErrorText(
        "said_page_size",
        Regex(r"page size|page_size|page-size", re.I),
        ("page size", "page_size", "page-size"),
        Family.REPORTER,
        "the paged KV cache's --page-size named in prose (memledger.sglang.lifecycle MENTIONS)",
        "Prefill out of memory when page size is large",
        kind="reported",
        values={"mention": "page_size"},
    ),
    ErrorText(
        "paged_allocator_state",
        # the paged allocator's and the decode check's own names, quoted from the code or in a
        # debug print through SGLang's logger (`alloc_decode len(self.free_pages)=5`)
        Regex(
            r"\b(?:free_pages|release_pages|new_page_count_next_decode|num_new_pages"
            r"|alloc_paged_token_slots_(?:extend|decode)|PagedTokenToKVPoolAllocator)\b"
        ),
        (
            "free_pages",
            "release_pages",
            "new_page_count_next_decode",
            "num_new_pages",
            "alloc_paged_token_slots_",
            "PagedTokenToKVPoolAllocator",
        ),
        Family.DEBUG_PRINT,
        "v0.4.6.post5 mem_cache/paged_allocator.py:181-208 (free_pages), "
        "managers/schedule_batch.py:1317-1335 (new_page_count_next_decode, check_decode_mem); "
        "v0.5.8 mem_cache/allocator.py:53-62 (free_pages, release_pages), mem_cache/common.py:"
        "254-267 (alloc_paged_token_slots_extend)",
        "[2025-05-01 10:00:00] alloc_decode len(self.free_pages)=3",
        kind="reported",
        values={"mention": "page_size"},
    ),
    ErrorText(
        "said_attention_workspace",
        Regex(r'aiter_backend\.py", line \d+, in __init__'),
        ("aiter_backend.py",),
        Family.REPORTER,
        "the AITER attention backend's constructor in a traceback frame: where it allocates its "
        "workspace (v0.5.8 layers/attention/aiter_backend.py:157-167)",
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/aiter_backend.py", '
        "line 270, in __init__",
        kind="reported",
        values={"mention": "attention_workspace", "where": "frame"},
    ),
    ErrorText(
        "said_autotune_batch",
        Regex(r'(?:model_runner|base_runner)\.py", line \d+, in _flashinfer_autotune'),
        ("_flashinfer_autotune",),
        Family.REPORTER,
        "FlashInfer's autotune in a traceback frame: a dummy forward of the request slots' batch "
        "(v0.5.8 model_executor/model_runner.py:1726-1735) or the decode graphs' largest "
        "(v0.5.23 model_executor/runner/base_runner.py:279-284, :392)",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", '
        "line 1733, in _flashinfer_autotune",
        kind="reported",
        values={"mention": "autotune_batch", "where": "frame"},
    ),
    ErrorText(
        "said_indexer_frame",
        Regex(r'(?:nsa_indexer|dsa_indexer|dsv4/indexer)\.py", line \d+, in \w+'),
        ("nsa_indexer", "dsa_indexer", "dsv4/indexer"),
        Family.REPORTER,
        "the sparse-attention indexer in a traceback frame: DeepSeek-V3.2's (v0.5.8 "
        "layers/attention/nsa/nsa_indexer.py, v0.5.23 layers/attention/dsa/dsa_indexer.py) or "
        "V4's C4 indexer (v0.5.17 layers/attention/dsv4/indexer.py:633 forward_c4_indexer)",
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/dsv4/indexer.py", '
        "line 774, in forward_c4_indexer",
        kind="reported",
        values={"mention": "indexer_logits", "where": "frame"},
    ),
    ErrorText(
        "said_indexer_logits",
        # the indexer's scoring kernels and calls as people quote them (`forward_c4_indexer ->
        # deep_gemm fp8_paged_mqa_logits -> CUDA out of memory`), and their words for its scores
        Regex(
            r"fp8_(?:fp4_)?(?:paged_)?mqa_logits|forward_c4_indexer|_get_topk_(?:ragged|paged)"
            r"|indexer(?:'s)? (?:logits|scores?|transient|top-?k)"
            r"|(?:sparse|lightning|c4|nsa|dsa)[- ]indexer",
            re.I,
        ),
        ("mqa_logits", "forward_c4_indexer", "_get_topk_", "indexer"),
        Family.REPORTER,
        "what people quote of the sparse-attention indexer: its DeepGEMM scoring calls (v0.5.8 "
        "layers/attention/nsa/nsa_indexer.py:413, :527; v0.5.17 layers/attention/dsv4/"
        "indexer.py:724-783) and their words for it (memledger.sglang.lifecycle MENTIONS)",
        "indexer.py forward_c4_indexer -> deep_gemm fp8_paged_mqa_logits -> CUDA out of memory",
        kind="reported",
        values={"mention": "indexer_logits"},
    ),
    ErrorText(
        "said_diffusion_load",
        # SGLang's diffusion runtime's own line for each component it loads
        Regex(
            r"Loading (?:text_encoder|transformer|vae|image_encoder)\w* from [^\n]{0,300}"
            r"avail mem: "
        ),
        ("avail mem: ",),
        Family.SGLANG_LOG,
        "SGLang's diffusion runtime logs each component it loads with the free memory (v0.5.8 "
        "multimodal_gen/runtime/loader/component_loader.py:152 `Loading %s from %s. avail mem: "
        "%.2f GB`; memledger.sglang.lifecycle MENTIONS diffusion_load)",
        "[01-14 16:43:28] Loading text_encoder from Wan-AI/Wan2.1-T2V-1.3B-Diffusers/"
        "text_encoder. avail mem: 18.58 GB",
        kind="reported",
        values={"mention": "diffusion_load"},
    ),
    ErrorText(
        "said_diffusion_load_frame",
        Regex(r'multimodal_gen/runtime/loader/\S*\.py", line \d+, in \w+'),
        ("multimodal_gen/runtime/loader",),
        Family.REPORTER,
        "SGLang's diffusion runtime's component loader in a traceback frame (v0.5.8 "
        "multimodal_gen/runtime/loader/component_loader.py; v0.5.23 "
        "loader/component_loaders/component_loader.py)",
        '  File "/sgl-workspace/sglang/python/sglang/multimodal_gen/runtime/loader/'
        'component_loader.py", line 158, in load',
        kind="reported",
        values={"mention": "diffusion_load", "where": "frame"},
    ),
    ErrorText(
        "said_diffusion_decode",
        # a reporter's words for the VAE decode of SGLang's diffusion runtime
        Regex(r"DecodingStage|VAE decod|vae\.decode|decoding stage", re.I),
        (
            "DecodingStage",
            "VAE decod",
            "vae decod",
            "Vae decod",
            "vae.decode",
            "decoding stage",
            "Decoding stage",
            "Decoding Stage",
        ),
        Family.REPORTER,
        "a reporter's words for SGLang's diffusion runtime's VAE decode stage (memledger.sglang."
        "lifecycle MENTIONS diffusion_decode)",
        "it fails with a fatal CUDA OOM in the decoding stage after denoising completed",
        kind="reported",
        values={"mention": "diffusion_decode"},
    ),
    ErrorText(
        "said_diffusion_decode_line",
        # the stage's own log lines: its start, and its OOM advice (v0.5.23)
        Regex(r"\[DecodingStage\]|OOM detected during VAE decoding"),
        ("[DecodingStage]", "OOM detected during VAE decoding"),
        Family.SGLANG_LOG,
        "SGLang's diffusion runtime's decode stage logs `[DecodingStage] started...` (v0.5.8 "
        "multimodal_gen/runtime/utils/perf_logger.py:150, each stage by its class name) and, "
        "on an out-of-memory in the VAE decode, `OOM detected during VAE decoding. Enable "
        "--vae-tiling ...` (v0.5.23 pipelines_core/stages/decoding.py:318-337)",
        "[01-08 23:08:15] [DecodingStage] started...",
        kind="reported",
        values={"mention": "diffusion_decode"},
    ),
    ErrorText(
        "said_diffusion_decode_frame",
        Regex(r'stages/decoding\.py", line \d+, in \w+'),
        ("stages/decoding.py",),
        Family.REPORTER,
        "SGLang's diffusion runtime's decode stage in a traceback frame (v0.5.8 "
        "multimodal_gen/runtime/pipelines_core/stages/decoding.py)",
        '  File "/sgl-workspace/sglang/python/sglang/multimodal_gen/runtime/pipelines_core/'
        'stages/decoding.py", line 149, in forward',
        kind="reported",
        values={"mention": "diffusion_decode", "where": "frame"},
    ),
    ErrorText(
        "said_diffusion_oom_advice",
        # the advice block SGLang's diffusion runtime prints under an out-of-memory
        Regex(r"If the OOM occurs during (?:loading|runtime)"),
        ("If the OOM occurs during",),
        Family.SGLANG_LOG,
        "SGLang's diffusion runtime's advice under an out-of-memory (v0.5.8 "
        "multimodal_gen/runtime/managers/gpu_worker.py:271-280 `OOM detected. Possible "
        "solutions:`, printed at :330; v0.5.23 :1750-1771; memledger.sglang.lifecycle MENTIONS "
        "diffusion_oom_advice)",
        "  - If the OOM occurs during loading:",
        kind="reported",
        values={"mention": "diffusion_oom_advice"},
    ),
    ErrorText(
        "said_audio_decoder_stage",
        Regex(r"Stage vocoder received msg|Stage code2wav received msg"),
        ("Stage vocoder", "Stage code2wav"),
        Family.REPORTER,
        "sglang-omni's stage loop logs each message a stage takes (sgl-project/sglang-omni@2489a10 "
        "sglang_omni/pipeline/stage/runtime.py:264 `Stage %s received msg`); the audio decoder "
        "stages are `vocoder` (models/fishaudio_s2_pro/pipeline/next_stage.py:10) and `code2wav` "
        "(models/qwen3_omni/pipeline/next_stage.py:19)",
        "2026-01-05 10:00:00,126 [INFO] sglang_omni.pipeline.stage.runtime: Stage vocoder "
        "received msg: DataReadyMessage",
        kind="reported",
        values={"mention": "audio_decoder_stage"},
    ),
    ErrorText(
        "said_omni_component_load",
        # a multi-stage pipeline's own model loaded beside SGLang's engine, named in a frame or in
        # prose (`the crash lands in create_vocoder_executor -> _load_codec -> codec.to(device)`)
        Regex(
            r"\b(?:create_vocoder_executor|create_code2wav_executor|load_code2wav_model|_load_codec"
            r"|_load_audio_decoder)\b"
        ),
        (
            "create_vocoder_executor",
            "create_code2wav_executor",
            "load_code2wav_model",
            "_load_codec",
            "_load_audio_decoder",
        ),
        Family.REPORTER,
        "sglang-omni's loaders of a pipeline's own models (sgl-project/sglang-omni@2489a10 "
        "models/fishaudio_s2_pro/pipeline/stages.py:41 _load_audio_decoder, :72 _load_codec, :372 "
        "create_vocoder_executor; models/qwen3_omni/components/code2wav_executor.py:245 "
        "create_code2wav_executor); https://github.com/sgl-project/sglang-omni/pull/391",
        '  File "/sglang-omni/sglang_omni/models/fishaudio_s2_pro/pipeline/stages.py", line 96, '
        "in _load_codec",
        kind="reported",
        values={"mention": "omni_component_load"},
    ),
    ErrorText(
        "said_omni_component_load_frame",
        Regex(
            r'(?:pipeline/stages|components/code2wav_executor)\.py", line \d+, in '
            r"(?:create_vocoder_executor|_load_codec|_load_audio_decoder|create_code2wav_executor"
            r"|load_code2wav_model)\b"
        ),
        (
            "create_vocoder_executor",
            "_load_codec",
            "_load_audio_decoder",
            "create_code2wav_executor",
            "load_code2wav_model",
        ),
        Family.REPORTER,
        "sglang-omni's loaders of a pipeline's own models in a traceback frame "
        "(sgl-project/sglang-omni@2489a10 models/fishaudio_s2_pro/pipeline/stages.py:41, :72, "
        ":372; models/qwen3_omni/components/code2wav_executor.py:245)",
        '  File "/sglang-omni/sglang_omni/models/fishaudio_s2_pro/pipeline/stages.py", line 96, '
        "in _load_codec",
        kind="reported",
        values={"mention": "omni_component_load", "where": "frame"},
    ),
    ErrorText(
        "said_release_frees_nothing_rocm72",
        # ROCm 7.2 named on a line with the release (`On ROCm 7.2, torch_memory_saver.pause(tag)
        # ... does not free`, `ROCm 7.2: pause() frees no physical GPU memory`)
        Regex(
            r"\brocm ?7\.2\b[^\n]{0,80}?(?:pause|release|offload|sleep|torch_memory_saver)",
            re.I,
        ),
        ("rocm",),
        Family.REPORTER,
        "ROCm 7.2 named beside SGLang's release (memledger.sglang.lifecycle MENTIONS "
        "release_frees_nothing_rocm72; https://github.com/fzyzcjy/torch_memory_saver/issues/83)",
        "On ROCm 7.2, torch_memory_saver.pause(tag) returns but frees no physical memory",
        kind="reported",
        values={"mention": "release_frees_nothing_rocm72"},
    ),
    ErrorText(
        "said_release_frees_nothing",
        # SGLang's release (torch_memory_saver's pause, a framework's offload or sleep) said to
        # free nothing: `memory is not being freed after sglang offload`, `pause() frees no
        # physical GPU memory`, `pause(tag) returns successfully but does not free the memory`
        Regex(
            r"(?:memory|VRAM)[^.\n]{0,30}?(?:is not|isn't|was not|wasn't|are not|aren't|not|never)"
            r" (?:being |getting |get )?(?:freed|released)[^.\n]{0,60}?"
            r"(?:offload|release|pause|sleep)"
            r"|(?:offload|release_memory_occupation|release|pause|sleep)\w*(?:\(\w*\))?`?"
            r"[^.\n]{0,60}?(?:does not|doesn't|did not|didn't|won't|cannot|can't|never)"
            r" (?:actually |really )?(?:free|release)s? (?:the |any )?(?:physical |GPU |device )*"
            r"(?:memory|VRAM)"
            r"|(?:offload|release|pause|sleep)\w*(?:\(\w*\))?`?[^.\n]{0,40}?frees? "
            r"(?:no|nothing|none)\b",
            re.I,
        ),
        ("free", "releas"),
        Family.REPORTER,
        "what people write when SGLang's release (torch_memory_saver's pause) freed no memory "
        "(memledger.sglang.lifecycle MENTIONS release_frees_nothing; "
        "https://github.com/verl-project/verl/issues/1545, "
        "https://github.com/fzyzcjy/torch_memory_saver/issues/83)",
        "It seems that memory is not being freed after sglang offload in multi-turn rollout",
        kind="reported",
        values={"mention": "release_frees_nothing"},
    ),
    ErrorText(
        "said_lora",
        Regex(r"(?<![\w.])(?:LoRA|Lora|lora)(?![\w=])"),
        ("lora", "LoRA", "Lora"),
        Family.REPORTER,
        "LoRA adapters named in prose or flags (SGLang loads them and their memory pool after the "
        "base weights, before KV sizing: memledger.sglang.lifecycle MENTIONS)",
        "With two LoRA adapters on, only 3.1 GB stays free after loading",
        kind="reported",
        values={"mention": "lora"},
    ),
    ErrorText(
        "said_kt_gpu_experts",
        # KTransformers' CPU/GPU expert split, on: its weight path named (upstream SGLang's and
        # the kvcache-ai fork's flag, or the server arg)
        Regex(r"--kt-weight-path|kt_weight_path(?!\s*[=:]\s*None)"),
        ("--kt-weight-path", "kt_weight_path"),
        Family.REPORTER,
        "KTransformers' expert split named by its weight path (v0.5.8 server_args.py:521 "
        "kt_weight_path, layers/moe/kt_ep_wrapper.py:73-74; memledger.sglang.lifecycle MENTIONS)",
        "With --kt-weight-path /models/cpu --kt-num-gpu-experts 64 on four 24 GB cards it runs "
        "out of memory at startup",
        kind="reported",
        values={"mention": "kt_gpu_experts"},
    ),
    ErrorText(
        "said_ktransformers",
        # KTransformers named, or its GPU-expert count, with no weight path in the sentence: the
        # split is on only with one (memledger.sglang.lifecycle MENTIONS, SUPERSEDED)
        Regex(
            r"--kt-num-gpu-experts|kt_num_gpu_experts"
            r"|(?<![\w.])(?:KTransformers|ktransformers|Ktransformers|KTRANSFORMERS)\b"
        ),
        (
            "--kt-num-gpu-experts",
            "kt_num_gpu_experts",
            "KTransformers",
            "ktransformers",
            "Ktransformers",
            "KTRANSFORMERS",
        ),
        Family.REPORTER,
        "KTransformers (SGLang with CPU experts) named, or its GPU-expert count (v0.5.8 "
        "server_args.py:4038 --kt-num-gpu-experts; memledger.sglang.lifecycle MENTIONS)",
        "Out of memory error using Ktransformers with DeepSeek on one B200",
        kind="reported",
        values={"mention": "ktransformers"},
    ),
    ErrorText(
        "said_too_big_for_gpu",
        # `a model which is too big for a single GPU`, `70B doesn't fit on one card`: the weights
        # alone are more than a GPU holds, whatever the fraction
        Regex(
            r"(?:too big|too large|Too big|Too large) for (?:a single|one single|one|a|my|each|the)"
            r" (?:GPU|GPUs|gpu|card|device)\b"
            r"|(?:not|n't|cannot|can not) (?:fit on|fit in|fit into) "
            r"(?:a single|one single|one|a|my|each|the)"
            r" (?:GPU|gpu|card|device)\b"
        ),
        ("too big", "too large", "Too big", "Too large", "fit on", "fit in"),
        Family.REPORTER,
        "what people write when a model's weights alone exceed one GPU (the load stage, whose "
        "bytes a rank are parameters x dtype / tp: v0.5.8 model_executor/model_runner.py:805; "
        "memledger.sglang.lifecycle MENTIONS)",
        "Try to run a model which is too big for a single GPU and it fails",
        kind="reported",
        values={"mention": "too_big_for_gpu"},
    ),
    ErrorText(
        "said_swa",
        # a hybrid sliding-window model named in prose or by its setting; the upper case only
        # (SGLang's own decode lines print `#swa token:` in every batch of such a model)
        Regex(
            r"(?<![A-Za-z])SWA(?![A-Za-z])|sliding window|sliding-window|Sliding Window"
            r"|swa_full_tokens_ratio|swa-full-tokens-ratio"
        ),
        (
            "SWA",
            "sliding window",
            "sliding-window",
            "Sliding Window",
            "swa_full_tokens_ratio",
            "swa-full-tokens-ratio",
        ),
        Family.REPORTER,
        "a hybrid sliding-window model's pools named in prose (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:206-248: memledger.sglang.lifecycle "
        "MENTIONS)",
        "For SWA models the pool runs out although max_total_tokens covers the batch",
        kind="reported",
        values={"mention": "swa_pools"},
    ),
    ErrorText(
        "said_loading",
        # `while loading.`, `during model loading,`, `loading the weights` (not `loading CUDA
        # kernels`: what loads must be the model), and a line that starts `Loading <model> ...`
        # and says it ran out of memory (not a `Loading safetensors checkpoint shards` progress
        # bar nor `Loading JIT ops`: they name no out-of-memory). Whole phrases as its words: a
        # log line holding a bare `Loading` stays quiet (memledger.input.quiet)
        Regex(
            # not the diffusion runtime's own advice, `If the OOM occurs during loading:`
            r"(?<!occurs )(?:while loading|when loading|during loading|While loading"
            r"|When loading|During loading)(?=\s*(?:[.,;:!?)]|$))"
            r"|(?:model loading|weight loading|weights loading|checkpoint loading)\b"
            r"|(?:loading the model|loading the weights|loading the checkpoint|loading model"
            r"|loading weights|loading checkpoint)\b"
            # an issue title's Title Case
            r"|(?:While Loading|When Loading|During Loading|Model Loading|Weight Loading"
            r"|Weights Loading|Loading The Model|Loading The Weights|Loading Model"
            r"|Loading Weights)\b"
            r"|^Loading [^:\n]{1,160}?(?:\boom\b|\bOom\b|OOM|out of memory)"
            # the noun after a preposition: `during weight load`, `at model load` (not SGLang's
            # own `Load weight begin`, nor `weight load time`: the preposition comes first)
            r"|(?:during|while|at|in|on) (?:the )?"
            r"(?:weight load|weights load|model load|checkpoint load)\b(?! time)",
        ),
        (
            "while loading",
            "when loading",
            "during loading",
            "While loading",
            "When loading",
            "During loading",
            "model loading",
            "weight loading",
            "weights loading",
            "checkpoint loading",
            "loading the model",
            "loading the weights",
            "loading the checkpoint",
            "loading model",
            "loading weights",
            "loading checkpoint",
            "While Loading",
            "When Loading",
            "During Loading",
            "Model Loading",
            "Weight Loading",
            "Weights Loading",
            "Loading The Model",
            "Loading The Weights",
            "Loading Model",
            "Loading Weights",
            "weight load",
            "weights load",
            "model load",
            "checkpoint load",
            "oom",
            "Oom",
            "OOM",
            "out of memory",
        ),
        Family.REPORTER,
        "what people write when it failed while the weights were loading (the load stage: "
        "memledger.sglang.lifecycle MENTIONS)",
        "Loading a 480B fp8 model on two cards ends with oom in the weight shuffle",
        kind="reported",
        values={"mention": "loading"},
    ),
    ErrorText(
        "said_capture",
        # `OOM during cuda graph capture`, `fails when capturing CUDA graphs`: whole phrases
        # that SGLang's own `Capture cuda graph begin` / `Capturing batches` log lines do not
        # hold in any case, so those stay quiet (memledger.input.quiet folds case)
        Regex(
            r"capturing cuda graph|capturing CUDA graph|capturing the cuda graph"
            r"|capturing the CUDA graph|cuda graph capture|CUDA graph capture"
            r"|CUDA Graph capture|cudagraph capture"
            # an issue title's Title Case
            r"|Capturing CUDA Graph|Capturing Cuda Graph|CUDA Graph Capture|Cuda Graph Capture"
            # the graph unnamed after a preposition: `OOMed during graph capture`, `in the decode
            # graph capture`
            r"|(?:during|while|in|at|on) (?:the )?(?:decode |prefill |piecewise )?graph capture"
        ),
        (
            "capturing cuda graph",
            "capturing CUDA graph",
            "capturing the cuda graph",
            "capturing the CUDA graph",
            "cuda graph capture",
            "CUDA graph capture",
            "CUDA Graph capture",
            "cudagraph capture",
            "Capturing CUDA Graph",
            "Capturing Cuda Graph",
            "CUDA Graph Capture",
            "Cuda Graph Capture",
            "graph capture",
        ),
        Family.REPORTER,
        "what people write when it failed while SGLang captured its CUDA graphs (the stage after "
        "the pools: memledger.sglang.lifecycle MENTIONS)",
        "the server OOMs during cuda graph capture on the second GPU",
        kind="reported",
        values={"mention": "capture"},
    ),
    ErrorText(
        "said_warmup",
        Regex(
            r"during warmup|during the warmup|During warmup|at warmup|in warmup"
            r"|while warming up|when warming up|during warm-up|during the warm-up|in the warmup"
            # an issue title's Title Case
            r"|During Warmup|During The Warmup|At Warmup|In Warmup|While Warming Up|During Warm-up"
        ),
        (
            "during warmup",
            "during the warmup",
            "During warmup",
            "at warmup",
            "in warmup",
            "while warming up",
            "when warming up",
            "during warm-up",
            "during the warm-up",
            "in the warmup",
            "During Warmup",
            "During The Warmup",
            "At Warmup",
            "In Warmup",
            "While Warming Up",
            "During Warm-up",
        ),
        Family.REPORTER,
        "what people write when it failed on the warmup request after startup (memledger.sglang"
        ".lifecycle MENTIONS)",
        "it dies with OOM during warmup, after the graphs",
        kind="reported",
        values={"mention": "warmup"},
    ),
    ErrorText(
        "said_pool_size",
        # the size of the KV pool asked about or complained of, no failure said: `why is my
        # max_total_num_tokens so small`, `KV cache pool is smaller after upgrading`, `how do I
        # get more tokens in the KV cache`, `KV Cache 容量太小`; its words are the size words,
        # since `KV` alone is on SGLang's every pool line (and not `only`, `lower`, `drop`,
        # which SGLang's and vLLM's own lines hold hundreds of times)
        Regex(
            r"(?:max[_ -]total[_ -](?:num[_ -])?tokens|kv[ _-]?cache(?: pool)?(?: size| capacity"
            r"| tokens?)?|kv pool|token capacity|token pool|#tokens|tokens? in the kv"
            r"|kv[ _-]?cache ?(?:容量|大小|空间))"
            r"[^.?!\n]{0,50}?(?:small|\bless\b|fewer|shrink|shrank|shrunk|dropped"
            r"|decreas|increas|enlarg|bigger|larger|\bmore\b|\bgrow"
            r"|太小|变小|减少|增加|增大|更大)"
            r"|(?:\bwhy\b|\bhow\b|increas|enlarg|bigger|larger|\bmore\b|\bgrow"
            r"|为什么|如何|怎么|增加|增大)[^.?!\n]{0,50}?"
            r"(?:max[_ -]total[_ -](?:num[_ -])?tokens|kv[ _-]?cache(?: pool)?(?: size| capacity"
            r"| tokens?)|kv pool|token capacity|tokens? in the kv"
            r"|kv[ _-]?cache ?(?:容量|大小|空间))"
            # a question of how much it holds: `means the KV cache total is 2M?`
            r"|(?:max[_ -]total[_ -](?:num[_ -])?tokens|kv[ _-]?cache|kv pool)"
            r"(?:[^.?!\n]|\.(?=\d)){0,50}?(?:\btotal\b|capacity|\bsize\b|\bhold|how many"
            r"|\bmeans?\b)(?:[^.?!\n]|\.(?=\d)){0,30}\?",
            re.IGNORECASE,
        ),
        (
            "small",
            "less",
            "fewer",
            "shrink",
            "shrank",
            "shrunk",
            "dropped",
            "decreas",
            "increas",
            "enlarg",
            "bigger",
            "larger",
            "more",
            "grow",
            "why",
            "how",
            "太小",
            "变小",
            "减少",
            "增加",
            "增大",
            "更大",
            "为什么",
            "如何",
            "怎么",
            # the question of what it holds ends in `?`, but so does every progress bar's
            # `?it/s`: its words are the question's own
            "total",
            "capacity",
            "size",
            "hold",
            "mean",
        ),
        Family.REPORTER,
        "the KV pool's size asked about in prose, with no failure (what sizes it: memledger"
        ".sglang.lifecycle MENTIONS pool_size; v0.5.8 model_runner_kv_cache_mixin.py:138-144)",
        "why is my max_total_num_tokens so small on an H100?",
        kind="reported",
        values={"mention": "pool_size"},
    ),
    ErrorText(
        "said_mamba",
        # a hybrid model's Mamba (SSM / linear-attention) state pool, or its size setting
        Regex(r"(?<![\w.])(?:[Mm]amba|MAMBA)(?![\w=])|max[-_]mamba[-_]cache[-_]size"),
        ("amba", "AMBA", "mamba"),
        Family.REPORTER,
        "a hybrid model's Mamba state pool named in prose or flags (sized beside the KV pool: "
        "memledger.sglang.lifecycle MENTIONS)",
        "OOM when memory is not enough for 512 max_mamba_cache_size",
        kind="reported",
        values={"mention": "mamba"},
    ),
    ErrorText(
        "said_released",
        # an RL framework's call that hands SGLang's memory to the trainer (the HTTP endpoint,
        # the engine method), named in prose or a log; or said in words of the engine: `sglang
        # won't offload when rollout is done`, `offload the rollout engine`, `SGLang did not
        # release its memory` (not a flag's part, `--cpu-offload-gb`, nor an offload to the CPU)
        Regex(
            r"release_memory_occupation|release memory occupation"
            # SGLang's cache flush an RL framework calls after a rollout (verl's free_cache_engine)
            r"|(?<!\w)flush_cache\b|\bfree_cache_engine\b"
            r"|(?:sglang|SGLang|SGLANG|rollout engine|inference engine)\W{1,3}"
            r"(?:[A-Za-z']+\W{1,3}){0,3}?(?<![-_])(?:offload|release)(?:s|d|ed|ing)?\b(?![-_])"
            r"(?!\W+(?:\w+\W+){0,3}(?:to|on|onto)\W+(?:the\W+)?(?:cpu|CPU|host)\b|\W+notes?\b)"
            r"|(?<![-_\w])(?:offload|release)(?:s|d|ed|ing)?\W+(?:the\W+)?"
            r"(?:sglang|SGLang|SGLANG|rollout engine|inference engine)\b"
        ),
        (
            "release_memory_occupation",
            "release memory occupation",
            "flush_cache",
            "free_cache_engine",
            "offload",
            "release",
        ),
        Family.REPORTER,
        "SGLang's release of its GPU memory for a colocated trainer named in prose (v0.5.8 "
        "managers/scheduler_update_weights_mixin.py:121-146: memledger.sglang.lifecycle "
        "MENTIONS)",
        "the trainer OOMs right after /release_memory_occupation returns",
        kind="reported",
        values={"mention": "released"},
    ),
    ErrorText(
        "said_resume",
        # an RL framework's cycle around SGLang: resume after the trainer's step, weight updates,
        # wake_up (verl's and others' name for resuming); the release itself is said_released
        Regex(
            r"\b[Rr]esum(?:e|ed|es|ing)\b|resume_memory_occupation"
            r"|update_weights\w*|updating (?:the )?weights|update weights"
            r"|\bwake[_ ]up\b|\bwakes up\b|\bwaking up\b|\bonload(?:ing|ed)?\b"
            # the weight sync between rollouts as people name it (in Chinese: said_resume_zh)
            r"|weight update|weights update|weight sync|weights sync|sync weights|syncing weights"
            r"|sync the weights|syncing the weights|weight synchroni|weights synchroni",
            re.I,
        ),
        (
            "esum",
            "resume_memory_occupation",
            "update_weights",
            "updating ",
            "update weights",
            "wake",
            "waking up",
            "onload",
            "weight update",
            "weights update",
            "weight sync",
            "weights sync",
            "sync weights",
            "syncing weights",
            "sync the weights",
            "syncing the weights",
            "weight synchroni",
            "weights synchroni",
        ),
        Family.REPORTER,
        "what people write when it failed as an RL framework resumed SGLang's memory or updated "
        "its weights (the resume stage: memledger.sglang.lifecycle MENTIONS)",
        "OOM when resuming after the actor update",
        kind="reported",
        values={"mention": "resume"},
    ),
    ErrorText(
        "said_dist_init",
        # `during NCCL init`, `at the torch distributed initialization`, `in init_torch_distributed`
        Regex(
            r"(?:during|while|at|in|on) (?:the )?"
            r"(?:NCCL init|nccl init|torch distributed init|distributed init)"
            r"(?:iali[sz]ation|iali[sz]ing)?\b|init_torch_distributed",
            re.I,
        ),
        ("NCCL init", "nccl init", "distributed init", "init_torch_distributed"),
        Family.REPORTER,
        "what people write when it failed at distributed init (the first stage: "
        "memledger.sglang.lifecycle MENTIONS)",
        "CUDA OOM during NCCL init on rank 3",
        kind="reported",
        values={"mention": "dist_init"},
    ),
    ErrorText(
        "said_autotune",
        # `during FlashInfer autotune`, `while DeepGEMM JIT compiling`, `in the kernel warmup`
        Regex(
            r"(?:during|while|in|at) (?:the )?(?:FlashInfer |flashinfer |DeepGEMM |deep_gemm |"
            r"DeepGemm |kernel |Triton |triton )?(?:autotun|JIT compil|JIT warm|kernel warm)\w*",
            re.I,
        ),
        ("autotun", "JIT compil", "JIT warm", "kernel warm"),
        Family.REPORTER,
        "what people write when it failed while kernels were tuned or compiled before the graphs "
        "(memledger.sglang.lifecycle MENTIONS)",
        "OOM during FlashInfer autotune on B200",
        kind="reported",
        values={"mention": "autotune"},
    ),
    ErrorText(
        "said_torch_compile",
        # `during torch.compile`, `while torch compiling`: SGLang compiles inside graph capture
        Regex(
            r"(?:during|while|in|at) (?:the )?(?:torch\.compil|torch_compil|torch compil)\w*",
            re.I,
        ),
        ("torch.compil", "torch_compil", "torch compil"),
        Family.REPORTER,
        "what people write when it failed in torch.compile (inside CUDA graph capture: "
        "memledger.sglang.lifecycle MENTIONS)",
        "the server OOMs during torch.compile with --enable-torch-compile",
        kind="reported",
        values={"mention": "torch_compile"},
    ),
    ErrorText(
        "said_draft_startup",
        # `while loading the draft model`, `during the draft model's load`, `when capturing the
        # EAGLE draft's graphs`: a preposition before the draft (its name alone is said_speculative)
        Regex(
            r"(?:during|while|when|at|in) (?:loading |capturing |starting )?"
            r"(?:the draft |the EAGLE|the eagle|the MTP |the NextN )3?\s?(?:draft )?"
            r"(?:model|worker|weights|graphs?|load|pools?)"
            # the draft's own KV allocation named: `(memory_pool.py, draft KV buffer)`, `the
            # draft's kv pool`
            r"|(?:draft kv|draft's kv)[ _-]?(?:buffer|pool|cache)",
            re.I,
        ),
        (
            "the draft ",
            "the EAGLE",
            "the eagle",
            "the MTP ",
            "the NextN ",
            "draft kv",
            "draft's kv",
        ),
        Family.REPORTER,
        "what people write when it failed in the speculative draft worker's startup (the draft "
        "stage: memledger.sglang.lifecycle MENTIONS)",
        "OOM while loading the draft weights on the second card",
        kind="reported",
        values={"mention": "draft_startup"},
    ),
    ErrorText(
        "said_dflash_dp_attention",
        # a DFLASH/DSpark draft and DP attention named in one line, in prose or flags: `GLM-5.2 +
        # DSpark draft, --tp-size 8 --dp-size 8 --enable-dp-attention`
        Regex(
            r"\b(?:dflash|dspark)\b[^\n]{0,200}?(?:enable-dp-attention|dp[ _-]attention)"
            r"|(?:enable-dp-attention|dp[ _-]attention)[^\n]{0,200}?\b(?:dflash|dspark)\b",
            re.I,
        ),
        ("dflash", "dspark"),
        Family.REPORTER,
        "what people write of a DFLASH/DSPARK draft served with DP attention (the draft's KV "
        "budget at the global TP size: memledger.sglang.lifecycle MENTIONS dflash_dp_attention, "
        "sglang#38202, PR #39225)",
        "Kimi-K3 + DSpark draft with --enable-dp-attention: CUDA OOM at boot",
        kind="reported",
        values={"mention": "dflash_dp_attention"},
    ),
    ErrorText(
        "said_kv_allocation",
        # `when allocating the KV cache`, `KV cache allocation`, `creating the kv cache`; not
        # SGLang's own `KV Cache is allocated.` line (it has its own line kind)
        Regex(
            r"(?:allocating |allocate |initializing |initialising |creating )(?:the )?"
            r"(?:kv cache|kv_cache|kv-cache|kvcache)"
            r"|(?:kv |kv_|kv-|kv)(?:cache allocation|cache initiali[sz]ation|cache creation)",
            re.I,
        ),
        (
            "allocating ",
            "allocate ",
            "initializing ",
            "initialising ",
            "creating ",
            "cache allocation",
            "cache initiali",
            "cache creation",
        ),
        Family.REPORTER,
        "what people write when it failed allocating the KV cache (the memory-pool stage: "
        "memledger.sglang.lifecycle MENTIONS)",
        "CUDA OOM when allocating the KV cache",
        kind="reported",
        values={"mention": "kv_allocation"},
    ),
    ErrorText(
        "said_growing",
        # GPU memory said to grow while serving: `memory usage continued to increase`, `VRAM keeps
        # growing`, `a CUDA memory leak`, `显存缓慢上涨`; not SGLang's own `memory leak detected!`
        # nor the KV pool's `token usage` filling up (its pool is sized once)
        Regex(
            r"(?:memory|VRAM|(?<!token )(?<!cache )usage)[^.\n]{0,40}?"
            r"(?:keeps?|kept|continu(?:es|ed|ing)|goes on|"
            r"went on)\s+(?:to\s+)?(?:slowly\s+|steadily\s+|gradually\s+)?"
            r"(?:increas|grow|ris|climb|creep)\w*"
            r"|(?:memory|VRAM)[^.\n]{0,30}?(?:increas|grow|ris|climb|creep)\w* "
            r"(?:over time|steadily|slowly|gradually|continuously)"
            # the adverb before the verb (`memory usage is gradually increasing`)
            r"|(?:memory|VRAM)[^.\n]{0,30}?(?:steadily|slowly|gradually|continuously|constantly)"
            r" (?:increas|grow|ris|climb|creep)\w*"
            r"|(?:GPU |CUDA |VRAM |video )memory leak(?! detected)|\bVRAM leak"
            # a cache or buffer of SGLang's said to keep growing until the OOM (`the mask cache
            # will keep increasing and finally cause OOM`); not the KV/radix cache (kv_held)
            r"|(?<!kv )(?<!radix )(?<!prefix )\b(?:cache|buffer|tensor)s?\b[^.\n]{0,40}?"
            r"(?:keeps?|kept|continu(?:es|ed|ing))\s+(?:on\s+)?(?:increas|grow)\w*"
            r"[^.\n]{0,60}?(?:\bOOM|out of memory)"
            r"|显存(?:缓慢|持续|逐渐|不断|一直)(?:上涨|增长|增加|上升)|显存泄[漏露]"
            # the readings typed (`memory utilization increased from 73.16 GiB to 77.06 GiB`,
            # `VRAM went from 60 to 75 GB`), not a fraction (`memory fraction from 0.8 to 0.9`)
            r"|(?:memory|VRAM)(?:(?!fraction|static)[^.\n]){0,40}?"
            r"(?:increased from|increases from|grew from|grows from|rose from|rises from"
            r"|climbed from|went up from|goes up from|jumped from) ~?\d[\d.,]*"
            r" ?(?:GiB|GB|G|MiB|MB|%)? to ~?\d[\d.,]* ?(?:GiB|GB|G|MiB|MB|%)"
            r"|显存(?:占用|使用)?从 ?\d[\d.]* ?(?:GiB|GB|G|%)? ?(?:涨|增长|增加|上升)到"
            # and that it stayed after the load was gone (`did not return to its initial state`)
            r"|memory (?:usage |utilization )?(?:did not|didn't|does not|doesn't|never|has not"
            r"|hasn't) (?:\w+ )?(?:return|go back|come back|drop back|fall back)(?:ed)? to (?:its |"
            r"the )?(?:initial|original|baseline)",
            re.I,
        ),
        (
            "keep",
            "kept",
            "continu",
            "goes on",
            "went on",
            "over time",
            "steadily",
            "slowly",
            "gradually",
            "continuously",
            "constantly",
            "memory leak",
            "VRAM leak",
            "显存",
            "increased from",
            "increases from",
            "grew from",
            "grows from",
            "rose from",
            "rises from",
            "climbed from",
            "went up from",
            "goes up from",
            "jumped from",
            "initial",
            "original",
            "baseline",
        ),
        Family.REPORTER,
        "what people write when GPU memory grew while serving until it ran out (a leak, not the "
        "pools sized at startup: memledger.sglang.lifecycle MENTIONS)",
        "GPU memory keeps increasing with every image request until it OOMs",
        kind="reported",
        values={"mention": "growing"},
    ),
    ErrorText(
        "said_hicache",
        # HiCache named in prose or flags: `hierarchical cache`, `HiCache`, `--hicache-ratio`;
        # not SGLang's own `Allocating X GB host memory for hierarchical KV cache.` (v0.5.8
        # mem_cache/memory_pool_host.py:180), a line of a healthy start
        Regex(r"(?<!memory for )hierarchical(?:[ _-]kv)?[ _-]cach\w*|\bhicache\b", re.I),
        ("hierarchical", "hicache"),
        Family.REPORTER,
        "HiCache (SGLang's host-RAM tier behind the GPU KV pool) named in prose or flags "
        "(memledger.sglang.lifecycle MENTIONS)",
        "with --enable-hierarchical-cache the server OOMs at startup",
        kind="reported",
        values={"mention": "hicache"},
    ),
    ErrorText(
        "said_memory_saver_expandable",
        # a reporter naming PyTorch's expandable segments beside the release SGLang makes through
        # torch_memory_saver, on one line: not the allocator's own advice in an OOM text (`try
        # setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation`)
        Regex(
            r"(?:torch_memory_saver|memory[ _-]saver|TorchMemorySaver|release_memory_occupation"
            r"|offload|pause|sleep)[^\n]{0,160}?expandable_segments(?!:True to avoid)"
            r"|expandable_segments(?!:True to avoid)[^\n]{0,160}?(?:torch_memory_saver"
            r"|memory[ _-]saver|TorchMemorySaver|release_memory_occupation|offload|pause|sleep)",
            re.I,
        ),
        ("expandable_segments",),
        Family.REPORTER,
        "PyTorch's expandable segments named beside torch_memory_saver's release (its refusal is "
        "memledger.sglang.failure_rules CRASH_CAUSES memory_saver_expandable; "
        "memledger.sglang.lifecycle MENTIONS)",
        "with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the sglang offload frees nothing",
        kind="reported",
        values={"mention": "memory_saver_expandable"},
    ),
    ErrorText(
        "nccl_alloc_failed",
        # NCCL's own warning when its buffer allocation fails (cudaMalloc or cuMem, outside
        # PyTorch's caching allocator); `Cuda failure 'out of memory'` is read as an OOM text
        Regex(r"Failed to CUDA (?:calloc(?: async)?|malloc) \d+ bytes"),
        ("Failed to CUDA ",),
        Family.NCCL,
        "NCCL v2.21.5-1 src/include/alloc.h:161, :186, :206 (ncclCudaMalloc, ncclCudaCalloc, "
        "ncclCudaCallocAsync); v2.29.7-1 :462, :493, :520",
        "host-1:4242:4300 [0] include/alloc.h:186 NCCL WARN Failed to CUDA calloc 6291456 bytes",
        kind="reported",
        outcome=Outcome.OOM,
        values={"mention": "nccl_alloc"},
    ),
    ErrorText(
        "said_nccl_alloc",
        # NCCL's allocation failure as people write it: `nccl failed to calloc`, `NCCL ran out
        # of memory`, `NCCL OOM`
        Regex(
            r"\bnccl\b(?! WARN)[^\n]{0,60}?"
            r"(?:failed to (?:cuda )?(?:calloc|malloc)|out of (?:GPU )?memory|\boom\b)",
            re.I,
        ),
        # what follows `nccl` in every match: `nccl` alone sits on SGLang's own NCCL lines,
        # which would all go through the outcome readers
        ("calloc", "malloc", "out of ", "oom"),
        Family.REPORTER,
        "NCCL's buffer allocation failing, said in prose (the nccl_alloc_failed entry: "
        "memledger.sglang.lifecycle MENTIONS)",
        "this is an ad-hoc fix for the nccl failed to calloc error",
        kind="reported",
        outcome=Outcome.OOM,
        values={"mention": "nccl_alloc"},
    ),
    ErrorText(
        "said_shared_gpu",
        # two servers (or a server and another engine) on one GPU: `both instances on the same
        # GPU`, `Prefill (mem-fraction default 0.88) left only 10.8 GB free on GPU 0`: one
        # server's fraction left the other too little
        re.compile(
            r"(?:two|2|both|multiple|several) (?:\w+ ){0,2}?(?:servers|instances|engines|models"
            r"|workers|processes) (?:\w+ ){0,2}?(?:on|in|share|sharing) (?:the )?"
            r"(?:same GPU|same card|same device|one GPU|one card|single GPU|single card)"
            r"|(?:mem[-_ ]fraction|default \d?\.\d+)[^\n]{0,60}?\b(?:left only|left just) "
            r"~?\d+(?:\.\d+)? ?Gi?B"
            r"|\bleft (?:only |just )?~?\d+(?:\.\d+)? ?Gi?B (?:free on GPU|free on cuda:?) ?\d",
            re.I,
        ),
        (
            "same gpu",
            "same card",
            "same device",
            "one gpu",
            "one card",
            "single gpu",
            "single card",
            "left only",
            "left just",
            "free on gpu",
            "free on cuda",
        ),
        Family.REPORTER,
        "two servers on one GPU, said in prose (memledger.sglang.lifecycle MENTIONS)",
        "Prefill (mem-fraction default 0.88) left only 10.8 GB free on GPU 0",
        kind="reported",
        values={"mention": "shared_gpu"},
    ),
    ErrorText(
        "said_version_regression",
        # a library's version named as the cause: `flashinfer PR #994 and everything after
        # leads to OOM`, `OOM since upgrading to sglang 0.4.6`, `downgrading flashinfer to 0.2.5
        # fixed it`
        re.compile(
            rf"{_LIBRARY}\W[^\n]{{0,60}}?(?:and everything after|and anything after|and all after"
            r"|or later\b|and later\b|or newer\b|and newer\b|\bonwards?\b)"
            r"|(?:since|after) (?:upgrading|updating|bumping) (?:\w+ ){0,2}?"
            rf"(?:to )?(?:{_LIBRARY}|v?\d+\.\d)"
            r"|(?:downgrad\w*|pinn(?:ed|ing)|revert\w*) (?:\w+ ){0,2}?(?:to )?"
            rf"(?:{_LIBRARY}|v?\d+\.\d)",
            re.I,
        ),
        (
            "everything after",
            "anything after",
            "all after",
            "or later",
            "and later",
            "or newer",
            "and newer",
            "onward",
            "upgrading",
            "updating",
            "bumping",
            "downgrad",
            "pinn",
            "revert",
        ),
        Family.REPORTER,
        "a library's version named as the cause of an OOM (memledger.sglang.lifecycle MENTIONS)",
        "flashinfer PR #994 and everything after leads to OOM, the commit before works",
        kind="reported",
        values={"mention": "version_regression"},
    ),
    ErrorText(
        "aiter_reserve_skipped",
        # SGLang's own warning when a given fraction is used as-is on aiter: the reserve is off
        Regex(r"normally scales mem_fraction_static by 0\.85 to reserve non-static workspace"),
        ("normally scales mem_fraction_static",),
        Family.SGLANG_ADJUSTMENT,
        "v0.5.23 arg_groups/attention_hook.py:255-263 (under "
        "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION, environ.py)",
        "attention_backend=aiter with context_len=131072 (>8192) normally scales "
        "mem_fraction_static by 0.85 to reserve non-static workspace, but "
        "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is set, so mem_fraction_static=0.900 is used "
        "as-is.",
        kind="reported",
        values={"mention": "aiter_reserve"},
    ),
    ErrorText(
        "said_aiter_reserve",
        # the aiter attention backend's fraction reserve named in words: `the aiter long-context
        # reserve`, `aiter scales mem_fraction_static by 0.85`, `the derate for aiter`; not a
        # launch command that only names both (`--attention-backend aiter --mem-fraction-static`)
        re.compile(
            r"\baiter\b[^\n]{0,120}?(?:\breserve|\bderate|\b(?:scaled by|scales by|scaled to"
            r"|scales mem|scaling mem|scaled mem)\b)"
            r"|(?:\breserve|\bderate|\b(?:scaled by|scales by|scaled to)\b)[^\n]{0,120}?\baiter\b",
            re.I,
        ),
        # what follows or leads `aiter` in every match: `aiter` alone is on every line the aiter
        # library logs on ROCm, which would all go through the readers
        (
            "reserve",
            "derate",
            "scaled by",
            "scales by",
            "scaled to",
            "scales mem",
            "scaling mem",
            "scaled mem",
        ),
        Family.REPORTER,
        "the aiter attention backend's long-context fraction reserve (memledger.sglang."
        "fraction_rules mfs_aiter_runner, mfs_aiter_args; memledger.sglang.lifecycle MENTIONS), "
        "as people name it (SGLang's own warning: aiter_reserve_skipped)",
        "on MI355 the aiter long-context reserve is load-bearing: without it the run OOMs",
        kind="reported",
        values={"mention": "aiter_reserve"},
    ),
    ErrorText(
        "said_kv_held",
        # a reporter saying finished requests keep their KV: `do not release KV cache`, `KV cache
        # is not freed`, `token usage keeps increasing`, `KV cache 不释放`
        Regex(
            r"(?:not|n't|never)\s+(?:properly\s+|be\s+|being\s+|been\s+|get\s+)?"
            r"(?:release|reclaim)\w*\s+(?:the\s+|its\s+|their\s+)?kv[ _-]?cache"
            r"|kv[ _-]?cache(?: memory)?\s+(?:is\s+|was\s+|are\s+|were\s+)?(?:not|never)\s+"
            r"(?:being\s+|been\s+)?(?:released|freed|reclaimed)"
            r"|token usage[^.\n]{0,30}?(?:accumulat|keeps? (?:increas|grow|ris|climb))"
            r"|kv ?cache[^\n]{0,4}(?:不释放|没有释放|未释放|没释放)",
            re.I,
        ),
        ("releas", "reclaim", "freed", "accumulat", "keep", "释放"),
        Family.REPORTER,
        "what people write when the KV pool stays full after requests finish (the radix cache's "
        "keeping, not a leak: memledger.sglang.lifecycle MENTIONS)",
        "requests do not properly release KV cache memory after they complete",
        kind="reported",
        values={"mention": "kv_held"},
    ),
    ErrorText(
        "said_double_counted",
        # a reporter's reading of SGLang's arithmetic: `the peers' pools are subtracted twice`,
        # `double-counting`, `charged twice`; not `loaded twice` (the draft-is-target family)
        Regex(
            r"(?:counted|charged|subtracted|deducted|booked)\s+twice|double[- ]?count\w*"
            r"|重复(?:计算|扣除)",
            re.I,
        ),
        ("twice", "double", "重复"),
        Family.REPORTER,
        "what people write when SGLang's own memory arithmetic counts something twice "
        "(memledger.sglang.lifecycle MENTIONS)",
        "the guard's budget has the peers' pools subtracted twice",
        kind="reported",
        values={"mention": "double_counted"},
    ),
    ErrorText(
        "mamba_caps_requests",
        # SGLang's own warning when the mamba state slots allow fewer requests than asked
        Regex(r"max_running_requests is capped to \d+ by the mamba state cache"),
        ("by the mamba state cache",),
        Family.SGLANG_POOL,
        "v0.5.17 mem_cache/kv_cache_configurator.py:1740-1749, v0.5.23 :3139-3149",
        "max_running_requests is capped to 12 by the mamba state cache (max_mamba_cache_size=60, "
        "5 state slots per request). To raise it: increase --mamba-full-memory-ratio or "
        "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16.",
        kind="reported",
        values={"mention": "mamba_capped"},
    ),
    ErrorText(
        "pd_request_too_long",
        # a PD worker refusing a request longer than its admission bound (a log line, not a
        # failure of the server)
        Regex(r"exceeds the maximum number of tokens: \d+ > \d+"),
        ("exceeds the maximum number of tokens",),
        Family.SGLANG_POOL,
        "v0.5.8 disaggregation/prefill.py:212-218, v0.5.23 disaggregation/prefill.py:470, "
        "decode.py:983",
        "Request 5d1c exceeds the maximum number of tokens: 40960 > 32768",
        kind="reported",
        values={"mention": "pd_admission_cap"},
    ),
    ErrorText(
        "pd_decode_swa_prealloc",
        # a PD decode worker refusing a request whose SWA tail needs more tokens than its SWA pool
        # holds (a log line a request, not a failure of the server)
        Regex(r"requires too many SWA KV tokens for decode preallocation: \d+ > \d+"),
        ("requires too many SWA KV tokens",),
        Family.SGLANG_POOL,
        "v0.5.17 disaggregation/decode.py:667, v0.5.20 :799, v0.5.21 :919, v0.5.22 :966, "
        "v0.5.23 :990",
        "Request 3f2a requires too many SWA KV tokens for decode preallocation: 70144 > 65536",
        kind="reported",
        values={"mention": "pd_admission_cap"},
    ),
    ErrorText(
        "said_swa_cap",
        # the variable quoted from SGLang's code or a debug print: the SWA pool's token count
        # (not SGLang's own `SWA ring: swa_max_total_num_tokens A -> B` line: adjustments.py)
        Regex(r"(?<!SWA ring: )\bswa_max_total_num_tokens\b"),
        ("swa_max_total_num_tokens",),
        Family.REPORTER,
        "SGLang's SWA pool size quoted from its code (v0.5.8 disaggregation/prefill.py:108-114: "
        "memledger.sglang.lifecycle MENTIONS)",
        "the prefill node takes min(max_total_num_tokens, swa_max_total_num_tokens)",
        kind="reported",
        values={"mention": "pd_admission_cap"},
    ),
    ErrorText(
        "said_other_process",
        Regex(
            r"(?:orphan(?:ed)?|zombie|leftover) (?:\w+ ){0,2}process(?:es)?"
            r"|an?other (?:\w+ ){0,2}process(?:es)?"
            # memory a process that ended left behind: `the GPU still held ~90GB`, `memory is
            # still occupied after the kill`, `held by the crashed container`
            r"|(?<!sglang's )(?<!engine's )(?<!rollout's )(?:GPU|memory|VRAM|card|device)s?\W{1,3}"
            r"(?:\w+ ){0,2}?(?:is |was |are |were )?still "
            r"(?:held|holds|holding|occupied|occupies|allocated|reserved|in use)\b"
            r"|(?:held by|occupied by|kept by|taken by) (?:the |an? )?"
            r"(?:previous|earlier|old|dead|killed|crashed|stale|exited|stopped) "
            r"(?:\w+ ){0,2}?(?:process|container|run|server"
            r"|instance|job)",
            re.I,
        ),
        (
            "orphan",
            "zombie",
            "leftover",
            "other ",
            "still ",
            "held by",
            "occupied by",
            "kept by",
            "taken by",
        ),
        Family.REPORTER,
        "what people write when another process holds the GPU, or one that ended still does",
        "the GPU memory is still held by the orphan process",
        kind="reported",
        values={"mention": "other_process"},
    ),
    ErrorText(
        "said_wsl",
        Regex(r"\bWSL ?2?\b|Windows Subsystem for Linux", re.I),
        ("WSL", "wsl", "Wsl", "Windows Subsystem"),
        Family.REPORTER,
        "what people write when SGLang runs under WSL2 (memledger.sglang.lifecycle MENTIONS "
        "wsl_driver)",
        "SGLang 0.5.10 on an RTX PRO 6000 under WSL2 Ubuntu 22.04 cannot allocate the pool",
        kind="reported",
        values={"mention": "wsl_driver"},
    ),
    ErrorText(
        "said_serving",
        Regex(
            r"(?:concurrent|parallel|multiple|many) (?:\w+ ){0,2}(?:requests|prompts|inputs)"
            r"|\d+k?[- ]length input|bench_serving|(?:during|while) (?:serving|inference|decoding)"
            r"|(?:during prefill|during the prefill|during decode|during the decode"
            r"|while prefilling|in the prefill|in the decode|at prefill|at decode)\b"
            r"|under (?:heavy |high |some )?(?:load|traffic|concurrency)"
            r"|\bmid[- ](?:traffic|run|benchmark|serving|generation|decode)\b"
            r"|(?:at|on|after|with) the (?:first request|first query|first prompt|1st request)"
            r"|after (?:a few|several|some|many|\d+) (?:hours|minutes|days)"
            r"|(?:during|while|in) (?:the )?(?:generation|rollouts?)\b"
            # a stage named with words between (`during long-context prefill`), a title's
            # `Decode OOM`, a load test, a request arriving, time served before it failed
            r"|(?:during|while) (?:the |a )?(?:[\w-]+ ){1,2}(?:prefill|decode|inference)\b"
            r"|prefill oom|decode oom|prefill out of memory|decode out of memory"
            r"|stress test|stress-test|load test|load-test|\bbenchmark(?:ing|s)?\b"
            r"|high concurrency"
            r"|(?:coming|long-context|long context) (?:\w+ ){0,2}requests?\b"
            r"|(?:long-context|long context) prefill"
            r"|when generating|while generating|long inputs?|long prompts?|long sequences?"
            r"|large batch(?:es)?\b|high qps\b"
            r"|(?:completing|processing) (?:all |the )?\d+ (?:prompts|requests)"
            r"|(?:after running|after serving) for (?:about |around |over )?"
            r"(?:a|an|one|half an|\d+) (?:hours?|minutes?|days?)",
            re.I,
        ),
        (
            "concurrent",
            "parallel",
            "multiple",
            "many",
            "length input",
            "bench_serving",
            "serving",
            "inference",
            "decoding",
            "during prefill",
            "during the prefill",
            "during decode",
            "during the decode",
            "while prefilling",
            "in the prefill",
            "in the decode",
            "at prefill",
            "at decode",
            "under ",
            "mid",
            "first request",
            "first query",
            "first prompt",
            "1st request",
            "hours",
            "minutes",
            "days",
            "generation",
            "rollout",
            "during",
            "while",
            "prefill oom",
            "decode oom",
            "prefill out of memory",
            "decode out of memory",
            "stress test",
            "stress-test",
            "load test",
            "load-test",
            "benchmark",
            "high concurrency",
            "coming",
            "long-context",
            "long context",
            "completing",
            "processing",
            "generating",
            "long input",
            "long prompt",
            "long sequence",
            "large batch",
            "high qps",
            "after running",
            "after serving",
        ),
        Family.REPORTER,
        "what people write when the server was already serving (issue and forum titles: "
        "`Decode OOM ...`, `OOM during long-context prefill`, `OOM during stress testing`, `... "
        "for the coming request`, `OOM after running for about an hour`)",
        "OOM for concurrent long requests",
        kind="reported",
        values={"mention": "serving"},
    ),
    ErrorText(
        "said_growth",
        # memory that grows request after request until it runs out: a leak or fragmentation
        # while serving, not a pool SGLang sized at startup
        Regex(
            r"memory (?:\w+ ){0,5}?(?:keeps|kept|continues to|continued to|continuously"
            r"|steadily|slowly) (?:increas|grow|ris)\w*"
            r"|(?:continuous|steady) (?:increase|growth|rise) in (?:\w+ ){0,2}memory"
            r"|memory leak",
            re.I,
        ),
        (
            "keeps",
            "kept",
            "continues to",
            "continued to",
            "continuously",
            "steadily",
            "slowly",
            "continuous",
            "steady",
            "memory leak",
        ),
        Family.REPORTER,
        "what people write when GPU memory grows while serving until it runs out (SGLang's "
        "tracking issue sgl-project/sglang#9365: memory grows with each request to a VLM until "
        "an OOM, in the activations and temporaries, not the static pools)",
        "the GPU memory keeps increasing until it gets cuda out of memory",
        kind="reported",
        values={"mention": "serving"},
    ),
    # Chinese reporters' phase words (a CJK run has no word boundary: whole words here)
    ErrorText(
        "said_serving_zh",
        Regex(
            r"推理(?:时|过程|阶段|中|的时候|服务)|推理显存|预填充|解码(?:阶段|时)|高并发|并发(?:请求|输入)"
            r"|批量(?:请求|输入|推理)|多轮对话|长上下文|长文本|压测|请求(?:时|服务|过程)"
            # GPU memory that keeps growing while serving (the said_growth row in English)
            r"|显存(?:缓慢|持续|不断|一直)(?:上涨|增长|增加|升高)"
        ),
        (
            "推理",
            "预填充",
            "解码",
            "并发",
            "批量",
            "多轮对话",
            "长上下文",
            "长文本",
            "压测",
            "请求",
            "显存",
        ),
        Family.REPORTER,
        "what Chinese reporters write when the server was already serving: 推理时 'at "
        "inference', 预填充/解码 'prefill/decode' (SGLang's own Chinese FAQ uses them), 并发 "
        "'concurrency', 长上下文 'long context', 请求 'request', 显存持续上涨 'GPU memory keeps "
        "rising'",
        "单次推理正常，但高并发请求时显存不足",
        kind="reported",
        values={"mention": "serving"},
    ),
    ErrorText(
        "said_loading_zh",
        Regex(r"(?:加载|载入|load|Load|LOAD)\s?(?:模型|权重)|(?:模型|权重)(?:加载|载入)|加载时"),
        ("模型", "权重", "加载"),
        Family.REPORTER,
        "what Chinese reporters write when it failed while the weights loaded: 加载模型 / 加载权重 "
        "'loading the model / the weights', 模型加载 'model loading', 加载时 'while loading'",
        "加载权重时显存不足",
        kind="reported",
        values={"mention": "loading"},
    ),
    ErrorText(
        "said_resume_zh",
        Regex(r"权重更新|权重同步|更新权重|同步权重"),
        ("权重更新", "权重同步", "更新权重", "同步权重"),
        Family.REPORTER,
        "what Chinese reporters write when it failed as an RL framework updated SGLang's weights: "
        "权重更新 'weight update', 同步权重 'sync weights' (the resume stage: "
        "memledger.sglang.lifecycle MENTIONS)",
        "同步权重时显存不足",
        kind="reported",
        values={"mention": "resume"},
    ),
    ErrorText(
        "said_capture_zh",
        Regex(
            r"捕获\s?(?:CUDA|cuda|Cuda)\s?(?:图|graph|Graph)|(?:CUDA|cuda|Cuda)\s?(?:图|graph|Graph)\s?捕获"
            r"|图捕获"
        ),
        ("捕获",),
        Family.REPORTER,
        "what Chinese reporters write when it failed while SGLang captured its CUDA graphs: "
        "捕获CUDA图 'capturing the CUDA graph'",
        "捕获CUDA图时显存溢出",
        kind="reported",
        values={"mention": "capture"},
    ),
    # a framework that embeds SGLang, named anywhere in the paste (a frame's path, a warning, a
    # flag): memledger.input.error_texts reads which one (memledger.sglang.frameworks)
    ErrorText(
        "framework_named",
        Regex("|".join(re.escape(word) for word in FRAMEWORK_WORDS)),
        FRAMEWORK_WORDS,
        Family.REPORTER,
        "memledger.sglang.frameworks (each framework's source)",
        '  File "/home/u/verl/verl/trainer/main_ppo.py", line 54, in main',
        kind="reported",
    ),
    # ---- a Python traceback's parts (kind traceback; memledger.input.error_texts joins them)
    ErrorText(
        "traceback_head",
        # `Traceback (most recent` alone: a wrap cut the head (`call last):` is on the next line)
        Regex(r"Traceback \(most recent(?:\s+call)?(?:\s+last\):?)?"),
        ("Traceback",),
        Family.PYTHON,
        "CPython Python/traceback.c",
        "Traceback (most recent call last):",
        kind="traceback",
    ),
    ErrorText(
        "traceback_frame",
        Regex(r'^\s*File "(?P<path>[^"]+)", line (?P<lineno>\d+), in (?P<func>[\w<>.]+)'),
        ('File "',),
        Family.PYTHON,
        "CPython Python/traceback.c",
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2990, '
        "in run_scheduler_process",
        kind="traceback",
        wrap_words=('", line ', ", in "),
    ),
    ErrorText(
        "exception_line",
        # a bare `Exception:` too: SGLang raises `Exception("Capture cuda graph failed: ...")`
        # (v0.5.8 model_executor/cuda_graph_runner.py:460-470); and the runtime's own error line
        # c10 prints as a message's first line or a watchdog's next line (`HIP error: ...`)
        Regex(
            r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?"
            r"(?:Error|Exception|Interrupt|Exit|OutOfResources)|CUDA error|HIP error)"
            r"(?::\s*(?P<message>.*))?$"
        ),
        ("Error", "Exception", "Interrupt", "Exit", "OutOfResources", "CUDA error", "HIP error"),
        Family.PYTHON,
        "CPython Python/traceback.c; torch c10/cuda/CUDAException.cpp (`CUDA error: ` + the "
        "runtime's error string; `HIP error: ` on ROCm builds)",
        "torch.OutOfMemoryError: CUDA out of memory.",
        kind="traceback",
        strip=True,
    ),
    ErrorText(
        "req_to_token_code",
        Regex(r"ReqToTokenPool\(|self\.req_to_token\s*="),
        ("ReqToTokenPool(", "self.req_to_token"),
        Family.PYTHON,
        "v0.5.8 mem_cache/memory_pool.py:136, model_executor/model_runner_kv_cache_mixin.py:384",
        "    self.req_to_token = torch.zeros(",
        kind="traceback",
        values={"pool": "req_to_token"},
    ),
    # a known error text read wherever it stands, quoted mid-sentence or a library's own line
    # (memledger.sglang.failure_rules CRASH_CAUSES `standalone`, each with its words and example):
    # one row so their words reach the reader (the prefilter and the quiet-line test)
    ErrorText(
        "standalone_cause",
        Regex("|".join(f"(?:{c.pattern.pattern})" for c in CRASH_CAUSES if c.standalone)),
        tuple(dict.fromkeys(w for c in CRASH_CAUSES if c.standalone for w in c.words)),
        Family.PYTHON,
        "memledger.sglang.failure_rules CRASH_CAUSES (each cause cites its own source)",
        next(c.example for c in CRASH_CAUSES if c.standalone),
        kind="traceback",
    ),
    # ---- process ends (kind process_exit)
    ErrorText(
        "killed",
        Regex(r"^Killed\b"),
        ("Killed",),
        Family.SHELL,
        "the shell reporting SIGKILL",
        "Killed",
        kind="process_exit",
        strip=True,
    ),
    ErrorText(
        "exit_code",
        # SGLang's own (`Exit code: -9`, `terminated with -9`: multiprocessing's exitcode, -N a
        # signal); a shell's or docker's (`Exit code 137`, `exited with code 137`, `exit status
        # 137`: 128 + N a signal); and SGLang 0.4.6-0.4.9's child handler, which prints
        # os.waitpid's raw status (`status`: 9 is SIGKILL, 256 is exit(1))
        Regex(
            r"Child process unexpectedly failed with (?:an exit code |exitcode=)(?P<status>\d+)"
            r"|(?:Exit code:?|terminated with|exitcode=|exit code:?|exited with code|exit status)"
            r"\s*(?P<code>-?\d+)"
        ),
        (
            "Child process unexpectedly failed",
            "Exit code",
            "terminated with",
            "exitcode=",
            "exit code",
            "exited with code",
            "exit status",
        ),
        Family.SGLANG_EXIT,
        "v0.5.8 entrypoints/engine.py:853, managers/data_parallel_controller.py:582; v0.4.6.post5 "
        "entrypoints/engine.py:513-520 and v0.4.9.post2 :656-662 (sigchld_handler logs "
        "os.waitpid's status); a shell's or docker's exit status (128 + the signal)",
        "Scheduler or DataParallelController 1234 terminated with -9",
        kind="process_exit",
    ),
    # ---- outcome phrases (memledger.input.outcome; the refusals above count too)
    ErrorText(
        "out_of_memory",
        # `out-of-memory`, `out of GPU memory` as people write it; a device word between
        Regex(
            r"out of (?:(?:GPU|device|CUDA|HIP|NPU|VRAM|HBM|video) )?memory|out-of-(?:GPU-)?memory"
            r"|out of (?:GPU )?(?:VRAM|HBM)\b",
            re.IGNORECASE,
        ),
        ("out of ", "out-of-"),
        Family.CUDA,
        "any device's out-of-memory text, e.g. the CUDA runtime's `CUDA error: out of memory`; "
        "what people write for it (`out-of-memory errors`, `ran out of GPU memory`, `out of VRAM`)",
        "RuntimeError: CUDA error: out of memory",
        outcome=Outcome.OOM,
    ),
    # texts that hold an out-of-memory phrase but state no OOM end (`masks_oom`): on-chip
    # scratch limits, and SGLang's warnings it recovers from
    ErrorText(
        "tpu_vmem",
        Regex(
            r"RESOURCE_EXHAUSTED: (?:XLA:TPU compile permanent error\. )?Ran out of memory in "
            r"memory space vmem"
            r"|would exceed memory \(size=\d+\) :: #allocation\d+ [^\n]*?space=vmem"
        ),
        ("memory space vmem", "space=vmem"),
        Family.TPU,
        "XLA docs/errors/error_1000.md ('Ran out of memory in memory space vmem'), "
        "error_1001.md ('Allocation (size=N) would exceed memory ... space=vmem'): a TPU kernel's "
        "on-chip vector memory, not HBM; sgl-project/sglang-jax#408, #1595 (KV-update tiles)",
        "RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on stack "
        "for %kv_cache_update.1",
        outcome=Outcome.CRASH,
        masks_oom=True,
    ),
    ErrorText(
        "recovered_oom_warning",
        Regex(
            r"for warmup, reducing max_m to \d+ to avoid out of memory"
            r"|If you hit GPU OOM issue, please adjust the memory fraction"
            r"|ran out of GPU memory on \S+; retrying on CPU"
        ),
        (
            "to avoid out of memory",
            "If you hit GPU OOM issue",
            "; retrying on CPU",
        ),
        Family.SGLANG_POOL,
        "SGLang's warnings that go on: v0.5.8 layers/deep_gemm_wrapper/compile_utils.py:157 "
        "(DeepGEMM's warmup shrinks its max_m to the free memory), model_loader/loader.py:607 "
        "(a calibration memory limit), v0.5.23 multimodal/processors/base_processor.py:948 "
        "(image preprocessing falls back to the CPU)",
        "Available memory 1.2GB is less than required memory 3.5GB for warmup, reducing max_m to "
        "4096 to avoid out of memory",
        masks_oom=True,
    ),
    # texts that name an out-of-memory as something to avoid, not one that happened: a line
    # holding one states no OOM end (read from SGLang's source; the list is in the commit)
    ErrorText(
        "unknown_rank_memory_warning",
        Regex(
            r"available memory amounts? of (?:each rank|the ranks) cannot be determined in prior"
        ),
        ("cannot be determined in prior",),
        Family.SGLANG_LOG,
        "SGLang's CPU backend warns at every launch with more ranks than NUMA nodes, or with "
        "SGLANG_CPU_OMP_THREADS_BIND set, that it cannot size each rank's memory and asks for "
        "--max-total-tokens 'to avoid the out-of-memory error': v0.5.3 "
        "model_executor/model_runner.py:1880-1883, v0.5.8 :2113-2116, v0.5.23 "
        "utils/numa_utils.py:500-503, utils/common.py:915-917",
        "The total number of ranks (4) is larger than numa node number (2), in this case the "
        "available memory amount of each rank cannot be determined in prior. Please set proper "
        "`--max-total-tokens` to avoid the out-of-memory error.",
        masks_oom=True,
    ),
    ErrorText(
        "oom_named_as_risk",
        Regex(
            r"fallback to disk loading is disabled because the daemon process already holds "
            r"weights on the same GPU"
            r"|refusing \S+ to avoid OOM/ENOSPC"
            r"|with FSDP-sharded weights may require full-gather and can OOM"
            r"|device-loaded after serving started \(free device mem: [^)\n]*\)"
            r"|would fall back to its eager FlexAttention path"
            r"|memory_margin_bytes is not supported on Intel XPU"
        ),
        (
            "fallback to disk loading is disabled",
            "to avoid OOM/ENOSPC",
            "may require full-gather and can OOM",
            "device-loaded after serving started",
            "would fall back to its eager FlexAttention path",
            "memory_margin_bytes is not supported on Intel XPU",
        ),
        Family.SGLANG_LOG,
        "v0.5.23 weight_cache/ipc_loader.py:112 (the weight-cache daemon is not there: a crash "
        "whose text says loading from disk 'would cause OOM'), "
        "mem_cache/storage/file/lru_file_evictor.py:191 (HiCache's file tier skips a write to "
        "keep the filesystem's free space: a disk, not a GPU), "
        "multimodal_gen/runtime/pipelines_core/lora/pipeline.py:749 (a warning before a LoRA "
        "merge), utils/triton_load_watch.py:116-121 (a Triton kernel loaded after ready, 'to "
        "avoid CUDA OOM'), multimodal_gen/runtime/models/vaes/cosmos3_lidar/layers.py:61-67 "
        "(natten missing: its fallback 'runs out of memory'); torch_memory_saver 0.0.10 "
        "torch_memory_saver/entrypoint.py:115 (XPU: no 'OOM-margin guard')",
        "[IpcModelLoader] Weight cache daemon not available at /tmp/wc.sock. In daemon mode, "
        "fallback to disk loading is disabled because the daemon process already holds weights "
        "on the same GPU — loading from disk would cause OOM.",
        masks_oom=True,
    ),
    ErrorText(
        "out_of_memory_error",
        Regex(r"OutOfMemoryError"),
        ("OutOfMemory",),
        Family.ALLOCATOR,
        "torch torch/cuda/memory.py (torch.OutOfMemoryError, torch.cuda.OutOfMemoryError)",
        "torch.cuda.OutOfMemoryError",
        outcome=Outcome.OOM,
    ),
    ErrorText(
        "oom_word",
        # `OOMs`, `OOMed`, `OOM'd`, and `OOM了` (a CJK character is a word character to \b)
        Regex(r"(?<![A-Za-z0-9_])OOM(?:s|ed|'d|ing)?(?![A-Za-z0-9_])"),
        ("OOM",),
        Family.REPORTER,
        "what people write around a log",
        "the server hits OOM at startup",
        outcome=Outcome.OOM,
    ),
    ErrorText(
        "oom_word_lower",
        # `oom`, `ooms`, `oomed` as people type it in titles and prose (`ends with oom in ...`,
        # `Fix oom issue`, `oom/hanging after ...`), or in mixed case (`OoM`, as papers write
        # it; `ooM`, `OOm`); not the kernel's OOM killer of host RAM (`oom-killer`, `oom_kill`,
        # `oom_score_adj`), a file (`oom.py`, `tests/oom/`) nor a word holding the letters
        # (`room`, `bloom`)
        Regex(
            r"(?<![A-Za-z0-9_./-])(?:oom|Oom|OoM|ooM|OOm)(?:s|ed|'d|ing)?"
            r"(?![A-Za-z0-9_-]|\.\w|/[\w.-]*[/.])"
        ),
        ("oom", "Oom", "OoM", "ooM", "OOm"),
        Family.REPORTER,
        "what people write around a log, in lower or mixed case",
        "loading the model on two cards ends with oom in the weight shuffle",
        outcome=Outcome.OOM,
    ),
    ErrorText(
        "oom_cjk",
        Regex(
            # `内存` named with the device (`CUDA内存不足`, `GPU 内存不足`): the device's memory,
            # not the host's (host_memory_said)
            r"(?:显存|(?:CUDA|GPU|NPU|cuda|gpu|npu) ?内存)"
            r"(?:不足|不够|溢出|爆了|炸了|耗尽|迅速耗尽|占满|满了)"
            r"|爆显存"
            r"|显存[^\n，。,.]{0,8}?跑不(?:起来|动)"
        ),
        ("显存", "内存"),
        Family.REPORTER,
        "what people write around a log in Chinese ('GPU memory insufficient / overflowed / "
        "exhausted', and 显存...跑不起来 'with N GB of GPU memory it still will not run'; "
        "`CUDA内存不足` as the allocator's message is translated)",
        "启动时显存不足",
        outcome=Outcome.OOM,
    ),
    ErrorText(
        "oom_said_words",
        # `not enough memory`, `insufficient GPU memory`, `GPU memory exhausted`, `a CUDA memory
        # error` as people write them; not SGLang's own refusal (`RuntimeError: Not enough
        # memory. Please try to increase --mem-fraction-static`: the kv_refusal entries), nor the
        # host's (`not enough host memory`, `insufficient shared memory`: no device word here;
        # Windows torch's `DefaultCPUAllocator: not enough memory`: the host_memory entry)
        Regex(
            r"(?<!Error: )(?<!CPUAllocator: )\bnot enough (?:(?:GPU|device|CUDA|VRAM) )?memory"
            r"(?!\. Please)"
            r"|\binsufficient (?:(?:GPU|device|CUDA|VRAM) )?memory"
            r"|(?:GPU|CUDA|VRAM|device) memory (?:is |was |got )?exhausted"
            r"|\b(?:CUDA |GPU )?memory error\b"
            r"|\b(?:runs?|ran|running) dry on (?:(?:GPU|device|CUDA|VRAM) )?memory"
            r"|out of GPU RAM|out of VRAM|out of video memory"
            r"|overwhelmed kv[- _]?cache|kv[- _]?cache (?:is |was |got )?(?:overwhelmed|exhausted)",
            re.I,  # and in a title's Title Case
        ),
        (
            "ot enough ",
            "nsufficient ",
            "exhausted",
            "memory error",
            "dry on ",
            "out of gpu ram",
            "out of vram",
            "out of video memory",
            "overwhelmed",
        ),
        Family.REPORTER,
        "what people write around a log for a device out of memory (`runs dry on memory`, `out of "
        "GPU RAM`, `out of VRAM`, `overwhelmed kv-cache`; SGLang's own retraction "
        "docstring says it so: v0.5.8 managers/schedule_batch.py:1851 `when there is not enough "
        "memory`)",
        "the server hits not enough memory during decode",
        outcome=Outcome.OOM,
    ),
    ErrorText(
        "host_oom_said",
        # the host's RAM, not the GPU's, as people write it: the kernel's OOM killer (its own
        # report is the oom_killer entry), the host's memory named; `内存不足` is Chinese
        # reporters' usage for host RAM (`显存` is the GPU's: the oom_cjk entry). A line it
        # matches states no GPU out-of-memory (`host OOM`, `OOM-killed` hold the word OOM)
        Regex(
            r"\b(?:OOM|oom|Oom)[- ]?[Kk]ill(?:s|ed|er|ing)?\b|\boom_kill\b"
            r"|\b(?:host|Host|HOST|CPU|cpu|system|System|RAM|ram) (?:OOM|oom)\b"
        ),
        ("OOM", "oom", "Oom"),
        Family.HOST,
        "what people write for the host's RAM running out (the kernel's OOM killer: Linux "
        "mm/oom_kill.c)",
        "the scheduler was OOM-killed after a few hours",
        kind="pool_exhausted",
        outcome=Outcome.CRASH,
        values={"pool": "host", "shape": "host_memory"},
        masks_oom=True,
    ),
    ErrorText(
        "host_memory_said",
        # the host's memory named as running out, in any case (a title's Title Case too);
        # `内存不足` is Chinese reporters' usage for host RAM (`显存` is the GPU's: oom_cjk)
        Regex(
            r"(?:out of|not enough|insufficient) (?:host memory|host ram|cpu memory|cpu ram"
            r"|system memory|system ram)|out of ram\b"
            r"|(?<!CUDA)(?<!CUDA )(?<!GPU)(?<!GPU )(?<!NPU)(?<!NPU )内存(?:不足|不够)"
            r"|(?:host memory|host ram|cpu memory|cpu ram|system memory|system ram|node memory"
            r"|node ram) (?:is |was |got )?(?:exhaust|runs? out|ran out)\w*",
            re.I,
        ),
        (
            "host memory",
            "host ram",
            "cpu memory",
            "cpu ram",
            "system memory",
            "system ram",
            "out of ram",
            "内存",
            "node memory",
            "node ram",
        ),
        Family.HOST,
        "what people write for the host's RAM running out (`host RAM exhausts`, `node CPU memory "
        "exhaustion`)",
        "the scheduler ran out of host memory while loading the checkpoint",
        kind="pool_exhausted",
        outcome=Outcome.CRASH,
        values={"pool": "host", "shape": "host_memory"},
    ),
    ErrorText(
        "traceback_started",
        Regex(r"Traceback \(most recent call last\)"),
        ("Traceback",),
        Family.PYTHON,
        "CPython Python/traceback.c",
        "Traceback (most recent call last):",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "scheduler_exception",
        Regex(r"Scheduler hit an exception"),
        ("Scheduler hit",),
        Family.SGLANG_EXIT,
        "v0.5.8 managers/scheduler.py:2995",
        "Scheduler hit an exception: Traceback (most recent call last):",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "exception_in",
        Regex(r"^Exception in "),
        ("Exception",),
        Family.SGLANG_EXIT,
        "v0.5.8 multimodal/processors/llava.py:83 (`Exception in TokenizerManager:`); "
        "older releases' `Exception in run_tp_server:`",
        "Exception in run_tp_server:",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "sigquit",
        Regex(r"Received sigquit from a child process"),
        ("sigquit",),
        Family.SGLANG_EXIT,
        "v0.5.8 entrypoints/engine.py:823",
        "Received sigquit from a child process. It usually means the child failed.",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "scheduler_dead",
        Regex(r"scheduler is dead"),
        ("scheduler is dead",),
        Family.SGLANG_EXIT,
        "v0.5.8 entrypoints/engine.py:850",
        "Rank 0 scheduler is dead. Please check if there are relevant logs.",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "initialization_failed",
        Regex(r"Initialization failed"),
        ("Initialization failed",),
        Family.SGLANG_EXIT,
        "v0.5.8 entrypoints/engine.py:858, entrypoints/http_server.py:1516",
        "Initialization failed. warmup error: Traceback (most recent call last):",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "error_line",
        Regex(r"^(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception)(?::|$)"),
        ("Error", "Exception"),
        Family.PYTHON,
        "CPython Python/traceback.c (the exception line)",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "killed_line",
        Regex(r"^Killed$"),
        ("Killed",),
        Family.SHELL,
        "the shell reporting SIGKILL",
        "Killed",
        outcome=Outcome.CRASH,
    ),
    ErrorText(
        "exit_code_line",
        # the exit_code entry's shapes (a raw wait status is non-zero when the exit code is)
        Regex(
            r"(?:Exit code:?|exit code:?|exited with code|exit status|terminated with"
            r"|Child process unexpectedly failed with (?:an exit code |exitcode=))\s*(-?\d+)"
        ),
        (
            "Exit code",
            "exit code",
            "exited with code",
            "exit status",
            "terminated with",
            "Child process",
        ),
        Family.SGLANG_EXIT,
        "v0.5.8 entrypoints/engine.py:853; v0.4.9.post2 entrypoints/engine.py:656-662",
        "Exit code: -9",
        outcome=Outcome.EXIT,
    ),
    # ---- SGLang changing a memory setting by itself (kind setting_adjusted): one entry per
    # text of memledger.sglang.adjustments, whose rows say the setting, the reason and the lever
    *(
        ErrorText(
            row.name,
            row.regex,
            row.words,
            Family.SGLANG_ADJUSTMENT,
            row.source,
            row.example,
            kind="setting_adjusted",
            values={
                "adjustment": row.name,
                "setting": row.setting,
                **({"at": "args"} if row.at_args else {}),
            },
        )
        for row in ADJUSTMENTS
    ),
)
"""Every error text, in the order each reader tries them."""

SAID_OUTCOMES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("oom", re.compile(r"out[- ]of[- ](?:GPU |device )?memory|(?<![A-Za-z])OOM|显存", re.I)),
    (
        "fails",
        re.compile(
            r"can ?not start|can't start|cannot start|fails?|failed|refus\w*|not enough memory"
            r"|negative|\berror\b|crash\w*|does not start|doesn't start|won't start",
            re.I,
        ),
    ),
    ("works", re.compile(r"\bworks?\b|\bworked\b|\bfine\b|\bsucceed\w*|runs normally", re.I)),
)
"""What a clause of prose says happened at the value typed in it, first match wins (memledger.input
.reported): an out-of-memory, a failure to start (SGLang's refusal, as reporters put it), or that
it worked."""

BY_NAME: dict[str, ErrorText] = {entry.name: entry for entry in ERRORS}
"""Each entry by its name."""


def of_kind(kind: str) -> tuple[ErrorText, ...]:
    """The entries a reader of event kind `kind` reads, in order."""
    return tuple(entry for entry in ERRORS if entry.kind == kind)


MASKS_OOM: tuple[ErrorText, ...] = tuple(entry for entry in ERRORS if entry.masks_oom)
"""The entries whose line states no OOM outcome although it holds an out-of-memory phrase."""


def of_outcome(outcome: Outcome) -> tuple[ErrorText, ...]:
    """The entries that state outcome `outcome`, in order."""
    return tuple(entry for entry in ERRORS if entry.outcome is outcome)


def any_case(entry: ErrorText) -> bool:
    """Its regex (and so its words) ignores case."""
    return bool(entry.regex.flags & re.IGNORECASE)


def joined(entries: tuple[ErrorText, ...]) -> re.Pattern[str]:
    """One regex searching for any of `entries` (the leftmost match; at one place, the first
    entry's), each keeping its own case rule."""
    return re.compile(
        "|".join(
            f"(?i:{entry.regex.pattern})" if any_case(entry) else entry.regex.pattern
            for entry in entries
        )
    )


def _unique(words: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words))


def words_of(entries: tuple[ErrorText, ...], *, prefilter: bool = False) -> tuple[str, ...]:
    """The words of `entries`, first seen first. `prefilter`: the case-sensitive ones (an
    any-case entry's are ANY_CASE_WORDS) and what a wrapped second half holds (`wrap_words`)."""
    words: list[str] = []
    for entry in entries:
        if not (prefilter and any_case(entry)):
            words.extend(entry.words)
        if prefilter:
            words.extend(entry.wrap_words)
    return _unique(words)


READER_KINDS: tuple[str, ...] = tuple(dict.fromkeys(e.kind for e in ERRORS if e.kind))
"""The event kinds the error-text readers make."""

PREFILTER_BY_KIND: dict[str, tuple[str, ...]] = {
    **{kind: words_of(of_kind(kind), prefilter=True) for kind in READER_KINDS},
    "oom": words_of(of_outcome(Outcome.OOM), prefilter=True),
    "crash": words_of(of_outcome(Outcome.CRASH) + of_outcome(Outcome.EXIT), prefilter=True),
}
"""The prefilter's words for each event kind made of error texts (memledger.sglang.lines):
every entry's words and wrap words, case-sensitive; the scanner matches an any-case entry's
words in any case (ANY_CASE_WORDS)."""

ANY_CASE_WORDS: tuple[str, ...] = _unique(
    [word.lower() for entry in ERRORS if any_case(entry) for word in entry.words]
)
"""Words the scanner matches in any case (`out of memory`)."""
