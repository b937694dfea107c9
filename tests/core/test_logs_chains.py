"""One exception chain is one error event (the exception Python prints last is quoted, the earlier ones
are its context), a message that goes on over the next lines is joined, an import chain names no phase, and an
example's placeholder or an exception's sentence gives no fact. Shapes from SGLang 0.5.23's own code
(sglang/launch_server.py's deprecation warning, srt/utils/common.py get_device, sgl_kernel's loader message),
as the real CPU server printed them (issue 16)."""

from __future__ import annotations

from sgtui.core.logs import classify_text, diagnose
from sgtui.core.logs.diagnosis.common import fmt_mfs

SITE = "/home/u/.cache/sgtui/venv-0.5.23/lib/python3.11/site-packages"
DEPRECATION = (
    f"{SITE}/sglang/launch_server.py:71: UserWarning: 'python -m sglang.launch_server' is still supported, "
    "but 'sglang serve' is the recommended entrypoint.",
    "  Example: sglang serve --model-path <model> [options]",
    "  warnings.warn(",
)


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


NO_ACCELERATOR = _log(
    *DEPRECATION,
    "Traceback (most recent call last):",
    f'  File "{SITE}/sglang/srt/utils/common.py", line 1121, in get_device',
    "    return current_platform.get_device(device_id)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{SITE}/sglang/srt/platforms/interface.py", line 88, in get_device',
    "    raise NotImplementedError",
    "NotImplementedError",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "<frozen runpy>", line 198, in _run_module_as_main',
    '  File "<frozen runpy>", line 88, in _run_code',
    f'  File "{SITE}/sglang/launch_server.py", line 80, in <module>',
    "    run_server(server_args)",
    f'  File "{SITE}/sglang/srt/utils/common.py", line 1123, in get_device',
    "    raise RuntimeError(",
    "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin is available.",
)


def test_the_exception_python_prints_last_is_quoted_and_the_first_is_its_context() -> None:
    """Python prints last the exception that propagated; the NotImplementedError before it is context."""
    analysis = classify_text(NO_ACCELERATOR)
    error = analysis.error
    assert error is not None and analysis.outcome == "failed"
    assert error.text.startswith("RuntimeError: No accelerator")
    assert error.line == NO_ACCELERATOR.splitlines().index(error.text) + 1
    assert error.values["context"] == ["NotImplementedError"]
    assert [s.values.get("exception") for s in analysis.state.signals if s.strength == "generic"] == [
        "RuntimeError"
    ]
    first = diagnose(analysis)[0]
    assert "No accelerator" in first.detail and "NotImplementedError" not in first.title
    assert first.title == "No GPU or other accelerator is visible"


def test_the_deprecation_example_is_no_model_path() -> None:
    """`sglang serve --model-path <model> [options]` is an example's placeholder, not the model in use."""
    facts = classify_text(NO_ACCELERATOR).facts
    assert "model_path" not in facts


def test_an_exception_sentence_that_quotes_a_flag_is_no_fact() -> None:
    log = _log(
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
        "'namespace/repo_name': '/data/missing'. Check that sglang's --model-path pointing "
        "to a folder exists.",
    )
    assert "model_path" not in classify_text(log).facts


def test_a_hub_failure_chain_quotes_the_final_oserror_and_gets_the_hugging_face_rule() -> None:
    """With no network, httpx's ConnectError comes first; transformers' OSError is what propagated."""
    log = _log(
        "[2026-12-01 20:40:00] server_args={'model_path': 'org/tiny-model', 'tp_size': 1}",
        "Traceback (most recent call last):",
        f'  File "{SITE}/httpcore/_sync/connection.py", line 101, in handle_request',
        "    raise exc",
        "httpcore.ConnectError: [Errno -3] Temporary failure in name resolution",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{SITE}/huggingface_hub/file_download.py", line 1484, in _raise_on_head_call_error',
        "    raise LocalEntryNotFoundError(",
        "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file "
        "on the Hub and we cannot find the requested files in the local cache.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{SITE}/transformers/utils/hub.py", line 470, in cached_files',
        "    raise OSError(",
        "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them "
        "in the cached files.",
        "Check your internet connection or see how to run the library in offline mode at "
        "'https://huggingface.co/docs/transformers/installation#offline-mode'.",
    )
    analysis = classify_text(log)
    error = analysis.error
    assert error is not None
    assert error.text.startswith("OSError: We couldn't connect to 'https://huggingface.co'")
    assert "offline mode" in error.text  # the message's second line is joined to it
    context = error.values["context"]
    assert len(context) == 2 and context[0].startswith("httpcore.ConnectError")
    assert diagnose(analysis)[0].title == "No connection to Hugging Face"


