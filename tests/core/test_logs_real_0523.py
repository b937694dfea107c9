"""The real SGLang 0.5.23 server's own logs (CPU-only machine, captured by the real-SGLang tier, issue 16):
SGLang's final error is quoted, the phase is right, and no fact is invented."""

from __future__ import annotations

from pathlib import Path

from sgtui.commands.explain import render
from sgtui.core.logs import LogAnalysis, classify_file, diagnose

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "real-0.5.23"


def _explain(name: str) -> LogAnalysis:
    with (REAL / f"{name}.log").open("rb") as stream:
        return classify_file(stream)


def test_no_accelerator_quotes_sglangs_runtime_error_not_the_notimplementederror_before_it() -> None:
    analysis = _explain("no-accelerator")
    error = analysis.error
    assert error is not None and analysis.outcome == "failed"
    assert error.text == (
        "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin is available."
    )
    assert error.values["context"] == ["NotImplementedError"]
    # raised under server_args.resolve_once, but by get_device: no argument check failed
    assert error.error_class == "other" and error.phase == "starting"
    assert diagnose(analysis)[0].title == "No GPU or other accelerator is visible"


def test_an_importerror_whose_message_is_on_the_next_lines_is_quoted_whole_in_no_phase() -> None:
    analysis = _explain("cpu-engine-no-stub")
    error = analysis.error
    assert error is not None
    assert error.text.startswith("ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library!")
    assert "libcuda.so.1: cannot open shared object file" in error.text
    # the import chain runs through model_loader/__init__.py: nothing was loaded yet
    assert (error.phase, error.error_class) == ("starting", "other")
    first = diagnose(analysis)[0]
    assert first.title == "SGLang's kernel package cannot load"
    assert "libcuda.so.1" in first.detail


def test_a_missing_model_folder_quotes_the_final_oserror_and_names_the_model_path() -> None:
    analysis = _explain("model-folder-missing")
    error = analysis.error
    assert error is not None and error.line == analysis.line_count
    assert error.text.startswith("OSError: Repo id must be in the form")
    assert len(error.values["context"]) == 2  # HFValidationError and the OSError it became, once each
    assert diagnose(analysis)[0].title == "The model path does not name a model"
    assert "model_path" not in analysis.facts  # no sentence of the chain is read as a flag


def test_a_stop_of_the_whole_group_after_ready_is_no_failure() -> None:
    """SIGTERM, then the scheduler's -15 and SGLang's SIGQUIT: the stop someone asked for."""
    analysis = _explain("ready")
    assert analysis.outcome == "ready" and analysis.error is None
    text = render("ready.log", analysis, diagnose(analysis))
    assert "Outcome: ready" in text


def test_port_in_use_is_the_bind_error() -> None:
    analysis = _explain("port-in-use")
    error = analysis.error
    assert error is not None and error.error_class == "port_in_use"
    assert error.values["port"] == 45673 and error.phase == "serving"


def test_a_hub_id_offline_quotes_transformers_oserror_and_gets_the_hugging_face_rule() -> None:
    """HF_HUB_OFFLINE=1 and no cache: huggingface_hub's LocalEntryNotFoundError, then transformers' OSError
    (whose message goes on over a second line)."""
    analysis = _explain("hub-id-offline")
    error = analysis.error
    assert error is not None and error.line == analysis.line_count - 1
    assert error.text.startswith("OSError: We couldn't connect to 'https://huggingface.co'")
    assert error.text.endswith("installation#offline-mode'.")
    assert "LocalEntryNotFoundError" in error.values["context"][0]
    assert diagnose(analysis)[0].title == "No connection to Hugging Face"


def test_a_hub_id_without_network_quotes_the_final_oserror_not_the_first_connecterror() -> None:
    """The chain's first exceptions are printed with no traceback of their own (httpcore, httpx, the hub)."""
    analysis = _explain("hub-id-no-network")
    error = analysis.error
    assert error is not None
    assert error.text.startswith("OSError: We couldn't connect to 'https://huggingface.co'")
    assert error.values["context"][0].startswith("httpcore.ConnectError")
    assert diagnose(analysis)[0].title == "No connection to Hugging Face"


def test_a_tiny_mem_fraction_static_is_quoted_as_given() -> None:
    analysis = _explain("mem-fraction-too-small")
    assert analysis.error is not None and analysis.error.error_class == "not_enough_memory"
    assert analysis.facts["mem_fraction_static"] == 0.0001
    mfs = next(s for s in diagnose(analysis)[0].suggestions if s.flag == "--mem-fraction-static")
    assert mfs.why.startswith("Raise --mem-fraction-static from 0.0001 to ")
    assert "The weights took 0.00 GiB per GPU" in diagnose(analysis)[0].detail  # SGLang printed -0.01


def test_the_module_forms_deprecation_example_is_no_model_path() -> None:
    """0.5.23's `python -m sglang.launch_server` warning (ready-module-form.log's first lines) in front of a
    launch that dies before its server_args dump: `--model-path <model>` is an example, not the model."""
    warning = (REAL / "ready-module-form.log").read_text().splitlines()[:3]
    assert "sglang serve --model-path <model>" in warning[1]
    log = "\n".join([*warning, *(REAL / "no-accelerator.log").read_text().splitlines()]) + "\n"
    from sgtui.core.logs import classify_text

    analysis = classify_text(log)
    assert "model_path" not in analysis.facts
    assert analysis.error is not None and analysis.error.text.startswith("RuntimeError: No accelerator")
