"""Failures of the installation or the hardware rather than of the launch's numbers: a GPU index this node
does not have, kernels built for another GPU architecture, a GPU older than SGLang supports, a package the
flags or the model need that is not installed, and a package whose version does not match this SGLang.
"""

from __future__ import annotations

import re
from typing import Any

from sgtui.core.logs.diagnosis.common import Context, Diagnosis, Suggestion, phase_words
from sgtui.core.logs.server_args import SERVER_ARG_FACTS

_MISSING = "A Python package is missing or broken"
# torch's "CUDA error: no kernel image is available for execution on the device", HIP's "invalid device
# function" and hipErrorNoBinaryForGpu ("Unable to find code object for all current devices!")
_NO_BINARY = ("no kernel image is available", "invalid device function", "NoBinaryForGpu")
# model_runner.py (0.4.x-0.5.x) `raise RuntimeError("SGLang only supports sm75 and above.")` for a GPU below
# compute capability 7.5 (after "Compute capability below sm80. Use float16 ...")
# SGLang's own check (srt/utils): "SGLang only supports sm75 and above." (a kernel's "requires SM90" is
# a feature's need, not the release's floor)
_BELOW_SM = re.compile(r"SGLang only supports sm_?(\d+?)(\d) and above")
# SGLang's optional packages: "DeepEP is not installed. Please install DeepEP package from ..."
# (layers/moe/token_dispatcher/deepep.py), "Mooncake EP is not installed" (mooncake.py); Python's own words
_NOT_INSTALLED = re.compile(r"(\w[\w.+-]*(?: [A-Z]\w*)?) (?:is|are) not installed")
_NO_MODULE = re.compile(r"No module named '?([\w.]+)")
# a call or an import that the installed version of a package does not match
_API_MISMATCH = re.compile(
    r"got multiple values for argument|got an unexpected keyword argument|"
    r"missing \d+ required (?:positional|keyword-only) argument|takes \d+ positional arguments? but|"
    r"cannot import name|module '[\w.]+' has no attribute"
)
_FROM_PACKAGE = re.compile(r"from '([\w]+)|module '([\w]+)")
# names that only the transformers package defines (AutoConfig, AutoImageProcessor, PreTrainedTokenizer...)
_TRANSFORMERS_NAME = re.compile(r"\b(?:Auto[A-Z]\w*|Pre[Tt]rained\w*)")
_TP_RANK = re.compile(r"TP(\d+)")


def install_failure(ctx: Context) -> Diagnosis | None:
    """The diagnosis for a launch the installation or the GPU could not run, or None."""
    text = "\n".join([ctx.error.text, *ctx.error.values.get("context", ())])
    if "invalid device ordinal" in text:
        return device_ordinal(ctx)
    if any(needle in text for needle in _NO_BINARY):
        return _no_binary(ctx, text)
    below = _BELOW_SM.search(text)
    if below is not None:
        return _old_gpu(ctx, f"{below.group(1)}.{below.group(2)}")
    missing = _NOT_INSTALLED.search(text) or _NO_MODULE.search(text)
    if missing is not None:
        return _missing_package(ctx, missing.group(1))
    if _API_MISMATCH.search(ctx.error.text) and (_at_import(ctx) or "cannot import name" in ctx.error.text):
        return _version_mismatch(ctx)
    return None


def _quote(ctx: Context) -> str:
    return f"(line {ctx.error.line}: {ctx.error.text.strip()[:200]})"


