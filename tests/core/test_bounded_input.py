"""Hostile or broken files become one clear error line: no alias bombs, no RecursionError, no huge reprs.

A profile, hosts.yaml or keys.yaml is edited by hand and sometimes copied from elsewhere; a model's
config.json sits on a shared disk. None of them may exhaust memory or end in a traceback.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from sgtui.cli import main
from sgtui.core.bounded import BoundedInputError, load_json, short_repr
from sgtui.core.model import ModelError, load_model_facts
from sgtui.core.profiles import ProfileError, parse_profile
from sgtui.remote.hosts import HostsFileError, parse_hosts_yaml
from sgtui.ui.keymap import load_keymap

# Nine levels of nine: expanded, this is 9**9 (387 million) list items.
BOMB = "\n".join(
    [f"x0: &x0 [{', '.join(['lol'] * 9)}]"]
    + [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]" for i in range(1, 9)]
)


def _peak_mib(fn) -> float:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
    except Exception:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def test_a_billion_laughs_in_a_profiles_gpus_is_one_problem_naming_the_line() -> None:
    text = f"name: bomb\nhost: h\npython: /usr/bin/python3\nsglang: {{model-path: /m}}\n{BOMB}\ngpus: *x8\n"
    with pytest.raises(ProfileError) as err:
        parse_profile(text, "bomb.yaml")
    messages = [f"{p.line}: {p.message}" for p in err.value.problems]
    assert any("aliases (*x0) are not allowed" in m and m.startswith("6:") for m in messages), messages
    assert _peak_mib(lambda: parse_profile(text, "bomb.yaml")) < 20


def test_a_billion_laughs_in_hosts_yaml_hostname_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(f"{BOMB}\ngpu1:\n  hostname: *x8\n")
    with pytest.raises(HostsFileError, match=r"aliases \(\*x0\) are not allowed"):
        parse_hosts_yaml(path)
    assert _peak_mib(lambda: parse_hosts_yaml(path)) < 20


def test_aliases_are_refused_in_keys_yaml(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text("launch: &k L\nstop: *k\n")
    with pytest.raises(Exception, match=r"aliases \(\*k\) are not allowed"):
        load_keymap(path, ["launch", "stop"])


def test_an_oversized_profile_is_one_problem_not_a_parse(tmp_path: Path) -> None:
    text = "name: big\n" + "# padding\n" * 200_000
    with pytest.raises(ProfileError) as err:
        parse_profile(text, "big.yaml")
    assert [p.message for p in err.value.problems] == [
        f"{len(text):,} characters is too large for a sgtui file (limit 1,048,576); is this the right file?"
    ]


def test_a_deeply_nested_config_json_is_one_model_error_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"],\n"x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    )
    with pytest.raises(ModelError, match=r"config.json, line 2: JSON nested 200,001 levels deep"):
        load_model_facts(tmp_path)


def test_fit_on_a_deep_config_json_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    rc = main(
        ["fit", "--config", str(tmp_path / "config.json"), "--gpu", "H100-80G", "--", "--model-path", "/m"]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "too deep to read" in err


def test_json_limits() -> None:
    """Brackets inside strings are text, not nesting."""
    assert load_json('{"a": "' + "[" * 5000 + '"}', "x.json") == {"a": "[" * 5000}
    with pytest.raises(BoundedInputError, match="past the 10-byte limit"):
        load_json("[1, 2, 3, 4, 5]", "x.json", max_bytes=10)


def test_bad_values_are_quoted_short() -> None:
    assert short_repr("abc") == "'abc'"
    cut = short_repr("x" * 10_000)
    assert len(cut) < 80 and cut.endswith("(10,002 chars)")


def test_a_huge_bad_value_in_a_profile_is_quoted_short() -> None:
    text = f"name: n\nhost: h\npython: {'x' * 100_000}\nsglang: {{model-path: /m}}\n"
    with pytest.raises(ProfileError) as err:
        parse_profile(text, "p.yaml")
    assert all(len(p.message) < 200 for p in err.value.problems)
    assert any("is not an absolute path" in p.message for p in err.value.problems)


PROFILE_TEXT = (Path(__file__).resolve().parents[2] / "profiles" / "qwen36-27b-2xa6000.yaml").read_text()


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("port: 30000", "port: " + "9" * 5000, ":28: --port: cannot read this value: an integer of 5,000"),
        ("gpus: [0, 1]", "gpus: [0, " + "1" * 5000 + "]", ":14: gpus: cannot read this value: an integer of"),
        ("gpus: [0, 1]", "gpus: " + "[" * 3000 + "]" * 3000, ":14: nested more than 64 levels deep"),
        (
            "  kind: pct",
            "\tkind: pct",
            ":8: tabs are not allowed for indentation in YAML; indent with spaces",
        ),
    ],
)
def test_a_hostile_profile_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, said: str
) -> None:
    """Python refuses to convert a 5,000-digit integer (ValueError) and PyYAML's composer recurses (a
    RecursionError past ~330 levels): both were tracebacks; a tab was PyYAML's scanner text."""
    path = tmp_path / "p.yaml"
    path.write_text(PROFILE_TEXT.replace(old, new, 1))
    rc = main(["launch", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-500:]
    assert f"p.yaml{said}" in err


def test_json_with_a_5000_digit_integer_is_one_line() -> None:
    with pytest.raises(BoundedInputError, match=r"x.json, line 1: an integer of 5,000 digits"):
        load_json('{"a": ' + "7" * 5000 + "}", "x.json")
