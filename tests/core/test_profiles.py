"""Profiles: YAML in, every problem reported at once with its line, atomic saves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sgtui.core.errors import UserError
from sgtui.core.profiles import (
    Problem,
    Profile,
    ProfileError,
    Target,
    dump_profile,
    list_profiles,
    load_profile,
    parse_profile,
    save_profile,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "profiles").glob("*.yaml"))

GOOD = """\
name: qwen
host: pve
target: {kind: pct, id: 129}
python: /opt/sglang/bin/python
sglang_version: "0.5.9"
env:
  CUDA_DEVICE_ORDER: PCI_BUS_ID
  NCCL_P2P_DISABLE: 1
gpus: [0, 1]
sglang:
  model-path: /models/Qwen3.6-27B
  tp_size: 2
  mem-fraction-static: 0.85
  speculative-algorithm: NEXTN
  disable-radix-cache: true
  enable-torch-compile: false
  cuda-graph-bs: [1, 2, 4]
  json-model-override-args: {rope_scaling: {factor: 2.0}}
"""


def problems_of(text: str, version_line: str = "") -> list[Problem]:
    with pytest.raises(ProfileError) as info:
        parse_profile(text + version_line, "p.yaml")
    return info.value.problems


def test_a_good_profile_loads_typed() -> None:
    profile = parse_profile(GOOD, "good.yaml")
    assert profile.name == "qwen" and profile.host == "pve"
    assert profile.target == Target("pct", 129)
    assert profile.python == "/opt/sglang/bin/python"
    assert profile.sglang_version == "0.5.9"
    assert profile.env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NCCL_P2P_DISABLE": "1"}
    assert profile.gpus == [0, 1]
    assert profile.sglang == {
        "--model-path": "/models/Qwen3.6-27B",
        "--tp-size": 2,
        "--mem-fraction-static": 0.85,
        "--speculative-algorithm": "NEXTN",
        "--disable-radix-cache": True,
        "--cuda-graph-bs": [1, 2, 4],
        "--json-model-override-args": '{"rope_scaling": {"factor": 2.0}}',
    }
    assert profile.spec.tp_size == 2 and profile.spec.disable_radix_cache
    assert profile.argv[:4] == ["--model-path", "/models/Qwen3.6-27B", "--tp-size", "2"]


def test_target_defaults_to_the_host_itself() -> None:
    text = "name: a\nhost: h\npython: /usr/bin/python3\nsglang: {model-path: /m}\n"
    assert parse_profile(text).target == Target("host")


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_profile_validates(path: Path) -> None:
    profile = load_profile(path)
    assert profile.source == path
    assert profile.name == path.stem
    assert profile.spec.model_path


def test_the_examples_cover_the_design_deployments() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"qwen36-27b-2xa6000.yaml", "qwen36-27b-rtxpro6000.yaml", "llama31-8b-h100.yaml"} <= names
    qwen = load_profile(REPO / "profiles" / "qwen36-27b-2xa6000.yaml")
    assert (qwen.host, qwen.target, qwen.sglang_version) == ("pve", Target("pct", 129), "0.5.9")
    spec = qwen.spec
    assert (spec.tp_size, spec.mem_fraction_static, spec.context_length) == (2, 0.85, 32768)
    assert (spec.speculative_algorithm, spec.speculative_num_steps) == ("NEXTN", 3)
    assert (spec.speculative_eagle_topk, spec.speculative_num_draft_tokens) == (1, 4)
    assert qwen.sglang["--reasoning-parser"] == "qwen3"
    assert qwen.sglang["--tool-call-parser"] == "qwen3_coder"
    pro = load_profile(REPO / "profiles" / "qwen36-27b-rtxpro6000.yaml")
    assert pro.spec.mamba_strategy == "extra_buffer"


def test_many_problems_are_reported_at_once_with_their_lines() -> None:
    text = """\
name: x
host: pve
target: {kind: pct, id: abc}
python: bin/python
env:
  1BAD: x
bogus: 1
sglang:
  model-path: /m
  mem-fraction-static: abc
  mem-fracton-static: 0.8
  mamba-radix-cache-strategy: auto
sglang_version: "0.5.11"
"""
    problems = problems_of(text)
    found = {(p.line, p.flag) for p in problems}
    assert found == {
        (3, "target.id"),
        (4, "python"),
        (6, "env.1BAD"),
        (7, "bogus"),
        (10, "--mem-fraction-static"),
        (11, "--mem-fracton-static"),
        (12, "--mamba-radix-cache-strategy"),
    }
    by_flag = {p.flag: p.message for p in problems}
    assert by_flag["--mem-fraction-static"] == "'abc' is not a number between 0 and 1"
    assert "did you mean --mem-fraction-static" in by_flag["--mem-fracton-static"]
    assert by_flag["--mamba-radix-cache-strategy"] == (
        "SGLang 0.5.11 has no --mamba-radix-cache-strategy (added in 0.5.14); use --mamba-scheduler-strategy"
    )
    assert "not an absolute path" in by_flag["python"]


def test_error_text_lists_one_problem_per_line_as_file_line_flag_message() -> None:
    with pytest.raises(ProfileError) as info:
        parse_profile("name: x\nhost: h\npython: /p\nsglang:\n  tp-size: zero\n  model-path: /m\n", "q.yaml")
    assert isinstance(info.value, UserError)
    assert str(info.value) == "q.yaml:5: --tp-size: 'zero' is not a whole number of at least 1"


def test_missing_and_unknown_top_level_keys() -> None:
    problems = problems_of("name: x\npyhton: /p\nsglang: {model-path: /m}\n")
    messages = {(p.flag, p.line): p.message for p in problems}
    assert messages[("pyhton", 2)] == "unknown key; did you mean python?"
    assert ("host", 1) in messages and messages[("host", 1)].startswith("missing")
    assert ("python", 1) in messages


def test_a_name_with_a_terminal_escape_or_a_newline_is_refused_by_line() -> None:
    """The name is printed in `sgtui launch`'s lines, `sgtui runs` tables and the app: an escape sequence in
    it would recolour or rewrite the user's terminal, a newline break the table."""
    text = GOOD.replace("name: qwen", 'name: "x\\e[31mRED\\nline2"').replace("host: pve", 'host: "pve\\r"')
    messages = {(p.flag, p.line): p.message for p in problems_of(text)}
    assert "control character ('\\x1b')" in messages[("name", 1)]
    assert "control character ('\\r')" in messages[("host", 2)]


