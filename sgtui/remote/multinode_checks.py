"""Pre-launch checks for a multi-node run: every node in parallel, every problem at once, one line each.

They catch before launch what otherwise hangs a multi-node start for minutes in "Init torch distributed
begin." or fails on one node only: a node left on another SGLang release, a model missing on one node,
too few free GPUs on a node, mixed GPU types, and a dist-init port that is taken on node 0 or that the other
nodes cannot reach. Reachability is tried FROM each other node (bash's /dev/tcp) while node 0 listens on
the port for a moment, the way torch's TCPStore will.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Sequence

from sgtui.core import shell
from sgtui.core.bounded import short_repr
from sgtui.core.profiles.nodes import format_address, parse_address
from sgtui.remote.connection import RemoteError
from sgtui.remote.gpu import GpuSampler
from sgtui.remote.multinode import _LISTENER, IDLE_MIB, MultiNode, NodeProblem, NodeRun, _reason
from sgtui.remote.preflight import listen_failure, read_model
from sgtui.remote.targets import sglang_version

PORT_CHECK_S = 5.0  # how long a node tries to reach the dist-init port before calling it unreachable
LISTEN_S = 12.0  # how long node 0's probe listener waits for the other nodes


async def precheck(mn: MultiNode, dist_init_addr: str) -> list[NodeProblem]:
    """Check every node in parallel; every problem found, one line each naming its node: the same SGLang
    version everywhere, the model path on each node, enough free GPUs per node, GPU types alike, and the
    dist-init port free on node 0 and reachable from each other node (tried from that node)."""
    results = await asyncio.gather(
        _versions(mn),
        *(_model_path(mn, n) for n in mn.nodes),
        _gpus(mn),
        _port(mn, dist_init_addr),
    )
    problems: list[NodeProblem] = []
    for found in results:
        problems.extend(found)
    return sorted(problems, key=lambda p: p.rank)


def _problem(node: NodeRun, message: str) -> NodeProblem:
    return NodeProblem(node.rank, node.host, f"{node.label}: {message}")


async def _versions(mn: MultiNode) -> list[NodeProblem]:
    python = mn.profile.python
    found = await asyncio.gather(
        *(sglang_version(n.conn, n.target, python) for n in mn.nodes), return_exceptions=True
    )
    problems: list[NodeProblem] = []
    versions: dict[int, str] = {}
    for node, version in zip(mn.nodes, found, strict=True):
        if isinstance(version, BaseException):
            problems.append(_problem(node, _reason(version)))
        elif version is None:
            problems.append(_problem(node, f"SGLang is not installed for {python}"))
        else:
            versions[node.rank] = version
    if len(set(versions.values())) > 1:
        reference = versions.get(0) or next(iter(versions.values()))
        ref_rank = 0 if 0 in versions else next(iter(versions))
        for node in mn.nodes:
            version = versions.get(node.rank)
            if version is not None and version != reference:
                problems.append(
                    _problem(
                        node,
                        f"SGLang {version}, but node {ref_rank} has {reference}: every node must run the "
                        "same SGLang version (install it there, or point `python:` at the same release)",
                    )
                )
    return problems


async def _model_path(mn: MultiNode, node: NodeRun) -> list[NodeProblem]:
    path = mn.profile.sglang.get("--model-path")
    if not isinstance(path, str) or not path.startswith("/"):
        return []  # a Hugging Face id: each node downloads it (or finds it in its cache)
    try:
        found = await read_model(node.conn, node.target, path)
    except RemoteError as exc:
        return [_problem(node, _reason(exc))]
    if not found.exists:
        return [_problem(node, f"the model path {path} does not exist there: copy the model to it")]
    return []


async def _gpus(mn: MultiNode) -> list[NodeProblem]:
    per_node = max(mn.profile.spec.tp_size * mn.profile.spec.pp_size // len(mn.nodes), 1)
    found = await asyncio.gather(*(_free_gpus(n, mn.profile.gpus) for n in mn.nodes))
    problems: list[NodeProblem] = []
    names: dict[int, str] = {}
    for node, (free, names_used, problem) in zip(mn.nodes, found, strict=True):
        if problem is not None:
            problems.append(_problem(node, problem))
            continue
        if names_used:
            names[node.rank] = names_used
        if len(free) < per_node:
            split = f"tp {mn.profile.spec.tp_size} / {len(mn.nodes)} nodes"
            problems.append(
                _problem(
                    node,
                    f"needs {per_node} free GPU(s) ({split}), has {len(free)} free"
                    + (f" (GPU {', '.join(map(str, free))})" if free else ""),
                )
            )
    if len(set(names.values())) > 1:
        ref_rank = min(names)
        for node in mn.nodes:
            name = names.get(node.rank)
            if name is not None and name != names[ref_rank]:
                problems.append(
                    _problem(
                        node,
                        f"GPU type {name}, but node {ref_rank} has {names[ref_rank]}: tensor parallelism "
                        "across nodes needs the same GPU type everywhere",
                    )
                )
    return problems


async def _port(mn: MultiNode, dist_init_addr: str) -> list[NodeProblem]:
    parsed = parse_address(dist_init_addr)
    head = mn.head
    if parsed is None:
        return [_problem(head, f"dist-init address {short_repr(dist_init_addr)} is not HOST:PORT")]
    host, port = parsed
    listener = head.target.command(
        [mn.profile.python, "-c", _LISTENER, str(port), str(len(mn.workers)), str(LISTEN_S)]
    )
    try:
        async with head.conn.stream(listener, long_lived=False) as proc:
            text = await _read_until(proc, ("@@listening", "@@sgtui"), timeout=60)
            failed = listen_failure(shell.parse_marker(text), port)
            if failed is not None:
                return [
                    _problem(
                        head,
                        f"dist-init {failed}: stop what holds it, or pick another port in `dist_init_addr`",
                    )
                ]
            if "@@listening" not in text:
                return [_problem(head, f"cannot probe the dist-init port {port}: {text.strip()[-200:]}")]
            reached = await asyncio.gather(*(_reach(n, host, port) for n in mn.workers))
            await _read_until(proc, ("@@sgtui",), timeout=LISTEN_S + 5)  # let it finish
    except RemoteError as exc:
        return [_problem(head, _reason(exc))]
    problems: list[NodeProblem] = []
    for node, why in zip(mn.workers, reached, strict=True):
        if why is not None:
            problems.append(
                _problem(
                    node,
                    f"cannot reach the dist-init address {format_address(host, port)} ({why}); "
                    "open that port between the nodes, or set `dist_init_addr` to an address of "
                    f"{head.label} they can reach",
                )
            )
    return problems


def _tail(result: object) -> str:
    stdout = getattr(result, "stdout", "") or ""
    stderr = getattr(result, "stderr", "") or ""
    return (stderr or stdout).strip()[-200:] or f"exit {getattr(result, 'rc', None)}"


async def _read_until(proc: object, needles: Sequence[str], timeout: float) -> str:
    text = ""
    read = proc.read  # type: ignore[attr-defined]

    async def loop() -> str:
        nonlocal text
        while not any(n in text for n in needles):
            data = await read(4096)
            if not data:
                break
            text += data.decode("utf-8", "replace")
        return text

    try:
        return await asyncio.wait_for(loop(), timeout)
    except TimeoutError:
        return text


async def _reach(node: NodeRun, host: str, port: int) -> str | None:
    """None when `node` opens a TCP connection to host:port (from the node itself), else why not."""
    probe = shlex.quote(f"exec 3<>/dev/tcp/{host}/{port}")
    script = (
        f"e=$(timeout {PORT_CHECK_S:g} bash -c {probe} 2>&1); r=$?\n"
        'case "$e" in *[Rr]efused*) k=refused;; *"No route"*|*[Uu]nreachable*) k=noroute;; '
        "*[Nn]ame*|*resolve*) k=name;; *) k=other;; esac\n"
        'echo "@@sgtui {\\"rc\\": $r, \\"kind\\": \\"$k\\"}"\n'
    )
    try:
        result = await node.conn.run(node.target.script(script), timeout=PORT_CHECK_S + 30)
    except RemoteError as exc:
        return _reason(exc)
    marker = shell.parse_marker(result.stdout)
    if marker is None:
        return f"the check did not run: {_tail(result)}"
    rc = int(marker.get("rc", 1))
    if rc == 0:
        return None
    if rc in (126, 127):
        return "could not test it there: `timeout` or bash is missing on that node"
    if rc == 124:
        return f"no answer within {PORT_CHECK_S:g} s: a firewall drops it, or the address is not node 0's"
    return {
        "refused": "connection refused: nothing listens there, so it is not node 0's address or port",
        "noroute": "no route to that address",
        "name": f"the name {host} does not resolve there",
    }.get(str(marker.get("kind")), f"the connection failed (exit {rc})")


async def _free_gpus(node: NodeRun, wanted: Sequence[int] | None) -> tuple[list[int], str, str | None]:
    """(free GPU indices among `wanted` (all when None), the GPU type name, a problem line or None)."""
    sampler = GpuSampler(node.conn)
    snap = await sampler.query()
    if snap.problem is not None:
        return [], "", f"cannot read its GPUs: {snap.problem.state.value} ({snap.problem.detail})"
    try:
        procs = await sampler.processes()
    except RemoteError as exc:
        return [], "", _reason(exc)
    busy = {p.gpu_index for p in procs}
    gpus = [g for g in snap.gpus if wanted is None or g.index in wanted]
    missing = sorted(set(wanted or []) - {g.index for g in snap.gpus})
    if missing:
        return [], "", f"has no GPU {', '.join(map(str, missing))} (it has {len(snap.gpus)})"
    free = [
        g.index
        for g in gpus
        if g.index not in busy and g.memory_used_mib.value is not None and g.memory_used_mib.value <= IDLE_MIB
    ]
    names = sorted({g.name for g in gpus})
    return free, ", ".join(names), None