def _int_fact(ctx: Context, name: str, default: int) -> int:
    value = ctx.facts.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def device_ordinal(ctx: Context) -> Diagnosis:
    """SGLang gives each node tp*pp/nnodes GPUs from --base-gpu-id (engine.py: `gpu_id =
    server_args.base_gpu_id + (tp_rank % tp_size_per_node) * server_args.gpu_id_step`): a rank whose index
    this node lacks gets CUDA's "invalid device ordinal" from torch.cuda.set_device."""
    tp, pp = _int_fact(ctx, "tp_size", 0), _int_fact(ctx, "pp_size", 1)
    nnodes, base = _int_fact(ctx, "nnodes", 1), _int_fact(ctx, "base_gpu_id", 0)
    lines = [
        f"A rank asked for a GPU index this node does not have {_quote(ctx)}: this node sees fewer GPUs than "
        "the launch gives it."
    ]
    if tp:
        per_node = max(1, tp * pp // nnodes)
        how = f"--tp-size {tp}" + (f" x --pp-size {pp}" if pp > 1 else "") + f" / --nnodes {nnodes}"
        start = f", from --base-gpu-id {base}" if base else ""
        lines.append(
            f"The launch gives each node {per_node} GPU(s) ({how}{start}): GPU indices {base} to "
            f"{base + per_node - 1} must exist on every node."
        )
        m = _TP_RANK.search(ctx.error.rank or "")
        if m is not None:
            lines.append(f"TP{m.group(1)} asked for GPU {base + int(m.group(1)) % per_node}.")
    suggestions = [
        Suggestion(
            "CUDA_VISIBLE_DEVICES",
            None,
            "An environment variable: check that it (and `nvidia-smi -L` in the same environment; a "
            "container's --gpus) shows every GPU the node should use; HIP_VISIBLE_DEVICES on ROCm.",
        ),
        Suggestion(
            "--tp-size",
            None,
            "--tp-size (x --pp-size) is the total over all nodes: divided by --nnodes it must not exceed the "
            "GPUs each node has.",
        ),
    ]
    if nnodes > 1:
        suggestions.append(
            Suggestion("--nnodes", None, "Check --nnodes and --node-rank match on every node's command.")
        )
    if base:
        suggestions.append(
            Suggestion("--base-gpu-id", "0", f"GPUs are counted from {base}: the last ones may not exist.")
        )
    title = "A GPU index the launch needs does not exist"
    return Diagnosis(title, " ".join(lines), suggestions, ctx.error.error_class)


def _no_binary(ctx: Context, text: str) -> Diagnosis:
    rocm = "HIP" in text or "hip" in text or "gfx" in text
    detail = (
        f"A GPU kernel has no build for this GPU's architecture {_quote(ctx)}: the installed PyTorch/SGLang "
        "kernels were compiled for other GPUs (a newer or older generation, or another "
        + ("gfx target: ROCm images are built per MI series)." if rocm else "CUDA version).")
        + f" It failed while {phase_words(ctx.phase)}."
    )
    fix = (
        "Use the SGLang ROCm image (or build) for this GPU's gfx target (`rocminfo | grep gfx`), or build "
        "the kernels for it."
        if rocm
        else "Install the SGLang/PyTorch build for this GPU's compute capability and CUDA version, or use "
        "SGLang's Docker image for it."
    )
    title = "The GPU is not supported by these kernels"
    return Diagnosis(title, detail, [Suggestion(None, None, fix)], "other")


def _old_gpu(ctx: Context, capability: str) -> Diagnosis:
    detail = (
        f"This GPU's compute capability is below {capability}, the oldest SGLang supports {_quote(ctx)}: "
        f"no setting makes this release run on it (V100 and P100 are below it; T4, A10, L4, A100 and "
        "newer GPUs are not)."
    )
    return Diagnosis(
        "The GPU is older than SGLang supports",
        detail,
        [Suggestion(None, None, f"Run on GPUs of compute capability {capability} or newer.")],
        "other",
    )


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _selecting_flag(ctx: Context, package: str) -> str | None:
    """The launch's flag that chose the package (`--moe-a2a-backend deepep`, `--enable-deepep-moe`), read from
    the log's facts: a flag whose value names the package, or an on switch whose name does."""
    name = _norm(package.split(".")[0])
    if len(name) < 3:
        return None
    for dest, fact in SERVER_ARG_FACTS.items():
        value: Any = ctx.facts.get(fact)
        flag = "--" + dest.replace("_", "-")
        if dest.startswith("disable") or value in ("auto", "none", "None", ""):
            continue  # a switch off or a default chose nothing
        if isinstance(value, str) and name in _norm(value):
            return f"{flag} {value}"
        if value is True and name in _norm(dest):
            return flag
    return None


def _missing_package(ctx: Context, package: str) -> Diagnosis:
    flag = _selecting_flag(ctx, package)
    chosen = f", which {flag} selects" if flag else ", which the launch's flags or the model need"
    detail = (
        f"{package} is not installed in the environment the server runs in{chosen} {_quote(ctx)}. It failed "
        f"while {phase_words(ctx.phase)}."
    )
    suggestions = [
        Suggestion(
            None,
            None,
            f"Install {package} in that environment (the message may name where from), or use SGLang's "
            "Docker image, which ships SGLang's optional packages.",
        )
    ]
    if flag:
        suggestions.append(
            Suggestion(flag.split()[0], None, f"Or launch without {flag}: the feature that needs {package}.")
        )
    return Diagnosis(_MISSING, detail, suggestions, "other")


def _at_import(ctx: Context) -> bool:
    """It died importing modules (its traceback runs through a module being imported; without a traceback:
    SGLang logged nothing before the error, and launch_server's imports run before any record), where an API
    mismatch is between installed packages, not in the launch."""
    at_import = ctx.error.values.get("at_import")
    if at_import is not None:
        return bool(at_import)
    return ctx.phase == "starting" and not ctx.analysis.milestones and ctx.error.time is None


def _version_mismatch(ctx: Context) -> Diagnosis:
    message = ctx.error.text
    m = _FROM_PACKAGE.search(message)
    package = (m.group(1) or m.group(2)) if m else None
    if package is None and _TRANSFORMERS_NAME.search(message):
        package = "transformers"
    which = package or "a package SGLang imports"
    detail = (
        f"SGLang failed at import, calling {which} in a way its installed version does not accept "
        f"{_quote(ctx)}: that package's version does not match the one this SGLang was built against."
    )
    install = f"Install the {package} version" if package else "Install the package versions"
    suggestions = [
        Suggestion(
            None,
            None,
            f"{install} this SGLang pins (`pip install 'sglang[all]==<its version>'` reinstalls them; "
            "`pip check` lists conflicts), or use SGLang's Docker image without upgrading packages in it.",
        ),
        Suggestion(None, None, "Or upgrade SGLang to a release built for the newer package."),
    ]
    return Diagnosis(f"{_MISSING} (version mismatch)", detail, suggestions, "other")
