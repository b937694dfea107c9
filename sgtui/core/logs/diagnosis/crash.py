"""A process that died of a signal or a GPU fault rather than a Python exception, and a kernel this GPU cannot
run: what each usually means in SGLang (kernel and backend choices, CUDA graphs, communication libraries, the
driver) and what to try, in the order that isolates the cause fastest.
"""

from __future__ import annotations

from sgtui.core.logs.diagnosis.common import Context, Diagnosis, Suggestion, phase_words

_DISABLE_GRAPH = Suggestion(
    "--disable-cuda-graph",
    None,
    "Start once without CUDA graphs: if that works, the crash is in a captured kernel; decoding is slower "
    "without graphs.",
)
_BACKEND = Suggestion(
    "--attention-backend",
    None,
    "Try another attention backend (triton, flashinfer, fa3; aiter on ROCm): the crashing kernel is often "
    "backend-specific.",
)
_CUSTOM_AR = Suggestion(
    "--disable-custom-all-reduce",
    None,
    "Use NCCL's all-reduce instead of SGLang's custom kernel: a frequent source of segfaults inside graph "
    "capture on multi-GPU hosts; all-reduce may be a little slower.",
)
_UPGRADE = Suggestion(
    None,
    None,
    "Upgrade SGLang and its kernel packages (sgl-kernel, flashinfer): crashes like this are often fixed.",
)
_MEANINGS = {
    "SIGSEGV": "a segmentation fault: native code (a CUDA kernel wrapper, NCCL, a custom all-reduce, "
    "DeepGEMM or aiter on ROCm) touched memory it does not own",
    "SIGABRT": "an abort: native code gave up, usually after a C++ exception or a CUDA error printed just "
    'above ("terminate called after throwing ...")',
    "SIGBUS": "a bus error: in a container this is almost always /dev/shm too small for NCCL or PyTorch's "
    "shared memory",
    "SIGILL": "an illegal instruction: code built for another CPU or GPU architecture",
    "SIGFPE": "an arithmetic fault in native code (a division by zero in a kernel's launch arithmetic)",
}


_LAUNCH_BLOCKING = Suggestion(
    "CUDA_LAUNCH_BLOCKING",
    "1",
    "An environment variable: the error is raised at the kernel that asserted (much slower; for finding it "
    "only).",
)
# torch.multinomial's check (aten/src/ATen/native/cuda/TensorCompare.cu: "probability tensor contains either
# `inf`, `nan` or element < 0"): the sampler got logits that are not numbers
_NOT_NUMBERS = ("probability tensor", "`inf`", "`nan`", "isfinite")


def _device_assert(text: str) -> tuple[str, list[Suggestion]]:
    """What a kernel's failed assertion usually means, from its own words: logits that are not numbers, or
    (most asserts: indexSelect, gather, embedding) an index out of range."""
    if any(needle in text for needle in _NOT_NUMBERS):
        meaning = (
            "the sampler got probabilities that are not numbers (inf or NaN logits): a numeric overflow in "
            "the model for this dtype or quantization, a broken checkpoint, or a kernel bug for this batch "
            "shape; the CUDA context is lost with it"
        )
        return meaning, [
            Suggestion(
                "--dtype",
                "bfloat16",
                "float16 overflows where bfloat16 does not; check the checkpoint's own dtype.",
            ),
            _LAUNCH_BLOCKING,
            _BACKEND,
            _DISABLE_GRAPH,
            _UPGRADE,
        ]
    meaning = (
        "a kernel checked an index and found it out of range: most often a token id past the vocabulary "
        "or embedding table (a tokenizer or input_ids that do not match the model, an added special "
        "token), else a bad KV page or slot index in a kernel for this model or backend; the CUDA context "
        "is lost with it"
    )
    return meaning, [
        Suggestion(
            None,
            None,
            "Check that the tokenizer matches the model (--tokenizer-path) and that requests sending "
            "input_ids stay below the model's vocab_size.",
        ),
        _LAUNCH_BLOCKING,
        _BACKEND,
        _DISABLE_GRAPH,
        _UPGRADE,
    ]


