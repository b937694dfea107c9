"""`sgtui launch PROFILE --watch` against `sgtui sim-host`: ready exits 0, a failed launch exits 1 with its
diagnosis, a bad profile exits 2 with every problem."""

from __future__ import annotations

import asyncio
import io
import json
import re
import time
from pathlib import Path

import pytest

from tests.sim.simhost_process import free_port, running_sim_host, sgtui


def test_the_working_profile_is_followed_to_ready_and_exits_0(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        profile = host.profile("qwen36-27b-2xa6000-mrr8.yaml", server_port=free_port())
        result = sgtui("launch", str(profile), "--watch", config_dir=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith("preflight: FITS")  # checked first: fits, every check ok
    launched = next(i for i, line in enumerate(lines) if "] launched " in line)
    assert "launched qwen36-27b-2xa6000-mrr8 on sim (pct 129)" in lines[launched]
    assert all(": ok: " in line for line in lines[1:launched]), lines[:launched]
    kinds = [line.split("] ", 1)[1].split()[0] for line in lines[launched + 1 :] if "] " in line]
    for kind in ("server_args", "load_weight_end", "kv_cache_allocated", "cuda_graph_end", "ready"):
        assert kind in kinds, result.stdout
    assert kinds.index("load_weight_end") < kinds.index("kv_cache_allocated") < kinds.index("ready")
    found = re.search(r"load_weight_end .*mem_usage_gib=([\d.]+)", result.stdout)
    assert found is not None, result.stdout
    assert 24 < float(found.group(1)) < 27  # about the spec's 25.5 GiB per GPU for Qwen3.6-27B at TP 2
    assert lines[-1].split("] ", 1)[1].startswith("ready: ")


def test_the_0_5_9_profile_is_refused_with_exit_3_and_launches_to_its_predicted_failure_with_force(
    tmp_path: Path,
) -> None:
    """The preflight predicts SGLang 0.5.9's "Not enough memory": nothing is launched (exit 3, no run
    recorded); `--force --watch` launches it, and it fails with exactly that error (exit 1)."""
    with running_sim_host(tmp_path) as host:
        profile = host.profile("qwen36-27b-2xa6000.yaml", server_port=free_port())
        refused = sgtui("launch", str(profile), "--watch", "--json-events", config_dir=tmp_path)
        runs = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        forced = sgtui("launch", str(profile), "--force", "--watch", config_dir=tmp_path)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    events = [json.loads(line) for line in refused.stdout.splitlines()]
    pre = events[0]
    assert pre["event"] == "preflight" and pre["verdict"] == "fails"
    assert pre["error"].startswith("RuntimeError: Not enough memory")
    assert pre["fix"] is not None and pre["fix"][0].startswith("--")
    names = {c["name"]: c["ok"] for c in pre["checks"]}
    assert names == {"fit": False, "port": True, "gpus": True, "model_path": True, "sglang_release": True}
    assert [e["event"] for e in events] == ["preflight", "not_launched"]
    assert runs.returncode == 0 and json.loads(runs.stdout) == []

    assert forced.returncode == 1, forced.stdout + forced.stderr
    text = forced.stdout
    assert "preflight: FAILS: RuntimeError: Not enough memory" in text
    assert "--force: launching although the fit predicts it fails" in text
    assert "error (not_enough_memory)" in text and "diagnosis: " in text
    assert "failed: not_enough_memory" in text.splitlines()[-1]


def test_a_forced_launch_that_fails_is_diagnosed_with_the_fix_its_preflight_and_sgtui_fit_offered_first(
    tmp_path: Path,
) -> None:
    """One run, one first fix: the diagnosis after the failure leads with the preflight's fix (made with the
    target's release and live memory), and `sgtui fit` on the same inputs (the sim's A6000 pair, SGLang
    0.5.9, the model folder the sim serves, the profile's flags) offers the same one first and exits 3."""
    from sgtui.core.profiles import load_profile
    from sgtui.sim.scenarios import A6000_MIB

    with running_sim_host(tmp_path) as host:
        profile = host.profile("qwen36-27b-2xa6000.yaml", server_port=free_port())
        forced = sgtui("launch", str(profile), "--force", "--watch", "--json-events", config_dir=tmp_path)
    assert forced.returncode == 1, forced.stdout + forced.stderr
    events = [json.loads(line) for line in forced.stdout.splitlines()]
    pre = events[0]
    assert pre["event"] == "preflight" and pre["verdict"] == "fails" and pre["fix"] is not None
    diagnosis = next(e for e in events if e["event"] == "diagnosis")
    assert diagnosis["error_class"] == "not_enough_memory"
    first = diagnosis["suggestions"][0]
    assert [first["flag"], first["value"]] == [pre["fix"][0], str(pre["fix"][1])]

    model = Path(__file__).resolve().parents[1] / "sgtui" / "sim" / "models" / "Qwen3.6-27B"
    argv = load_profile(profile).argv
    assert A6000_MIB == 49140  # the sim's GPUs are the A6000 preset's size
    same = ["--gpu", "A6000", "--gpus", "2", "--sglang", "0.5.9", "--config", str(model)]
    fit = sgtui("fit", *same, "--json", "--", *argv)
    assert fit.returncode == 3, fit.stdout + fit.stderr
    report = json.loads(fit.stdout)
    cli_first = next(f for f in report["fixes"] if f["verdict"] == "fits")
    assert report["fixes"][0] == cli_first  # a fix that fits ranks first
    assert [cli_first["flag"], cli_first["value"]] == pre["fix"]


def test_a_port_in_use_on_the_target_refuses_the_launch_naming_the_port(tmp_path: Path) -> None:
    """The port check binds the asked port inside the container (the sim maps it to its own), where an
    old server still holds it: exit 3 before anything starts, the fit itself says it fits."""
    with running_sim_host(tmp_path, "--scenario", "port-in-use") as host:
        profile = host.profile("qwen36-27b-2xa6000-mrr8.yaml")
        result = sgtui("launch", str(profile), "--json-events", config_dir=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    pre = json.loads(result.stdout.splitlines()[0])
    assert pre["verdict"] == "fits"
    port = next(c for c in pre["checks"] if c["name"] == "port")
    assert not port["ok"] and port["message"].startswith("port 30000 is already in use")
    assert [json.loads(line)["event"] for line in result.stdout.splitlines()] == ["preflight", "not_launched"]


def test_gpus_held_by_another_process_are_named_and_their_memory_is_not_free_for_the_fit(
    tmp_path: Path,
) -> None:
    """Another user's process holds 20 GiB on GPU 1: the GPU check names it, and the fit is made with
    what is really free there (SGLang's minimum over ranks), not the card's size."""
    with running_sim_host(tmp_path, "--scenario", "other-user") as host:
        profile = host.profile("qwen36-27b-2xa6000-mrr8.yaml", server_port=free_port())
        result = sgtui("launch", str(profile), "--json-events", config_dir=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    pre = json.loads(result.stdout.splitlines()[0])
    gpus = next(c for c in pre["checks"] if c["name"] == "gpus")
    assert not gpus["ok"]
    assert "pid 4190001" in gpus["message"] and "/usr/bin/python3" in gpus["message"]
    assert "20480 MiB on GPU 1" in gpus["message"]
    assert pre["verdict"] == "fails"  # 20 GiB less on GPU 1 leaves too little for the weights and pools


def test_json_events_prints_one_object_per_event(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        host.profile("qwen36-27b-2xa6000-mrr8.yaml", server_port=free_port())
        result = sgtui("launch", "qwen36-27b-2xa6000-mrr8", "--watch", "--json-events", config_dir=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["event"] == "preflight" and events[0]["verdict"] == "fits" and events[0]["fix"] is None
    assert all(c["ok"] for c in events[0]["checks"]) and events[0]["error"] is None
    assert events[1]["event"] == "launched" and events[1]["run"]["target"] == {"kind": "pct", "id": "129"}
    milestones = [e for e in events if e["event"] == "milestone"]
    assert milestones[-1]["kind"] == "ready"
    weights = next(e for e in milestones if e["kind"] == "load_weight_end")
    assert 24 < weights["values"]["mem_usage_gib"] < 27 and weights["elapsed"] >= 0
    assert events[-1]["event"] == "ready"


def test_launch_without_watch_returns_once_the_run_is_detached(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        profile = host.profile("qwen36-27b-2xa6000-mrr8.yaml", server_port=free_port())
        result = sgtui("launch", str(profile), config_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    launched = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert len(launched) == 2 and "preflight: FITS" in launched[0] and "pid " in launched[1]


def test_a_bad_profile_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\nhost: sim\npython: /opt/sglang/venv/bin/python\n"
        "target:\n  kind: lxc\n  id: 129\n"
        "sglang:\n  model-path: /models/Qwen3.6-27B\n  tp-sise: 2\n"
    )
    result = sgtui("launch", str(bad), "--watch", config_dir=tmp_path)
    assert result.returncode == 2
    assert "bad.yaml:5" in result.stderr and "bad.yaml:9" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_profile_or_unknown_host_is_a_clear_error(tmp_path: Path) -> None:
    missing = sgtui("launch", "no-such-profile", config_dir=tmp_path)
    assert missing.returncode == 2 and "no-such-profile" in missing.stderr
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\nhost: nowhere\npython: /usr/bin/python3\nsglang:\n  model-path: /m\n")
    unknown = sgtui("launch", str(profile), config_dir=tmp_path)
    assert unknown.returncode == 2 and "unknown host 'nowhere'" in unknown.stderr


async def test_watch_resumes_after_the_connection_drops_without_losing_or_repeating_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgtui.commands.launch import Printer, launch
    from sgtui.sim.host import SimHost

    monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path))
    async with SimHost(speed=10) as host:
        written = host.write_config(tmp_path)
        profile = next(p for p in written.profiles if p.name == "qwen36-27b-2xa6000-mrr8.yaml")
        profile.write_text(profile.read_text().replace("port: 30000", f"port: {free_port()}"))
        out = io.StringIO()
        watch = asyncio.ensure_future(
            launch(profile, host=None, watch=True, printer=Printer(json_events=True, out=out), timeout=60)
        )
        deadline = time.monotonic() + 30
        while '"load_weight_begin"' not in out.getvalue():
            assert time.monotonic() < deadline and not watch.done(), out.getvalue()
            await asyncio.sleep(0.02)
        await host.server.abort_connections()
        rc = await asyncio.wait_for(watch, 60)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [e["kind"] for e in events if e["event"] == "milestone"]
    assert rc == 0, out.getvalue()
    assert len(kinds) == len(set(kinds)), kinds
    assert kinds[-1] == "ready" and "load_weight_end" in kinds and "kv_cache_allocated" in kinds


def test_a_diagnosis_prints_the_same_try_lines_for_one_node_and_for_a_node_of_many() -> None:
    """The multi-node watch names the node; what to try is the same as the single-node watch prints."""
    from sgtui.commands.launch import Printer
    from sgtui.core.logs.diagnosis.common import Diagnosis, Suggestion

    item = Diagnosis(
        "Not enough memory for the KV cache",
        "the pools need 3.1 GiB\n\nand 2.0 GiB are left",
        [
            Suggestion("--mem-fraction-static", "0.88", "more for the pools"),
            Suggestion(None, None, "free GPU 1"),
        ],
        "oom_kv",
    )
    single, multi = io.StringIO(), io.StringIO()
    Printer(json_events=False, out=single).diagnosis(item)
    Printer(json_events=False, out=multi).diagnosis(item, " (node 1 (b))", node_rank=1)
    body = [line.split("] ", 1)[1] if "] " in line else line for line in single.getvalue().splitlines()]
    assert body == [
        "diagnosis: Not enough memory for the KV cache",
        "  the pools need 3.1 GiB",
        "  and 2.0 GiB are left",
        "  try: --mem-fraction-static 0.88  (more for the pools)",
        "  also: free GPU 1",
    ]
    assert (
        multi.getvalue()
        .splitlines()[0]
        .endswith("diagnosis (node 1 (b)): Not enough memory for the KV cache")
    )
    assert multi.getvalue().splitlines()[1:] == single.getvalue().splitlines()[1:]
    event = io.StringIO()
    Printer(json_events=True, out=event).diagnosis(item, " (node 1 (b))", node_rank=1)
    data = json.loads(event.getvalue())
    assert (
        data["event"] == "diagnosis" and data["node_rank"] == 1 and data["suggestions"][0]["value"] == "0.88"
    )


async def test_the_watch_says_what_happened_to_a_container_that_took_the_run_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A docker run whose container was removed ends with docker's word on it, as `sgtui runs` shows."""
    from types import SimpleNamespace

    from sgtui.commands import watch as launch_cmd
    from sgtui.remote.run_records import RunStatus
    from sgtui.remote.runs import RunState

    class Gone:
        async def status(self, record: object) -> RunStatus:
            return RunStatus(RunState.DEAD, why="its container sglang was removed")

        async def read_rest(self, record: object, offset: int) -> SimpleNamespace:
            return SimpleNamespace(lines=[], end=offset)

    monkeypatch.setattr(launch_cmd, "STATUS_POLL_S", 0)
    out = io.StringIO()
    watch = launch_cmd.Watch(Gone(), SimpleNamespace(id="run-1"), launch_cmd.Printer(True, out), None)  # type: ignore[arg-type]
    await watch._poll_status()
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert watch.exited and events[0]["event"] == "note"
    assert events[0]["message"] == "its container sglang was removed"


def test_a_0_5_11_profile_is_started_with_sglang_serve_and_the_stand_in_accepts_it(tmp_path: Path) -> None:
    """0.5.10 onwards prefer `sglang serve` (core/sglang/entrypoint.py); the sim's 0.5.11 venv has the
    `sglang` console script, and its `serve` reaches ready like `-m sglang.launch_server` does."""
    with running_sim_host(tmp_path) as host:
        host.profile("qwen36-27b-2xa6000-0511.yaml", server_port=free_port())
        result = sgtui("launch", "qwen36-27b-2xa6000-0511", "--watch", "--json-events", config_dir=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    launched = next(e for e in events if e["event"] == "launched")
    assert launched["run"]["argv"][:2] == ["/opt/sglang-0.5.11/venv/bin/sglang", "serve"]
    assert events[-1]["event"] == "ready"


def test_a_host_that_cannot_be_reached_is_a_failure_not_a_prediction(tmp_path: Path) -> None:
    """Exit 1 with the connection's own words: nothing was predicted about the launch (3 means that)."""
    closed = free_port()  # nothing listens there
    (tmp_path / "hosts.yaml").write_text(f"dead:\n  hostname: 127.0.0.1\n  port: {closed}\n  user: root\n")
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\nhost: dead\npython: /usr/bin/python3\nsglang:\n  model-path: /m\n")
    result = sgtui("launch", str(profile), "--json-events", config_dir=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["error"]


@pytest.mark.parametrize("option", ["--timeout", "--stall-after", "--give-up-after"])
@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_a_limit_that_could_never_fire_is_refused_by_name(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """NaN compares false with everything: a `<= 0` check would let it through, and the limit never fire."""
    from sgtui.cli import main

    assert main(["launch", "any-profile", "--watch", option, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sgtui launch: {option} ") and "positive number of seconds" in err


def test_a_second_launch_of_a_running_profile_names_the_run_that_holds_its_port_and_gpus(
    tmp_path: Path,
) -> None:
    """Not "held by others": the holder is sgtui's own run on that target, named so the user stops it."""
    with running_sim_host(tmp_path) as host:
        profile = host.profile("qwen36-27b-2xa6000-mrr8.yaml", server_port=free_port())
        first = sgtui("launch", str(profile), "--json-events", config_dir=tmp_path)
        assert first.returncode == 0, first.stdout + first.stderr
        run_id = next(json.loads(x) for x in first.stdout.splitlines() if '"launched"' in x)["run"]["id"]
        try:
            for _ in range(60):  # until its server holds memory on the GPUs (not at once on a loaded box)
                sample = sgtui("fleet", "--once", "--json", "--host", "sim", config_dir=tmp_path)
                gpus = [g for line in sample.stdout.splitlines() for g in json.loads(line).get("gpus") or []]
                if gpus and min(g["used_mib"] or 0 for g in gpus) > 0:
                    break
                time.sleep(0.5)
            again = sgtui("launch", str(profile), "--json-events", config_dir=tmp_path)
            assert again.returncode == 3, again.stdout + again.stderr
            checks = {c["name"]: c for c in json.loads(again.stdout.splitlines()[0])["checks"]}
            held = [c for c in checks.values() if not c["ok"] and c["name"] in ("gpus", "port")]
            assert held and all(
                f"sgtui's own run {run_id} (qwen36-27b-2xa6000-mrr8) is running on pct 129" in c["message"]
                for c in held
            ), held
        finally:
            sgtui("stop", run_id, "--profile", str(profile), "--yes", config_dir=tmp_path, timeout=90)