def test_yaml_syntax_error_has_a_line() -> None:
    problems = problems_of("name: x\nhost: [pve\npython: /p\n")
    assert len(problems) == 1
    assert problems[0].message.startswith("YAML syntax error")
    assert problems[0].line == 3


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("{kind: lxc, id: 129}", "'lxc' is not a target kind; use one of host, pct, docker"),
        ("{kind: pct, id: 12.5}", "12.5 is not a container number"),
        ("{kind: pct}", "missing; a pct target needs the LXC's numeric VMID"),
        ("{kind: docker}", "missing; a docker target needs the container's name or id"),
        ("{kind: host, id: 3}", "a host target has no id"),
    ],
)
def test_bad_targets(target: str, message: str) -> None:
    problems = problems_of(f"name: x\nhost: h\ntarget: {target}\npython: /p\nsglang: {{model-path: /m}}\n")
    assert [p.line for p in problems] == [3]
    assert problems[0].message.startswith(message)


def test_pct_id_as_quoted_digits_is_accepted() -> None:
    text = "name: x\nhost: h\ntarget: {kind: pct, id: '129'}\npython: /p\nsglang: {model-path: /m}\n"
    assert parse_profile(text).target == Target("pct", 129)


def test_model_path_is_required_and_duplicate_flags_are_named() -> None:
    problems = problems_of("name: x\nhost: h\npython: /p\nsglang:\n  tp-size: 2\n  tp_size: 2\n")
    messages = [str(p) for p in problems]
    assert "p.yaml:4: sglang: model-path is missing: the model folder or Hugging Face id to serve" in messages
    assert "p.yaml:6: --tp_size: the same flag as --tp-size on line 5; keep one" in messages


def test_sglang_version_must_be_quoted_when_yaml_reads_a_number() -> None:
    problems = problems_of("name: x\nhost: h\npython: /p\nsglang_version: 0.5\nsglang: {model-path: /m}\n")
    assert problems[0].flag == "sglang_version" and "in quotes" in problems[0].message


def test_too_few_gpus_for_the_parallelism() -> None:
    problems = problems_of("name: x\nhost: h\npython: /p\ngpus: [0]\nsglang: {model-path: /m, tp-size: 2}\n")
    assert [(p.line, p.flag) for p in problems] == [(4, "gpus")]


def test_dump_and_parse_round_trip() -> None:
    profile = parse_profile(GOOD, "good.yaml")
    text = dump_profile(profile)
    again = parse_profile(text, "good.yaml")
    assert again == profile
    assert "gpus: [0, 1]" in text and "disable-radix-cache: true" in text
    assert "enable-torch-compile" not in text


def test_save_is_atomic_and_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "p.yaml"
    target.write_text("old content")
    target.chmod(0o600)
    profile = parse_profile(GOOD, "good.yaml")
    save_profile(profile, target)
    assert load_profile(target) == Profile(**{**profile.__dict__, "source": target})
    assert (target.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["p.yaml"]


def test_a_failed_save_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "p.yaml"
    target.write_text("keep me")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        save_profile(parse_profile(GOOD), target)
    assert target.read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["p.yaml"]


def test_unreadable_file_is_a_profile_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read the profile"):
        load_profile(tmp_path / "absent.yaml")


def test_list_profiles_keeps_going_past_a_broken_file(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yml").write_text("name: [\n")
    (tmp_path / "notes.txt").write_text("ignored")
    entries = list_profiles(tmp_path)
    assert [e.path.name for e in entries] == ["a.yaml", "b.yml"]
    assert entries[0].profile is not None and entries[0].error is None
    assert entries[1].profile is None and entries[1].error is not None
    assert list_profiles(tmp_path / "missing") == []


def test_a_profile_may_name_its_runs_dir_which_must_be_absolute() -> None:
    from sgtui.core.profiles import dump_profile, parse_profile

    text = "name: a\nhost: h\npython: /x/bin/python\nruns_dir: {}\nsglang:\n  model-path: /m\n"
    profile = parse_profile(text.format("/data/me/runs"), "p.yaml")
    assert profile.runs_dir == "/data/me/runs"
    assert parse_profile(dump_profile(profile)).runs_dir == "/data/me/runs"
    with pytest.raises(UserError) as err:
        parse_profile(text.format("runs") + "gpus: [x]\n", "p.yaml")
    assert "p.yaml:4: runs_dir: 'runs' is not an absolute path" in str(err.value)
    assert "gpus" in str(err.value)  # every problem at once


def test_a_profile_that_is_not_utf8_names_the_byte_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_bytes(GOOD.replace("name: qwen", "name: caf\xe9").encode("latin-1"))
    with pytest.raises(
        ProfileError, match=r"not UTF-8 text: byte 0xe9 at line 1, column 10 \(save it as UTF-8\)"
    ):
        load_profile(path)
