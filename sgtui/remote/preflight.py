"""The preflight of a single-node launch, read on the target: the fit with the target's release and live
GPU memory, and the checks (port free, GPUs not held by others, model path, installed release), all at once.

Each check is one `core.preflight.Check` (one line for people); `run_preflight` gathers them in parallel and
returns the `Preflight` every launch path shows (`sgtui launch`, its `--json-events` first event, the TUI's
question). The pieces are shared with the multi-node precheck (`multinode_checks.py`): the model path
probe, the port listener, the GPU holders (`run_gpus.gpus_in_use`).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sgtui.core import shell
from sgtui.core.bounded import BoundedInputError, load_json, parse_json_or_none
from sgtui.core.preflight import Check, LiveGpu, Preflight, from_fit
from sgtui.remote.connection import RemoteError, Transport
from sgtui.remote.gpu import GpuSampler, GpuSnapshot
from sgtui.remote.multinode import _LISTENER, IDLE_MIB
from sgtui.remote.run_gpus import gpus_in_use, holder_parts
from sgtui.remote.targets import Target, sglang_version

HUB_ENV = ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HOME", "HF_HUB_CACHE")


@dataclass(frozen=True)
class ModelRead:
    """What the target has at a model path: whether it exists, its config.json and checkpoint size.

    For a hub id (`hub`), `path` is the snapshot folder found in the target's Hugging Face cache, if any;
    `offline` and `token` say what the run's environment holds."""

    path: str
    exists: bool
    config: dict[str, Any] | None = None
    weight_bytes: int | None = None
    problem: str = ""  # why the config could not be read (the path exists)
    hub: bool = False
    offline: bool = False
    token: bool = False


def is_hub_id(model_path: str) -> bool:
    """`org/name` (what SGLang downloads) rather than a folder on the target."""
    return not model_path.startswith(("/", "~", ".")) and model_path.count("/") == 1


def _model_script(model_path: str, env: Mapping[str, str]) -> str:
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items() if k in HUB_ENV)
    if is_hub_id(model_path):
        org, name = model_path.split("/")
        cache = '"${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}"'
        snapshots = f"{cache}/{shlex.quote(f'models--{org}--{name}')}/snapshots"
        find = (
            f"p=$(ls -d {snapshots}/*/ 2>/dev/null | tail -n 1)\n"
            'p=${p%/}\ntok=false\n[ -n "${HF_TOKEN:-}${HUGGING_FACE_HUB_TOKEN:-}" ] && tok=true\n'
            '[ -s "${HF_HOME:-$HOME/.cache/huggingface}/token" ] && tok=true\n'
            'echo "@@hub {\\"offline\\": \\"${HF_HUB_OFFLINE:-}\\", '
            '\\"token\\": $tok, \\"path\\": \\"$p\\"}"\n'
            '[ -n "$p" ] || { echo "@@sgtui {\\"exists\\": false}"; exit 0; }\n'
        )
    else:
        find = f"p={shlex.quote(model_path.rstrip('/') or '/')}\n"
    return (
        exports
        + find
        + '[ -e "$p" ] || { echo "@@sgtui {\\"exists\\": false}"; exit 0; }\n'
        + 'echo "@@sgtui {\\"exists\\": true}"\n'
        + 'cat "$p/config.json" || exit 3\necho; echo @@index\n'
        + 'cat "$p/model.safetensors.index.json" 2>/dev/null\necho\necho @@end\n'
    )