SGL_KERNEL = _log(
    "[2026-12-01 20:50:00] server_args={'model_path': '/tmp/tiny', 'device': 'cpu'}",
    "Traceback (most recent call last):",
    '  File "<frozen runpy>", line 198, in _run_module_as_main',
    f'  File "{SITE}/sglang/launch_server.py", line 8, in <module>',
    "    from sglang.srt.entrypoints.http_server import launch_server",
    f'  File "{SITE}/sglang/srt/model_loader/__init__.py", line 3, in <module>',
    "    from sglang.srt.model_loader.loader import BaseModelLoader, get_model_loader",
    f'  File "{SITE}/sglang/srt/model_loader/loader.py", line 40, in <module>',
    "    from sgl_kernel import common_ops",
    f'  File "{SITE}/sgl_kernel/__init__.py", line 5, in <module>',
    "    common_ops = _load_architecture_specific_ops()",
    f'  File "{SITE}/sgl_kernel/load_utils.py", line 188, in _load_architecture_specific_ops',
    "    raise ImportError(error_msg)",
    "ImportError: ",
    "[sgl_kernel] CRITICAL: Could not load any common_ops library!",
    "",
    "Attempted locations:",
    "1. Architecture-specific pattern: sgl_kernel/sm100/common_ops.*",
    "",
    "Error details from previous import attempts:",
    "- ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
)


def test_a_message_on_the_next_lines_is_joined_to_its_exception() -> None:
    analysis = classify_text(SGL_KERNEL)
    error = analysis.error
    assert error is not None
    assert error.text.startswith("ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library!")
    assert "libcuda.so.1" in error.text


def test_an_import_chain_through_model_loader_is_not_loading_weights() -> None:
    """Modules being imported (frames `in <module>`) loaded nothing: the phase comes from the milestones."""
    analysis = classify_text(SGL_KERNEL)
    assert analysis.error is not None and analysis.error.phase == "starting"


def test_a_tiny_mem_fraction_static_is_printed_in_its_own_digits() -> None:
    log = _log(
        "[2026-12-01 21:00:00] server_args={'model_path': '/tmp/tiny', 'mem_fraction_static': 0.0001}",
        "[2026-12-01 21:00:05] Load weight begin. avail mem=13.90 GB",
        "[2026-12-01 21:00:06] Load weight end. elapsed=0.10 s, type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=13.89 GB, mem usage=0.01 GB.",
        "[2026-12-01 21:00:06] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{SITE}/sglang/srt/model_executor/pool_configurator.py", line 98, in __post_init__',
        "    raise RuntimeError(msg)",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
        "mem_fraction_static=0.0001",
    )
    analysis = classify_text(log)
    assert analysis.error is not None and analysis.error.error_class == "not_enough_memory"
    first = diagnose(analysis)[0]
    mfs = next(s for s in first.suggestions if s.flag == "--mem-fraction-static")
    assert "from 0.0001 to" in mfs.why and " from 0 to" not in mfs.why
    assert fmt_mfs(1e-05) == "1e-05" and fmt_mfs(0.85) == "0.85"


def test_a_process_that_ended_is_not_starting() -> None:
    """Python's resource tracker warns at interpreter exit: the server process ended there."""
    log = _log(
        "[2026-12-01 21:10:00] server_args={'model_path': '/tmp/tiny'}",
        "[2026-12-01 21:10:20] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
        "[2026-12-01 21:10:21] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0",
        "/usr/lib/python3.11/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: There "
        "appear to be 1 leaked semaphore objects to clean up at shutdown",
    )
    analysis = classify_text(log)
    assert analysis.outcome == "failed" and analysis.state.phase != "starting"
    assert analysis.error is not None and analysis.error.error_class == "child_failed"


def test_a_group_term_is_a_stop_not_a_crash() -> None:
    """TERM to the whole group: SGLang's watchdog logs its children's -15 and SIGQUITs itself (issue 16)."""
    log = _log(
        "[2026-12-01 21:20:00] server_args={'model_path': '/tmp/tiny'}",
        "[2026-12-01 21:20:30] The server is fired up and ready to roll!",
        "[2026-12-01 21:25:00] Subprocess scheduler_0 (pid=4242) crashed with exit code -15. Triggering "
        "SIGQUIT for cleanup...",
        "[2026-12-01 21:25:00] Received sigquit from a child process. It usually means the child failed.",
    )
    analysis = classify_text(log)
    assert analysis.error is None and analysis.outcome == "ready"


def test_a_flag_quoted_in_an_exceptions_message_lines_is_no_fact() -> None:
    """The message's later lines are the exception's words, even when they name sglang and a flag."""
    log = _log(
        "Traceback (most recent call last):",
        f'  File "{SITE}/sglang/srt/configs/model_config.py", line 328, in load_pointer_head',
        "    raise OSError(msg)",
        "OSError: the model could not be found.",
        "Run sglang with --model-path pointing at a local folder, or a hub id.",
    )
    analysis = classify_text(log)
    assert "model_path" not in analysis.facts
    assert analysis.error is not None and "pointing at a local folder" in analysis.error.text
