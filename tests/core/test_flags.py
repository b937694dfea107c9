"""SGLang flags: argv and config parsing, exact per-release names, errors that say what to do."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgtui.core.errors import UserError
from sgtui.core.sglang.flag_messages import replacements
from sgtui.core.sglang.flags import (
    FLAGS,
    GROUPS,
    JSON_TEXT_FLAGS,
    RELEASES,
    RENAMES,
    FlagError,
    LaunchSpec,
    from_config_mapping,
    parse_argv,
    spec_from_values,
    speculative_base,
    table_for,
    to_argv,
    to_config_mapping,
)
from tests.cases import QWEN_2XA6000


def error_of(argv: list[str], version: str | None = None) -> FlagError:
    with pytest.raises(FlagError) as info:
        parse_argv(argv, version)
    return info.value


# --- the table ---


def test_table_covers_every_release_with_types_groups_and_choices() -> None:
    assert len(FLAGS) > 500
    assert RELEASES[0] == "0.4.0" and "0.5.10.post1" in RELEASES and "0.5.23" in RELEASES
    for flag in FLAGS.values():
        assert flag.group in GROUPS
        assert flag.releases and set(flag.releases) <= set(RELEASES)
        assert flag.kind in {"str", "int", "float", "human_int", "json", "bool", "bool_optional"}
    assert FLAGS["--mem-fraction-static"].kind == "float"
    assert FLAGS["--mem-fraction-static"].group == "memory"
    assert FLAGS["--tp-size"].group == "parallelism"
    assert FLAGS["--speculative-num-steps"].group == "speculative decoding"
    assert FLAGS["--mamba-scheduler-strategy"].group == "hybrid/Mamba"
    assert FLAGS["--enable-hierarchical-cache"].is_store_true
    assert table_for("0.5.9").info("--cuda-graph-bs").nargs == "+"
    assert table_for("0.5.23").info("--mamba-radix-cache-strategy").choices == (
        "auto",
        "no_buffer",
        "extra_buffer",
        "extra_buffer_lazy",
    )


def test_table_records_the_release_ranges_of_renamed_flags() -> None:
    assert FLAGS["--mamba-scheduler-strategy"].ranges == (("0.5.7", "0.5.19"),)
    assert FLAGS["--mamba-radix-cache-strategy"].ranges == (("0.5.14", "0.5.23"),)
    assert FLAGS["--cuda-graph-max-bs-decode"].ranges == (("0.5.14", "0.5.23"),)
    assert FLAGS["--attn-dp-size"].ranges == (("0.5.22", "0.5.23"),)
    assert set(table_for("0.5.23").info("--cuda-graph-backend-decode").choices or ()) >= {"disabled"}
    assert table_for("0.5.23").info("--disable-cuda-graph").deprecated
    assert not table_for("0.5.11").info("--disable-cuda-graph").deprecated


def test_argparse_aliases_are_option_strings_of_one_flag() -> None:
    assert {"--tensor-parallel-size"} <= set(FLAGS["--tp-size"].aliases)
    assert "--data-parallel-size" in FLAGS["--dp-size"].aliases
    assert "--model" in FLAGS["--model-path"].aliases


# --- argv ---


def test_the_qwen_launch_parses_into_typed_values_and_spec() -> None:
    parsed = parse_argv(QWEN_2XA6000, "0.5.9")
    assert parsed.values["--tp-size"] == 2
    assert parsed.values["--mem-fraction-static"] == 0.85
    assert list(parsed.values) == [
        "--model-path",
        "--tp-size",
        "--mem-fraction-static",
        "--context-length",
        "--speculative-algorithm",
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--reasoning-parser",
        "--tool-call-parser",
    ]
    spec = parsed.spec
    assert spec.model_path == "/models/Qwen3.6-27B"
    assert (spec.tp_size, spec.mem_fraction_static, spec.context_length) == (2, 0.85, 32768)
    assert spec.speculative_algorithm == "NEXTN"
    assert (spec.speculative_num_steps, spec.speculative_eagle_topk, spec.speculative_num_draft_tokens) == (
        3,
        1,
        4,
    )
    assert spec.values == parsed.values
    assert parsed.notes == []


def test_equals_form_store_true_and_nargs_lists() -> None:
    parsed = parse_argv(
        [
            "--mem-fraction-static=0.8",
            "--disable-radix-cache",
            "--cuda-graph-bs",
            "1",
            "2",
            "4",
            "--port",
            "8000",
        ],
        "0.5.11",
    )
    assert parsed.values == {
        "--mem-fraction-static": 0.8,
        "--disable-radix-cache": True,
        "--cuda-graph-bs": [1, 2, 4],
        "--port": 8000,
    }
    assert parsed.spec.disable_radix_cache and parsed.spec.port == 8000


def test_negative_numbers_are_values_not_flags() -> None:
    assert parse_argv(["--chunked-prefill-size", "-1"]).spec.chunked_prefill_size == -1


def test_aliases_land_under_the_canonical_name_without_a_note() -> None:
    parsed = parse_argv(["--tensor-parallel-size", "4", "--model", "m"], "0.5.9")
    assert parsed.values == {"--tp-size": 4, "--model-path": "m"}
    assert parsed.notes == []


def test_unique_prefix_resolves_with_a_note_that_the_full_name_is_safer() -> None:
    parsed = parse_argv(["--speculative-algo", "NEXTN"], "0.5.9")
    assert parsed.values == {"--speculative-algorithm": "NEXTN"}
    assert len(parsed.notes) == 1
    assert "--speculative-algo resolved to --speculative-algorithm" in parsed.notes[0]
    assert "full name is safer" in parsed.notes[0]


def test_ambiguous_prefix_names_the_candidates() -> None:
    err = error_of(["--pp", "2"], "0.5.11")
    assert "--pp is ambiguous in SGLang 0.5.11" in str(err)
    assert "--pp-size" in err.suggestions and "--pp-max-micro-batch-size" in err.suggestions
    assert err.flag == "--pp"


def test_unknown_flag_names_the_nearest_real_flags() -> None:
    err = error_of(["--mem-fracton-static", "0.8"], "0.5.11")
    assert isinstance(err, UserError)
    assert str(err).startswith("unknown flag --mem-fracton-static")
    assert err.flag == "--mem-fracton-static"
    assert err.suggestions[0] == "--mem-fraction-static"
    assert "did you mean --mem-fraction-static" in str(err)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mem-fraction-static", "abc"], "--mem-fraction-static: 'abc' is not a number between 0 and 1"),
        (["--mem-fraction-static", "1.2"], "--mem-fraction-static: '1.2' is not a number between 0 and 1"),
        (["--tp-size", "two"], "--tp-size: 'two' is not a whole number of at least 1"),
        (["--tp-size", "0"], "--tp-size: '0' is not a whole number of at least 1"),
        (["--port", "70000"], "--port: '70000' is not a whole number between 1 and 65535"),
        (["--kv-cache-dtype", "fp9"], "--kv-cache-dtype: 'fp9' is not one of auto, fp8_e5m2"),
        (["--json-model-override-args", "{bad"], "--json-model-override-args: '{bad' is not valid JSON"),
        (["--disable-radix-cache=yes"], "--disable-radix-cache takes no value (it is a switch)"),
        (["--tp-size"], "--tp-size needs a value (a whole number of at least 1)"),
        (["--cuda-graph-bs"], "--cuda-graph-bs needs at least one value"),
        (["model", "--tp-size", "2"], "unexpected argument 'model'"),
    ],
)
def test_bad_values_say_which_flag_what_was_given_and_what_it_takes(argv: list[str], message: str) -> None:
    assert str(error_of(argv, "0.5.11")).startswith(message)


def test_choice_in_the_wrong_case_points_at_the_right_spelling() -> None:
    err = error_of(["--speculative-algorithm", "nextn"], "0.5.9")
    assert "case-sensitive: use NEXTN" in str(err)
    assert err.suggestions == ["NEXTN"]


def test_speculative_algorithm_is_upper_cased_in_the_spec_where_sglang_takes_any_case() -> None:
    parsed = parse_argv(["--speculative-algorithm", "nextn"], "0.5.23")
    assert parsed.values["--speculative-algorithm"] == "nextn"
    assert parsed.spec.speculative_algorithm == "NEXTN"


def test_topk_one_draft_tokens_are_kept_raw() -> None:
    spec = parse_argv(
        [
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "9",
        ]
    ).spec
    assert spec.speculative_num_draft_tokens == 9


def test_human_readable_context_length_from_0_5_11_on() -> None:
    assert parse_argv(["--context-length", "32k"], "0.5.11").spec.context_length == 32000
    assert parse_argv(["--context-length", "64Ki"], "0.5.23").spec.context_length == 65536
    assert "is not a whole number" in str(error_of(["--context-length", "32k"], "0.5.9"))


# --- versions ---


def test_new_mamba_name_on_an_old_release_names_the_release_that_added_it_and_the_old_name() -> None:
    err = error_of(["--mamba-radix-cache-strategy", "extra_buffer"], "0.5.11")
    assert str(err) == (
        "SGLang 0.5.11 has no --mamba-radix-cache-strategy (added in 0.5.14); use --mamba-scheduler-strategy"
    )
    assert err.suggestions == ["--mamba-scheduler-strategy"]


def test_old_mamba_name_on_0_5_23_names_the_release_that_removed_it() -> None:
    err = error_of(["--mamba-scheduler-strategy", "extra_buffer"], "0.5.23")
    assert str(err) == (
        "SGLang 0.5.23 has no --mamba-scheduler-strategy (removed in 0.5.20); "
        "use --mamba-radix-cache-strategy"
    )


def test_both_mamba_names_fill_the_same_spec_field() -> None:
    old = parse_argv(["--mamba-scheduler-strategy", "extra_buffer"], "0.5.9").spec
    new = parse_argv(["--mamba-radix-cache-strategy", "extra_buffer_lazy"], "0.5.23").spec
    assert (old.mamba_strategy, new.mamba_strategy) == ("extra_buffer", "extra_buffer_lazy")


def test_cuda_graph_renames() -> None:
    assert str(error_of(["--cuda-graph-max-bs", "8"], "0.5.23")) == (
        "SGLang 0.5.23 has no --cuda-graph-max-bs (removed in 0.5.20); use --cuda-graph-max-bs-decode"
    )
    assert parse_argv(["--cuda-graph-max-bs-decode", "16"], "0.5.23").spec.cuda_graph_max_bs == 16
    assert parse_argv(["--cuda-graph-max-bs", "16"], "0.5.9").spec.cuda_graph_max_bs == 16
    spec = parse_argv(["--cuda-graph-backend-decode", "disabled"], "0.5.23").spec
    assert spec.disable_cuda_graph


def test_deprecated_disable_cuda_graph_still_works_in_0_5_23_with_a_note() -> None:
    parsed = parse_argv(["--disable-cuda-graph"], "0.5.23")
    assert parsed.spec.disable_cuda_graph
    assert parsed.notes == [
        "--disable-cuda-graph is deprecated in SGLang 0.5.23 (it still works); "
        "use --cuda-graph-backend-{decode,prefill}=disabled instead"
    ]
    assert parse_argv(["--disable-cuda-graph"], "0.5.9").notes == []


def test_a_flag_only_newer_releases_have_is_rejected_naming_the_release_that_added_it() -> None:
    err = error_of(["--attn-dp-size", "2"], "0.5.9")
    assert str(err) == "SGLang 0.5.9 has no --attn-dp-size (added in 0.5.22); use --enable-dp-attention"


def test_no_version_accepts_the_union() -> None:
    parsed = parse_argv(["--mamba-scheduler-strategy", "no_buffer", "--attn-dp-size", "2"])
    assert parsed.spec.mamba_strategy == "no_buffer"
    assert parsed.spec.attn_dp_size == 2 and parsed.spec.enable_dp_attention
    assert parsed.notes == []


@pytest.mark.parametrize(
    ("given", "release", "source"),
    [
        ("0.5.9", "0.5.9", "shipped"),
        ("0.5.10", "0.5.10", "shipped"),
        ("0.5.10.post1", "0.5.10.post1", "shipped"),
        ("v0.4.3.post2", "0.4.3.post2", "shipped"),
        ("0.5.11rc1", "0.5.10.post1", "nearest"),
        ("0.5.12.post2", "0.5.12.post1", "nearest"),
        ("0.5.24.dev3+gabc", "0.5.23", "nearest"),
        ("0.6.1", "0.5.23", "nearest"),
        ("0.3.6", "0.4.0", "nearest"),
        ("0.0.0.dev0", "0.5.23", "nearest"),
    ],
)
def test_an_exact_release_gets_its_own_table_anything_else_the_nearest_older(
    given: str, release: str, source: str
) -> None:
    table = table_for(given)
    assert (table.release, table.source, table.version) == (release, source, given)
    assert (table.note is None) == (source == "shipped")
    if source == "nearest":
        assert f"SGLang {given}" in (table.note or "") and f"using the {release} flags" in (table.note or "")
        assert table.label == f"nearest older {release} (offline)"
    else:
        assert table.label == f"shipped {release}"


def test_a_message_names_the_exact_version_not_the_table_it_borrowed() -> None:
    err = error_of(["--attn-dp-size", "2"], "0.5.21rc0")
    assert str(err).startswith("SGLang 0.5.21rc0 has no --attn-dp-size (added in 0.5.22)")


def test_a_version_that_is_not_a_number_is_a_user_error() -> None:
    with pytest.raises(UserError, match="'latest' is not a version number"):
        table_for("latest")


def test_repeated_flag_keeps_the_last_value_with_a_note() -> None:
    parsed = parse_argv(["--tp-size", "2", "--tp-size", "4"])
    assert parsed.values == {"--tp-size": 4}
    assert "given more than once" in parsed.notes[0]


# --- values, spec and config ---


def test_spec_from_values_accepts_dashed_or_underscored_keys_and_types_them() -> None:
    spec = spec_from_values({"tp_size": "2", "mem-fraction-static": 0.9, "--disable-radix-cache": True})
    assert (spec.tp_size, spec.mem_fraction_static, spec.disable_radix_cache) == (2, 0.9, True)
    assert spec.values == {"--tp-size": 2, "--mem-fraction-static": 0.9, "--disable-radix-cache": True}


def test_spec_from_values_checks_values_and_versions() -> None:
    with pytest.raises(FlagError, match="is not a number between 0 and 1"):
        spec_from_values({"--mem-fraction-static": 3})
    with pytest.raises(
        FlagError, match=r"SGLang 0\.5\.23 has no --mamba-scheduler-strategy .*; use --mamba-rad"
    ):
        spec_from_values({"--mamba-scheduler-strategy": "auto"}, "0.5.23")


def test_empty_values_give_sglang_defaults() -> None:
    assert spec_from_values({}) == LaunchSpec()


def test_to_argv_round_trips_the_qwen_launch() -> None:
    parsed = parse_argv(QWEN_2XA6000, "0.5.9")
    assert to_argv(parsed.values) == QWEN_2XA6000
    assert parse_argv(to_argv(parsed.values), "0.5.9").values == parsed.values


def test_to_argv_leaves_false_switches_out_and_keeps_negative_values_attached() -> None:
    argv = to_argv(
        {"--disable-radix-cache": False, "--chunked-prefill-size": -1, "--enable-torch-compile": True}
    )
    assert argv == ["--chunked-prefill-size=-1", "--enable-torch-compile"]


def test_config_mapping_reads_sglang_config_format() -> None:
    values = from_config_mapping(
        {
            "model-path": "/models/Llama-3.1-8B",
            "tp_size": 2,
            "enable-torch-compile": True,
            "disable_radix_cache": False,
            "cuda-graph-bs": [1, 2, 4],
            "json-model-override-args": {"rope_scaling": {"factor": 2.0}},
        },
        "0.5.11",
    )
    assert values == {
        "--model-path": "/models/Llama-3.1-8B",
        "--tp-size": 2,
        "--enable-torch-compile": True,
        "--cuda-graph-bs": [1, 2, 4],
        "--json-model-override-args": '{"rope_scaling": {"factor": 2.0}}',
    }


def test_config_mapping_errors_name_the_key() -> None:
    with pytest.raises(FlagError, match="--disable-radix-cache: 'yes' is not true or false"):
        from_config_mapping({"disable-radix-cache": "yes"})
    with pytest.raises(FlagError, match="unknown flag --mem-fraction-statik"):
        from_config_mapping({"mem_fraction_statik": 0.8})
    with pytest.raises(FlagError, match="--tp-size: takes one value"):
        from_config_mapping({"tp-size": [1, 2]})


def test_to_config_mapping_writes_what_sglang_reads_back() -> None:
    values = {
        "--tp-size": 2,
        "--disable-radix-cache": True,
        "--enable-torch-compile": False,
        "--cuda-graph-bs": [1, 2],
    }
    mapping = to_config_mapping(values)
    assert mapping == {"tp-size": 2, "disable-radix-cache": True, "cuda-graph-bs": [1, 2]}
    assert from_config_mapping(mapping) == {k: v for k, v in values.items() if v is not False}


# --- round-trip property ---

_ROUND_TRIP_FLAGS = {
    "--model-path": st.text(alphabet="abcXYZ/._-0123", min_size=1, max_size=12).filter(lambda s: s != "-"),
    "--tp-size": st.integers(1, 64),
    "--mem-fraction-static": st.floats(0.01, 1.0, allow_nan=False),
    "--chunked-prefill-size": st.integers(-1, 1 << 20),
    "--disable-radix-cache": st.just(True),
    "--cuda-graph-bs": st.lists(st.integers(1, 512), min_size=1, max_size=5),
    "--kv-cache-dtype": st.sampled_from(["auto", "fp8_e4m3", "bf16"]),
    "--speculative-algorithm": st.sampled_from(["EAGLE", "NEXTN"]),
    "--json-model-override-args": st.dictionaries(st.text("ab", max_size=3), st.integers(), max_size=2).map(
        json.dumps
    ),
}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_parse_argv_of_to_argv_round_trips(data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(sorted(_ROUND_TRIP_FLAGS)), unique=True))
    values = {name: data.draw(_ROUND_TRIP_FLAGS[name]) for name in names}
    assert parse_argv(to_argv(values), "0.5.11").values == values


def _sample_value(name: str, version: str) -> object:
    info = table_for(version).info(name)
    if info.kind == "bool":
        return True
    if info.kind == "bool_optional":
        return False
    if info.choices:
        value: object = info.choices[-1]
    elif info.kind in ("int", "human_int"):
        value = 7
    elif info.kind == "float":
        value = 0.5
    elif info.kind == "json" or name in JSON_TEXT_FLAGS:
        value = '{"a": 1}'
    else:
        value = "some text"
    return [value, value] if info.nargs in ("+", "*") else value


def test_every_definition_of_every_flag_round_trips_through_argv_and_config() -> None:
    """Each span (a stretch of releases with one definition) is checked at its first release."""
    for name, flag in FLAGS.items():
        for span in flag.spans:
            version = RELEASES[span.first]
            if span.definition.removed_message:
                continue
            values = {name: _sample_value(name, version)}
            argv = to_argv(values, version)
            assert parse_argv(argv, version).values == values, (name, version, argv)
            assert from_config_mapping(to_config_mapping(values, version), version) == values, (name, version)


def test_to_argv_spells_a_flag_the_way_the_chosen_version_knows_it() -> None:
    values = {"--smg-http-sidecar-port": 9000}
    assert to_argv(values, "0.5.23") == ["--smg-http-sidecar-port", "9000"]
    assert to_argv(values, "0.5.11") == ["--grpc-http-sidecar-port", "9000"]
    assert to_config_mapping(values, "0.5.11") == {"grpc-http-sidecar-port": 9000}


def test_none_means_unset_everywhere() -> None:
    assert spec_from_values({"--mem-fraction-static": None, "--tp-size": 2}).values == {"--tp-size": 2}
    assert to_argv({"--mem-fraction-static": None}) == []


def test_a_float_for_a_whole_number_flag_is_rejected_as_sglang_would() -> None:
    with pytest.raises(FlagError, match=r"--tp-size: 2\.0 is not a whole number"):
        from_config_mapping({"tp-size": 2.0})


def test_double_dash_alone_is_explained() -> None:
    assert "takes no positional arguments" in str(error_of(["--", "x"]))


def test_replacements_come_from_sglang_deprecations() -> None:
    pairs = {(r.old, r.new): r for r in replacements()}
    assert pairs[("--enable-dp-attention", "--attn-dp-size")].use == "--attn-dp-size <dp-size>"
    assert ("--mamba-scheduler-strategy", "--mamba-radix-cache-strategy") in pairs
    assert not pairs[("--disable-piecewise-cuda-graph", "--cuda-graph-backend-prefill")].reversible
    for rename in RENAMES:
        assert rename.old in FLAGS and rename.new in FLAGS, rename


def _load_extractor() -> object:
    path = Path(__file__).resolve().parents[2] / "tools" / "extract_sglang_flags.py"
    spec = importlib.util.spec_from_file_location("extract_sglang_flags", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_extractor_folds_releases_with_one_definition_into_spans() -> None:
    extractor: Any = _load_extractor()

    def row(options: list[str], dest: str, **extra: object) -> dict[str, object]:
        base = {"options": options, "dest": dest, "kind": "int", "nargs": None, "choices": None, "default": 1}
        return {**base, "help": "", **extra}

    tp_old = row(["--tensor-parallel-size", "--tp-size"], "tensor_parallel_size")
    tp_new = row(["--tp-size", "--tensor-parallel-size"], "tp_size")
    mamba = row(["--mamba-scheduler-strategy"], "mamba_scheduler_strategy", kind="str")
    table, helps = extractor.merge(
        {
            "0.5.9": [tp_old, mamba],
            "0.5.10": [tp_old, mamba],
            "0.5.11": [tp_new],
            "0.5.23": [
                tp_new,
                {**mamba, "help": "back"},
                row(["--disable-cuda-graph"], "d", kind="bool", deprecated=True, new_flag="--x"),
            ],
        }
    )
    flags = table["flags"]
    assert table["releases"] == ["0.5.9", "0.5.10", "0.5.11", "0.5.23"]
    assert flags["--tp-size"]["spans"] == [
        [
            "0.5.9",
            "0.5.10",
            {"options": ["--tensor-parallel-size", "--tp-size"], "kind": "int", "default": 1},
        ],
        [
            "0.5.11",
            "0.5.23",
            {"options": ["--tp-size", "--tensor-parallel-size"], "kind": "int", "default": 1},
        ],
    ]
    assert flags["--tp-size"]["group"] == "parallelism"
    # a gap (0.5.11 lacks it) splits the span even though the definition is the same
    assert [s[:2] for s in flags["--mamba-scheduler-strategy"]["spans"]] == [
        ["0.5.9", "0.5.10"],
        ["0.5.23", "0.5.23"],
    ]
    assert flags["--disable-cuda-graph"]["spans"][0][2]["new_flag"] == "--x"
    assert helps["--mamba-scheduler-strategy"] == "back"


@pytest.mark.parametrize(
    ("algorithm", "base"), [("NEXTN", "EAGLE"), ("nextn", "EAGLE"), ("EAGLE3", "EAGLE3"), (None, None)]
)
def test_nextn_is_run_as_eagle(algorithm: str | None, base: str | None) -> None:
    assert speculative_base(algorithm) == base


# --- the cases of issue 8 ---

RENAMED_IN_0_5_14 = [
    ["--mamba-radix-cache-strategy", "extra_buffer"],
    ["--cuda-graph-max-bs-decode", "16"],
    ["--cuda-graph-bs-decode", "1", "2", "4"],
    ["--cuda-graph-max-bs-prefill", "512"],
    ["--cuda-graph-bs-prefill", "128", "256"],
    ["--cuda-graph-backend-decode", "full"],
    ["--cuda-graph-backend-prefill", "disabled"],
    ["--disable-prefill-cuda-graph"],
    ["--disable-decode-cuda-graph"],
]


@pytest.mark.parametrize("version", ["0.5.14", "0.5.15", "0.5.15.post1", "0.5.16", "0.5.17"])
@pytest.mark.parametrize("argv", RENAMED_IN_0_5_14, ids=lambda a: a[0])
def test_the_0_5_14_to_0_5_17_names_are_accepted(version: str, argv: list[str]) -> None:
    assert table_for(version).source == "shipped"
    parsed = parse_argv(argv, version)
    assert parsed.notes == []
    assert argv[0] in parsed.values


@pytest.mark.parametrize("version", ["0.5.14", "0.5.16", "0.5.17"])
@pytest.mark.parametrize(
    "option", ["--enable-piecewise-cuda-graph", "--hybrid-kvcache-ratio", "--enable-breakable-cuda-graph"]
)
def test_flags_removed_or_deprecated_in_0_5_14_say_so_naming_the_exact_release(
    version: str, option: str
) -> None:
    """0.5.14 dropped two outright and kept --enable-breakable-cuda-graph as a deprecated alias."""
    argv = [option, "0.5"] if option == "--hybrid-kvcache-ratio" else [option]
    if option == "--enable-breakable-cuda-graph":
        assert parse_argv(argv, version).notes == [
            f"--enable-breakable-cuda-graph is deprecated in SGLang {version} (it still works); "
            "use --cuda-graph-backend-prefill=breakable instead"
        ]
        return
    assert str(error_of(argv, version)).startswith(f"SGLang {version} has no {option} (removed in 0.5.14)")


@pytest.mark.parametrize("version", ["0.5.18", "0.5.19", "0.5.20", "0.5.21"])
def test_attn_dp_size_is_rejected_before_0_5_22(version: str) -> None:
    err = error_of(["--attn-dp-size", "2"], version)
    assert str(err) == f"SGLang {version} has no --attn-dp-size (added in 0.5.22); use --enable-dp-attention"
    assert err.suggestions == ["--enable-dp-attention"]
    assert parse_argv(["--attn-dp-size", "2"], "0.5.22").spec.attn_dp_size == 2


def test_the_deprecated_cuda_graph_aliases_work_until_0_5_20_removes_them() -> None:
    assert parse_argv(["--cuda-graph-max-bs", "8"], "0.5.19").notes == [
        "--cuda-graph-max-bs is deprecated in SGLang 0.5.19 (it still works); "
        "use --cuda-graph-max-bs-decode instead"
    ]
    assert str(error_of(["--cuda-graph-max-bs", "8"], "0.5.20")) == (
        "SGLang 0.5.20 has no --cuda-graph-max-bs (removed in 0.5.20); use --cuda-graph-max-bs-decode"
    )


def test_0_5_10_has_its_own_table() -> None:
    """Not 0.5.9's (it adds the linear-attention and piecewise switches) and not 0.5.11's."""
    own, older, newer = table_for("0.5.10"), table_for("0.5.9"), table_for("0.5.11")
    assert own.release == "0.5.10" and own.source == "shipped"
    for name in ("--linear-attn-backend", "--disable-piecewise-cuda-graph", "--enforce-piecewise-cuda-graph"):
        assert own.has(name) and not older.has(name)
    assert own.info("--enable-piecewise-cuda-graph").deprecated
    assert not older.info("--enable-piecewise-cuda-graph").deprecated
    assert own.info("--max-total-tokens").kind == "human_int" != older.info("--max-total-tokens").kind
    assert set(own.defs) != set(newer.defs)
    assert str(error_of(["--enable-breakable-cuda-graph"], "0.5.10")) == (
        "SGLang 0.5.10 has no --enable-breakable-cuda-graph (added in 0.5.11)"
    )


def test_a_target_table_with_a_flag_no_release_has_is_used_as_is() -> None:
    from sgtui.core.sglang.flags import table_from_rows

    rows = [{"options": list(d.options), "kind": d.kind} for d in table_for("0.5.23").defs.values()]
    rows.append({"options": ["--new-in-dev"], "dest": "new_in_dev", "kind": "int", "help": "dev only"})
    table = table_from_rows(rows, "0.5.24.dev3")
    assert table.label == "from the target (0.5.24.dev3)"
    assert parse_argv(["--new-in-dev", "3"], table).values == {"--new-in-dev": 3}
    assert to_argv({"--new-in-dev": 3}, table) == ["--new-in-dev", "3"]
    assert table.help("--new-in-dev") == "dev only"
    missing = [r for r in rows if r["options"][0] != "--attn-dp-size"]
    err = error_of(["--attn-dp-size", "2"], table_from_rows(missing, "0.5.24.dev3"))
    assert str(err).startswith("SGLang 0.5.24.dev3 has no --attn-dp-size (last in 0.5.23)")