async def read_model(
    conn: Transport, target: Target, model_path: str, env: Mapping[str, str] | None = None
) -> ModelRead:
    """Does `model_path` exist on the target (inside the container), and its config.json and checkpoint
    size (the safetensors index) when readable. A hub id is looked up in the target's Hugging Face cache."""
    result = await conn.run(target.script(_model_script(model_path, env or {})), timeout=60)
    hub_info: dict[str, Any] = {}
    for line in result.stdout.splitlines():
        if line.startswith("@@hub "):
            got = parse_json_or_none(line[len("@@hub ") :])  # from the target: bounded, never trusted
            hub_info = got if isinstance(got, dict) else hub_info
    hub = is_hub_id(model_path)
    offline = str(hub_info.get("offline", "")).lower() not in ("", "0", "false", "no", "off")
    path = str(hub_info.get("path") or "") if hub else model_path
    found = shell.parse_marker(result.stdout)
    rest = result.stdout.partition('@@sgtui {"exists": true}')[2]
    common = {"hub": hub, "offline": offline, "token": bool(hub_info.get("token"))}
    if found is None:
        tail = (result.stderr or result.stdout).strip()[-200:] or f"exit {result.rc}"
        raise RemoteError(f"cannot check the model path {model_path} there ({tail})")
    if not found.get("exists"):
        return ModelRead(path, False, **common)
    if "@@end" not in rest:
        why = f"{path}/config.json is not readable there: {result.stderr.strip()[-200:]}"
        return ModelRead(path, True, problem=why, **common)
    config_text, _, after = rest.partition("@@index")
    index_text = after.partition("@@end")[0].strip()
    try:  # a shared disk's file: depth, digits and size bounded, one line when past them
        config = load_json(config_text, f"{path}/config.json")
    except BoundedInputError as exc:
        return ModelRead(path, True, problem=str(exc), **common)
    except ValueError as exc:
        return ModelRead(path, True, problem=f"{path}/config.json is not JSON ({exc})", **common)
    weight_bytes = None
    if index_text:
        index = parse_json_or_none(index_text, max_bytes=64 << 20)
        with contextlib.suppress(ValueError, AttributeError, KeyError, TypeError):
            weight_bytes = int(index["metadata"]["total_size"])
    return ModelRead(path, True, config, weight_bytes, **common)


def model_check(model_path: str, read: ModelRead) -> Check:
    """The model path exists there (or, for a hub id, what a download would need)."""
    if read.hub:
        env = "HF_HUB_OFFLINE is set" if read.offline else "online"
        token = "a token is present" if read.token else "no token (a gated model will be refused)"
        if read.exists:
            return Check(
                "model_path", True, f"{model_path} is a hub id, in the target's cache ({env}; {token})"
            )
        if read.offline:
            return Check(
                "model_path",
                False,
                f"{model_path} is a hub id, not in the target's cache, and HF_HUB_OFFLINE is set: download "
                "it there first, or unset HF_HUB_OFFLINE",
            )
        return Check("model_path", True, f"{model_path} is a hub id: SGLang downloads it ({token})", False)
    if not read.exists:
        return Check("model_path", False, f"{model_path} does not exist on the target: copy the model to it")
    if read.problem:
        return Check("model_path", False, read.problem, blocking=False)
    return Check("model_path", True, f"{model_path} exists (config.json read)")


def listen_failure(marker: dict[str, Any] | None, port: int) -> str | None:
    """The port listener's answer (`multinode._LISTENER`) as a sentence when it could not listen."""
    if marker is None or "error" not in marker:
        return None
    what = "is already in use" if marker["error"] == "EADDRINUSE" else "cannot be listened on"
    return f"port {port} {what} ({marker.get('message')})"


async def port_check(conn: Transport, target: Target, python: str, port: int) -> Check:
    """The server's port is free inside the target: the target's own python binds it for a moment, on
    every interface (as strict as any `--host`)."""
    cmd = target.command([python, "-c", _LISTENER, str(port), "0", "0"])
    try:
        result = await conn.run(cmd, timeout=60)
    except RemoteError as exc:
        return Check("port", False, f"cannot check port {port}: {exc}", blocking=False)
    marker = shell.parse_marker(result.stdout)
    failed = listen_failure(marker, port)
    if failed is not None:
        return Check("port", False, f"{failed}: stop what holds it, or pick another --port")
    if marker is None:
        tail = (result.stderr or result.stdout).strip()[-200:] or f"exit {result.rc}"
        return Check("port", False, f"cannot check port {port} ({tail})", blocking=False)
    return Check("port", True, f"port {port} is free")


