"""Errors outside the contract's classes that have one well-known fix each, and the generic fallback."""

from __future__ import annotations

import re

from sgtui.core.logs.diagnosis.common import (
    Context,
    Diagnosis,
    Suggestion,
    phase_words,
)
from sgtui.core.logs.diagnosis.crash import crash, kernel_resources
from sgtui.core.logs.diagnosis.install import install_failure

_WARMUP_STATUS = re.compile(r"Response \[(\d{3})\]")
_MISSING_LIBRARY = re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file")
_KV_EXHAUSTED = ("out of memory. Try to lower your batch size", "runs out of memory", "Prefill out of memory")


def _warmup_failed(ctx: Context, status: str) -> Diagnosis:
    """The server came up, but its own warm-up request to itself got an HTTP error back."""
    port = ctx.facts.get("port")
    address = str(ctx.facts.get("uvicorn_address") or "")
    if not isinstance(port, int) and address.rpartition(":")[2].isdigit():
        port = int(address.rpartition(":")[2])
    where = f"127.0.0.1:{port}" if isinstance(port, int) else "its own port"
    detail = (
        f"The server started, but the warm-up request it sends to itself ({where}) got HTTP {status}, so it "
        "shut down. A 502/503/403 here almost always comes from an HTTP proxy in the environment "
        "(http_proxy/https_proxy) that also catches local addresses; a 401/403 can also be an --api-key "
        "the warm-up does not carry."
    )
    suggestions = [
        Suggestion(
            "no_proxy",
            "localhost,127.0.0.1",
            "An environment variable for the launch: local requests bypass the proxy; other traffic "
            "still uses it.",
        ),
        Suggestion(
            None,
            None,
            "Or unset http_proxy/https_proxy (and their upper-case forms) in the launch environment.",
        ),
    ]
    return Diagnosis(f"The server's warm-up request got HTTP {status}", detail, suggestions, "other")


def _port_env(ctx: Context) -> Diagnosis | None:
    """SGLang's get_open_port reads the SGLANG_PORT environment variable (utils.py; 0.4.x binds the string
    as it is, 0.5.x calls int() on it). Kubernetes sets SGLANG_PORT=tcp://IP:PORT in every pod of a
    namespace with a Service named "sglang" (its service links), so the port SGLang sets up for its
    communication is no number."""
    text = ctx.error.text
    env_url = "invalid literal for int()" in text and "tcp://" in text
    if not env_url and not (
        "'str' object cannot be interpreted as an integer" in text and ctx.phase == "distributed_init"
    ):
        return None
    detail = (
        f"A port SGLang reads from the environment is not a number (line {ctx.error.line}: "
        f"{text.strip()[:200]}): SGLang's get_open_port uses SGLANG_PORT when it is set, and Kubernetes sets "
        "SGLANG_PORT=tcp://IP:PORT in every pod of a namespace that has a Service named sglang."
    )
    suggestions = [
        Suggestion(
            None,
            None,
            "Rename the Service (anything but sglang) or set enableServiceLinks: false in the pod spec; "
            "elsewhere, unset SGLANG_PORT or set it to a port number.",
        )
    ]
    return Diagnosis("SGLANG_PORT in the environment is not a port number", detail, suggestions, "other")