def crash(ctx: Context) -> Diagnosis:
    """A fatal signal (`Fatal Python error`, `Caught signal N`, a shell's `Segmentation fault (core
    dumped)`) or a CUDA fault (illegal memory access / instruction)."""
    values = ctx.error.values
    fault = values.get("cuda_fault")
    signal = values.get("signal")
    where = phase_words(ctx.phase)
    text = ctx.error.text.strip()[:200]
    capture = ctx.phase == "capturing_graphs"
    if fault == "illegal_address":
        title = "A CUDA kernel accessed illegal memory"
        meaning = (
            "a kernel read or wrote outside its buffers: a kernel bug for this model, batch shape or backend "
            "(attention, MoE, speculative decoding), and the CUDA context is lost with it"
        )
        suggestions = [
            _BACKEND,
            _DISABLE_GRAPH,
            Suggestion(
                "CUDA_LAUNCH_BLOCKING",
                "1",
                "An environment variable: the error is raised at the kernel that faulted (much slower; for "
                "finding it only).",
            ),
            _UPGRADE,
        ]
    elif fault == "device_assert":
        title = "A CUDA kernel's assertion failed (device-side assert)"
        meaning, suggestions = _device_assert(ctx.error.text)
    elif fault == "illegal_instruction":
        title = "A CUDA kernel hit an illegal instruction"
        meaning = (
            "a kernel was built for another GPU architecture or CUDA version than this GPU and driver run, "
            "or "
            "a kernel bug for this model's shapes"
        )
        suggestions = [
            Suggestion(
                None,
                None,
                "Install the SGLang/sgl-kernel build for this GPU's architecture and CUDA version (or "
                "SGLang's "
                "Docker image for it), and check the driver supports that CUDA version.",
            ),
            _BACKEND,
            _DISABLE_GRAPH,
        ]
    else:
        name = signal or "a fatal signal"
        title = f"The process crashed ({name})" + (" during CUDA graph capture" if capture else "")
        meaning = _MEANINGS.get(signal or "", "a fatal signal from native code, not a Python error")
        if signal == "SIGBUS":
            suggestions = [
                Suggestion(
                    "--shm-size",
                    "32g",
                    "A docker run flag (or --ipc=host; for LXC, enlarge /dev/shm): Docker's default 64 MB is "
                    "too small.",
                ),
                _UPGRADE,
            ]
        elif capture:
            suggestions = [_DISABLE_GRAPH, _CUSTOM_AR, _small_graphs(ctx), _BACKEND, _UPGRADE]
        else:
            suggestions = [_DISABLE_GRAPH, _BACKEND, _CUSTOM_AR, _UPGRADE]
    if ctx.facts.get("enable_dp_attention") is True:
        suggestions.append(
            Suggestion(
                "--enable-dp-attention",
                "false",
                "Try once without DP attention: its graph capture and all-gather paths are a common place "
                "for "
                "such crashes; throughput on large batches drops.",
            )
        )
    detail = f"It died while {where} (line {ctx.error.line}: {text}): {meaning}."
    if ctx.error.values.get("what") and signal is None:
        detail += f" ({ctx.error.values['what']})"
    return Diagnosis(title, detail, suggestions, ctx.error.error_class)


def _small_graphs(ctx: Context) -> Suggestion:
    bs = ctx.num("cuda_graph_max_bs") or ctx.num("cuda_graph_max_bs_captured")
    flag = "--cuda-graph-max-bs-decode" if ctx.new_style else "--cuda-graph-max-bs"
    return Suggestion(
        flag,
        str(max(1, int(bs) // 2)) if bs else "16",
        "Capture fewer, smaller batch sizes: if the crash is at a large batch size, this avoids it; larger "
        "decode batches run without graphs.",
    )


def kernel_resources(ctx: Context) -> Diagnosis:
    """Triton's `OutOfResources`: a kernel configuration needs more on-chip memory than this GPU has."""
    values = ctx.error.values
    resource = values.get("kernel_resource", "shared memory")
    required, limit = values.get("required"), values.get("limit")
    numbers = ""
    if isinstance(required, int) and isinstance(limit, int):
        numbers = f" It asked for {required // 1024} KiB of {resource}; this GPU has {limit // 1024} KiB."
    detail = (
        f"A Triton kernel's block configuration does not fit this GPU while {phase_words(ctx.phase)}."
        f"{numbers} The configuration was tuned for a GPU with more {resource} (AMD MI300/MI308 have 64 KiB "
        "of LDS; consumer and older NVIDIA GPUs about 100 KiB, H100 228 KiB)."
    )
    suggestions = [
        _BACKEND,
        _DISABLE_GRAPH if ctx.phase == "capturing_graphs" else _small_graphs(ctx),
        Suggestion(
            None,
            None,
            "Upgrade SGLang and Triton (or use SGLang's ROCm image on AMD): newer releases ship kernel "
            "configurations for more GPUs.",
        ),
    ]
    if ctx.facts.get("enable_torch_compile") is True:
        suggestions.insert(
            0,
            Suggestion(
                "--enable-torch-compile", "false", "torch.compile generated this kernel; run without it."
            ),
        )
    return Diagnosis(
        f"A GPU kernel needs more {resource} than this GPU has", detail, suggestions, ctx.error.error_class
    )