def run_gpu_indices(profile: Any) -> list[int]:
    """The GPUs the run asks for: the profile's `gpus`, else CUDA_VISIBLE_DEVICES in its env, else the
    ones SGLang picks (`--base-gpu-id` on: tp x pp of this node)."""
    if profile.gpus:
        return list(profile.gpus)
    visible = str(profile.env.get("CUDA_VISIBLE_DEVICES", "")).split(",")
    if all(v.strip().isdigit() for v in visible):
        return [int(v) for v in visible]
    spec = profile.spec
    base = int(spec.values.get("--base-gpu-id") or 0)
    count = max(spec.tp_size * spec.pp_size // max(getattr(profile, "nnodes", 1) or 1, 1), 1)
    return list(range(base, base + count))


async def read_gpus(conn: Transport, wanted: list[int]) -> tuple[Check, list[LiveGpu], str]:
    """(the GPU check, the asked GPUs as read now, why they could not be read) from one nvidia-smi
    reading and the process list: a GPU another process holds is named with its holders."""
    sampler = GpuSampler(conn)
    snap: GpuSnapshot = await sampler.query()
    if snap.problem is not None:
        why = f"{snap.problem.state.value}: {snap.problem.detail}"
        return Check("gpus", False, f"cannot read the GPUs ({why})", blocking=False), [], why
    have = {g.index: g for g in snap.gpus}
    missing = [i for i in wanted if i not in have]
    if missing:
        text = f"GPU {', '.join(map(str, missing))} asked for, the host has {len(snap.gpus)}"
        return Check("gpus", False, text), [], text
    try:
        procs = await sampler.processes()
    except RemoteError as exc:
        procs, listed = [], f" (holders not listed: {exc})"
    else:
        listed = ""
    holders, busy = gpus_in_use(snap, procs, set(wanted), IDLE_MIB)
    live = [
        LiveGpu(i, have[i].name, int(have[i].memory_total_mib.value or 0), have[i].memory_used_mib.value)
        for i in wanted
    ]
    which = ", ".join(map(str, wanted))
    if any(g.total_mib <= 0 for g in live):
        return Check("gpus", False, f"GPU {which}: nvidia-smi gave no memory size"), [], "no GPU size"
    if holders or busy:
        parts = holder_parts(holders, busy)
        return Check("gpus", False, f"GPU {which} held by others: " + "; ".join(parts)), live, ""
    return Check("gpus", True, f"GPU {which} free ({live[0].name}){listed}"), live, ""


async def release_check(conn: Transport, target: Target, profile: Any) -> tuple[Check, str | None]:
    """The installed SGLang against the release the profile was written for (`sglang_version`); a flag
    the installed release does not know is a failure (SGLang would refuse it)."""
    from sgtui.core.errors import UserError
    from sgtui.core.sglang.flags import parse_argv

    try:
        installed = await sglang_version(conn, target, profile.python)
    except (RemoteError, UserError) as exc:
        return Check("sglang_release", False, str(exc)), None
    if installed is None:
        return Check("sglang_release", False, f"SGLang is not installed for {profile.python}"), None
    written = profile.sglang_version
    if written is None:
        return Check("sglang_release", True, f"SGLang {installed} (the profile names no release)"), installed
    if written == installed:
        return Check("sglang_release", True, f"SGLang {installed}, the release the profile names"), installed
    try:
        parse_argv(profile.argv, installed)
    except UserError as exc:
        return Check(
            "sglang_release", False, f"SGLang {installed} installed, profile written for {written}: {exc}"
        ), installed
    return (
        Check(
            "sglang_release",
            False,
            f"SGLang {installed} installed, the profile was written for {written}: the fit uses "
            f"{installed}'s rules (sgtui flags --diff {written} {installed} shows what changed)",
            blocking=False,
        ),
        installed,
    )


@dataclass(frozen=True)
class PreflightResult:
    """The preflight and the fit report behind it (None when the fit could not be computed)."""

    preflight: Preflight
    report: Any = None


@dataclass(frozen=True)
class TargetFacts:
    """What the checks read on the target: their lines, and what the fit needs from there."""

    checks: list[Check]
    live: list[LiveGpu]
    installed: str | None
    model: ModelRead | None
    why_no_fit: str  # "" when the fit can be made from these


async def target_checks(conn: Transport, target: Target, profile: Any, *, port: bool = True) -> TargetFacts:
    """Every target check of a single-node launch (node 0 of a multi-node one), in parallel."""
    model_path = str(profile.spec.model_path or "")
    wanted = run_gpu_indices(profile)

    async def model() -> ModelRead | BaseException:
        try:
            return await read_model(conn, target, model_path, profile.env)
        except RemoteError as exc:
            return exc

    async def noport() -> None:
        return None

    (release, installed), (gpu_check, live, gpu_why), read, port_result = await asyncio.gather(
        release_check(conn, target, profile),
        read_gpus(conn, wanted),
        model(),
        port_check(conn, target, profile.python, profile.spec.port) if port else noport(),
    )
    checks = [c for c in (port_result, gpu_check) if c is not None]
    checks = await _name_own_runs(conn, target, profile, checks)
    if isinstance(read, BaseException):
        checks.append(Check("model_path", False, str(read), blocking=False))
        why = f"the model config could not be read ({read})"
        read = None
    else:
        checks.append(model_check(model_path, read))
        why = _why_no_model(model_path, read)
    checks.append(release)
    if not model_path:
        why = "the profile has no --model-path"
    if gpu_why and not live:
        why = f"no GPU reading on the target ({gpu_why})"
    return TargetFacts(checks, live, installed, read, why)


OWN_RUNS_LOOKED_AT = 8  # the newest records whose processes a held port or GPU makes the preflight check


async def _name_own_runs(conn: Transport, target: Target, profile: Any, checks: list[Check]) -> list[Check]:
    """A port or GPUs held by sgtui's own run on this target (the same profile launched twice, a run left
    from yesterday): the failing check says which run, so the user stops that run rather than hunt for
    "others". Only a live run that asked for one of these GPUs, or serves on this port, is named. Best
    effort: a listing that fails adds nothing."""
    from dataclasses import replace

    from sgtui.core.logs.prefix import strip_controls
    from sgtui.remote.runs import RunManager, RunState
    from sgtui.remote.serving import run_port

    wanted, port = set(run_gpu_indices(profile)), profile.spec.port or 30000

    def holds(check: Check, run: Any) -> bool:
        if check.name == "gpus":
            return "held by others" in check.message and bool(wanted & set(run.gpus))
        return check.name == "port" and "already in use" in check.message and run_port(run.argv) == port

    if not any(c.name in ("gpus", "port") and not c.ok for c in checks):
        return checks
    runs_dir = profile.runs_dir or getattr(getattr(conn, "host", None), "runs_dir", None)
    manager = RunManager(conn, target, runs_dir)
    try:
        records = [r for r in await manager.list_runs() if r.foreign is None][-OWN_RUNS_LOOKED_AT:]
        states = await asyncio.gather(*(manager.status(r) for r in records))
    except (RemoteError, OSError):
        return checks
    live = [r for r, s in zip(records, states, strict=True) if s.state is RunState.RUNNING]
    out = []
    for check in checks:
        mine = [r for r in reversed(live) if not check.ok and holds(check, r)]
        if mine:
            said = ", ".join(r.id + (f" ({strip_controls(r.profile)})" if r.profile else "") for r in mine)
            check = replace(check, message=f"{check.message}; sgtui's own run {said} is running on "
                            f"{target.label}: stop it first")  # fmt: skip
        out.append(check)
    return out


async def run_preflight(
    conn: Transport, target: Target, profile: Any, *, port: bool = True
) -> PreflightResult:
    """Every check of a single-node launch in parallel, then the fit with what they read: the installed
    release's rules, the asked GPUs' size and the memory already in use on them."""
    facts = await target_checks(conn, target, profile, port=port)
    read = facts.model
    if facts.why_no_fit or read is None or read.config is None:
        return PreflightResult(from_fit(None, facts.checks, facts.why_no_fit or "no model config"))
    version = facts.installed or profile.sglang_version or "0.5.11"
    return _with_fit(profile, read, facts.live, version, facts.checks)


def _why_no_model(model_path: str, read: ModelRead) -> str:
    if read.config is not None:
        return ""
    if read.hub and not read.exists:
        return f"{model_path} is a hub id not in the target's cache: its config.json is not there to read"
    if not read.exists:
        return f"{model_path} does not exist on the target"
    return f"an unreadable model config ({read.problem})"


def _with_fit(
    profile: Any, read: ModelRead, live: list[LiveGpu], version: str, checks: list[Check]
) -> PreflightResult:
    from sgtui.core.errors import UserError
    from sgtui.core.model import model_facts_from_config
    from sgtui.core.preflight import fit_on_target

    try:
        facts = model_facts_from_config(read.config or {}, weight_bytes=read.weight_bytes)
        nnodes = getattr(profile, "nnodes", 1) or 1  # TP across nodes: each GPU still holds 1/tp
        n_gpus = len(profile.gpus) * nnodes if profile.gpus else None
        report = fit_on_target(profile.spec, facts, live, version=version, n_gpus=n_gpus)
    except UserError as exc:
        return PreflightResult(from_fit(None, checks, f"the fit refused its inputs ({exc})"))
    return PreflightResult(from_fit(report, checks), report)
