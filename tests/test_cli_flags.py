"""`sgtui flags`: a release's flags, what changed between two releases, and the target's own table."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from sgtui.cli import main
from tests.sim.simhost_process import running_sim_host, sgtui


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["flags", *argv])
    return rc, out.getvalue(), err.getvalue()


def test_a_release_lists_its_own_flags_with_deprecations() -> None:
    rc, out, _ = run("--sglang", "0.5.18", "cuda-graph-max")
    assert rc == 0
    assert out.splitlines()[0] == "SGLang 0.5.18: 4 flags (shipped 0.5.18)"
    assert "  --cuda-graph-max-bs INT  deprecated: use --cuda-graph-max-bs-decode" in out
    assert "--attn-dp-size" not in run("--sglang", "0.5.18")[1]


def test_a_version_without_a_table_says_which_one_it_uses() -> None:
    rc, out, _ = run("--sglang", "0.5.24.dev3", "--json")
    data = json.loads(out)
    assert rc == 0 and data["table"] == "nearest older 0.5.23 (offline)" and "0.5.24.dev3" in data["note"]
    assert any(f["name"] == "--attn-dp-size" for f in data["flags"])


def test_diff_says_why_an_old_command_fails_on_the_new_release() -> None:
    rc, out, _ = run("--diff", "0.5.13", "0.5.20")
    assert rc == 0
    assert "  --mamba-scheduler-strategy -> --mamba-radix-cache-strategy" in out
    assert "  --disable-piecewise-cuda-graph -> --cuda-graph-backend-prefill=disabled" in out
    assert "  --hybrid-kvcache-ratio" in out.split("removed (")[1].split("added (")[0]
    rc, out, _ = run("--diff", "0.5.20", "0.5.22", "--json")
    data = json.loads(out)
    # the new flag comes in as the deprecated one's replacement, not as a bare addition
    assert {"old": "--enable-dp-attention", "new": "--attn-dp-size", "use": "--attn-dp-size <dp-size>"} in (
        data["renamed"]
    )
    assert "--attn-dp-size" not in data["added"]
    assert {"flag": "--enable-dp-attention", "use": "--attn-dp-size <dp-size>"} in data["deprecated"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give one of --sglang VERSION, --profile P, --host H --python PATH, or --diff A B"),
        (("--sglang", "0.5.9", "--diff", "0.5.9", "0.5.11"), "(got --sglang, --diff)"),
        (("--sglang", "newest"), "SGLang version 'newest' is not a version number"),
        (("--host", "h"), "--host h: also give --python PATH"),
        (("--host", "h", "--python", "/p", "--target", "lxc:1"), "--target 'lxc:1': write pct:VMID"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: tuple[str, ...], message: str) -> None:
    rc, out, err = run(*argv)
    assert rc == 2 and out == "" and message in err and err.count("\n") == 1


def test_a_profile_lists_the_table_its_target_prints(tmp_path: Path) -> None:
    """The sim's SGLang has a flag no shipped release has: it shows, and the header says where it is from."""
    with running_sim_host(tmp_path) as host:
        profile = host.profile("qwen36-27b-2xa6000.yaml", server_port=30000)
        result = sgtui("flags", "--profile", str(profile), "sim-", config_dir=tmp_path)
        wrong = sgtui("flags", "--profile", str(profile), "--python", "/opt/no/python", config_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "SGLang 0.5.9: 1 flags (from the target (0.5.9))"
    assert "--sim-log-note STR" in result.stdout
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