def _kv_exhausted(ctx: Context) -> Diagnosis:
    text = ctx.error.text.strip()
    mrr = ctx.num("max_running_requests")
    detail = (
        f"The KV cache pool ran out of free slots for a batch while serving: {text[:200]} Requests that are "
        "admitted together need more tokens than the pool has free."
    )
    suggestions = [
        Suggestion(
            "--max-running-requests",
            str(max(1, int(mrr) // 2)) if mrr else None,
            "Fewer requests at once need fewer KV slots; throughput drops under load.",
        ),
        Suggestion(
            "--chunked-prefill-size",
            None,
            "Smaller prefill chunks claim KV slots more gradually; long prompts take more steps.",
        ),
        Suggestion(
            None,
            None,
            "Upgrade SGLang if --page-size is above 1: older releases mis-counted free pages.",
        ),
    ]
    return Diagnosis("The KV cache ran out while serving", detail, suggestions, "other")


# Environment failures that are none of the contract's classes but have one well-known fix each:
# (needles any of which names it, title, what it means, what to do).
_KNOWN_OTHERS: tuple[tuple[tuple[str, ...], str, str, str], ...] = (
    (
        ("GatedRepoError", "401 Client Error", "403 Client Error", "Access to model", "gated repo"),
        "The model download was refused",
        "Hugging Face refused the download: the model is gated or private and this environment has no "
        "accepted token for it.",
        "Accept the model's licence on its Hugging Face page, then set HF_TOKEN in the launch environment "
        "(or download the model and pass its local folder as --model-path).",
    ),
    (
        (
            "is not a local folder and is not a valid model identifier",
            "Repository Not Found",
            "does not appear to have a file named",
            "RepositoryNotFoundError",
            # huggingface_hub's validate_repo_id on a path that is no folder (0.5.23 raises it as an OSError)
            "Repo id must be in the form",
        ),
        "The model path does not name a model",
        "--model-path is neither a folder with a config.json nor a model id Hugging Face knows.",
        "Check --model-path: a local folder must hold config.json and the weights; a hub id is "
        "'organisation/name'.",
    ),
    (
        ("couldn't connect to 'https://huggingface.co'", "LocalEntryNotFoundError", "HF_HUB_OFFLINE"),
        "No connection to Hugging Face",
        "The model is not in the local cache and Hugging Face could not be reached.",
        "Download the model where there is network (huggingface-cli download) and pass its folder as "
        "--model-path, or fix the proxy settings of the launch environment.",
    ),
    (
        # sgl_kernel/load_utils.py: none of its compiled op libraries loads (the CUDA-only wheel needs
        # libcuda.so.1 from the NVIDIA driver; the reasons follow under "Error details")
        ("Could not load any common_ops library",),
        "SGLang's kernel package cannot load",
        "sgl-kernel's compiled ops did not load: the wheel from the package index is built for NVIDIA GPUs "
        "and needs the driver's libcuda.so.1; a build for another CUDA or GPU fails the same way.",
        "On a GPU host, install the sglang-kernel build that matches its CUDA version and check that the "
        "driver is visible (`nvidia-smi`); a CPU-only host needs a CPU build of sgl-kernel (SGLang's CPU "
        "Docker image), which the package index does not carry.",
    ),
    (
        # sglang/srt/utils/common.py get_device (0.5.x); torch's own words when the driver is missing
        ("No accelerator (CUDA", "Found no NVIDIA driver on your system", "No CUDA GPUs are available"),
        "No GPU or other accelerator is visible",
        "SGLang found no GPU it can use in this environment: no NVIDIA driver, no device passed into the "
        "container, or CUDA_VISIBLE_DEVICES naming none.",
        "Check `nvidia-smi` where the server runs (a container needs its GPUs passed in: --gpus / the LXC's "
        "device entries) and CUDA_VISIBLE_DEVICES; a CPU-only launch needs --device cpu with a CPU build of "
        "SGLang's kernels.",
    ),
    (
        ("driver on your system is too old", "CUDA driver version is insufficient"),
        "The NVIDIA driver is too old",
        "The installed PyTorch needs a newer NVIDIA driver than the host has.",
        "Upgrade the host's NVIDIA driver, or install a PyTorch/SGLang build for the older CUDA version.",
    ),
    (
        ("undefined symbol",),  # a missing module or a mismatched import: install.py
        "A Python package is missing or broken",
        "The environment SGLang runs in lacks a package it imports, or has one built against other versions.",
        "Reinstall SGLang with its extras in that environment (`pip install -U 'sglang[all]'`), or use "
        "SGLang's Docker image.",
    ),
)


def _known_other(ctx: Context) -> Diagnosis | None:
    # the quoted exception first, then the ones of its chain it was raised from
    text = "\n".join([ctx.error.text, *ctx.error.values.get("context", ())])
    for needles, title, meaning, fix in _KNOWN_OTHERS:
        if any(needle in text for needle in needles):
            detail = f"{meaning} (line {ctx.error.line}: {ctx.error.text.strip()[:200]})"
            missing = _MISSING_LIBRARY.search(text)
            if missing:
                detail += f" The library that could not be opened: {missing.group(1)}."
            return Diagnosis(title, detail, [Suggestion(None, None, fix)], "other")
    return None


def other(ctx: Context) -> Diagnosis:
    if ctx.error.values.get("crash"):
        return crash(ctx)
    if ctx.error.values.get("kernel_resource"):
        return kernel_resources(ctx)
    text = ctx.error.text
    death = ctx.error.death_text or ""
    known = _known_other(ctx) or install_failure(ctx) or _port_env(ctx)
    if known is not None:
        return known
    status = _WARMUP_STATUS.search(text)
    if status and ("warmup" in death or "warmup" in text or "_wait_and_warmup" in text):
        return _warmup_failed(ctx, status.group(1))
    if status and ctx.phase == "serving" and "AssertionError" in text:
        return _warmup_failed(ctx, status.group(1))
    if any(needle in text for needle in _KV_EXHAUSTED):
        return _kv_exhausted(ctx)
    if ctx.error.values.get("cut"):
        frame = ctx.error.values.get("last_frame")
        where = f" (its last frame shown is in {frame})" if frame else ""
        detail = (
            f"SGLang died with a traceback while {phase_words(ctx.phase)}, and the log ends inside it"
            f"{where}: the exception line that says what went wrong is not in this log."
        )
        suggestions = [
            Suggestion(None, None, "Get the whole log: the exception line follows the traceback shown."),
            Suggestion("--log-level", "debug", "More detail from each rank on the next launch."),
        ]
        return Diagnosis("Launch failed (the error line is cut off)", detail, suggestions, "other")
    detail = (
        f"SGLang stopped with an error sgtui has no rule for, while {phase_words(ctx.phase)} "
        f"(line {ctx.error.line}): {ctx.error.text.strip()[:300].rstrip('.')}."
    )
    source = ctx.error.values.get("source")
    if source:
        frame = ctx.error.values.get("frame")
        detail += f" The failing line{f' (in {frame})' if frame else ''}: `{source}`."
    suggestions = []
    if ctx.phase == "loading_weights" and source and "shape" in source:
        suggestions.append(
            Suggestion(
                None,
                None,
                "The checkpoint's tensors do not have the shapes of the model SGLang built: check that "
                "--model-path, --load-format and --quantization match the checkpoint (a pre-quantized "
                "checkpoint needs the quantization it was made with).",
            )
        )
    suggestions += [
        Suggestion(
            None, None, "Search the exception text in SGLang's GitHub issues; it often names the fix."
        ),
        Suggestion(
            None, None, "Upgrade SGLang if a newer release exists: many startup crashes are fixed there."
        ),
    ]
    return Diagnosis("Launch failed", detail, suggestions, "other")
