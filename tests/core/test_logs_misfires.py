"""Rules that must not fire on ordinary lines: each case is a log that reads right only if a rule stays quiet
(a retry the store survived, a script's failed poll, the stop someone asked for, asyncio's event loop, a
switch that turns a package off, an allocator warning it recovered from) or picks the right words (a
kernel's own SM need, an allocator OOM inside an NCCL error, the traceback line that follows a kernel's
assertions). The logs are in tests/fixtures/logs/misfires/, built from SGLang's and PyTorch's own wording."""

from __future__ import annotations

from pathlib import Path

from sgtui.core.logs import LogAnalysis, classify_text, diagnose

MISFIRES = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "misfires"


def _explain(name: str) -> LogAnalysis:
    return classify_text((MISFIRES / name).read_text(encoding="utf-8"))


def test_a_store_client_retrying_its_connect_is_no_failure() -> None:
    """The worker node's TCPStore client retries while the master is not up yet ("- retrying")."""
    analysis = _explain("a_store_client_retrying_its_connect_is_no_failure.log")
    assert analysis.outcome == "ready"


def test_a_scripts_failed_poll_before_ready_is_no_warm_up_failure() -> None:
    """Only 0.1.x's bare print of the warm-up's `Read timed out` is the warm-up failing."""
    analysis = _explain("a_scripts_failed_poll_before_ready_is_no_warm_up_failure.log")
    assert analysis.outcome == "ready"


def test_a_store_lost_after_the_stop_someone_asked_for_is_shutdown() -> None:
    """SIGTERM, then the TCPStore's peer goes away with the rest of the process group."""
    analysis = _explain("a_store_lost_after_the_stop_someone_asked_for_is_shutdown.log")
    assert analysis.outcome != "failed"


def test_a_watchdog_firing_while_weights_load_is_no_serving_failure() -> None:
    """Newer SGLang's watchdog is also armed while initialising: the log's own step stands."""
    analysis = _explain("a_watchdog_firing_while_weights_load_is_no_serving_failure.log")
    assert analysis.error is not None and analysis.error.phase == "loading_weights"


def test_asyncios_event_loop_is_not_the_schedulers() -> None:
    """`asyncio.get_event_loop()` in a source line is no call of the serving loop."""
    analysis = _explain("asyncios_event_loop_is_not_the_schedulers.log")
    assert analysis.error is not None and analysis.error.phase == "loading_weights"


def test_a_switch_that_turns_a_package_off_did_not_select_it() -> None:
    """`disable_flashinfer=True` and "No module named 'flashinfer'": the flag is no reason for the import."""
    analysis = _explain("a_switch_that_turns_a_package_off_did_not_select_it.log")
    assert "--disable-flashinfer" not in diagnose(analysis)[0].detail


def test_a_one_node_launch_gets_one_host_advice_whatever_its_dist_init_addr() -> None:
    """nnodes=1 with dist_init_addr 127.0.0.1: Gloo's peer is a process on this host."""
    analysis = _explain("a_one_node_launch_gets_one_host_advice_whatever_its_dist_init_addr.log")
    flags = {s.flag for s in diagnose(analysis)[0].suggestions}
    assert "NCCL_SOCKET_IFNAME" not in flags


def test_a_capture_failure_wrapping_an_nccl_cuda_oom_stays_a_capture_failure() -> None:
    """Only a peer, store, Gloo or watchdog failure inside the capture wrapper is another process gone."""
    analysis = _explain("a_capture_failure_wrapping_an_nccl_cuda_oom_stays_a_capture_failure.log")
    assert analysis.error is not None and analysis.error.error_class == "cuda_graph_failed"


def test_a_kernels_sm_need_is_not_the_releases_floor() -> None:
    """ "This kernel only supports sm100" is a backend's need, not "SGLang only supports sm75 and above"."""
    analysis = _explain("a_kernels_sm_need_is_not_the_releases_floor.log")
    assert "compute capability" not in diagnose(analysis)[0].detail


def test_the_traceback_after_kernel_assertions_is_not_cut() -> None:
    """The traceback ends with CUDA's own "device-side assert triggered" line: it is complete."""
    analysis = _explain("the_traceback_after_kernel_assertions_is_not_cut.log")
    assert "last_traceback_frame" not in analysis.facts


def test_the_allocators_oom_warning_alone_fails_nothing() -> None:
    """PyTorch's caching allocator prints "memory allocation failed with OOM", frees its cache and retries:
    the launch went on to ready."""
    analysis = _explain("the_allocators_oom_warning_alone_fails_nothing.log")
    assert analysis.outcome == "ready"


def test_the_0_5_context_length_error_is_still_bad_arguments() -> None:
    """0.5.x raises the same words that 0.4 only warned with ("Warning: User-specified context_length
    ..."), adding "To allow overriding this maximum, set the env var ..."."""
    analysis = _explain("the_0_5_context_length_error_is_still_bad_arguments.log")
    assert analysis.error is not None and analysis.error.error_class == "bad_arguments"


def test_a_graph_replay_in_a_serving_traceback_is_no_capture() -> None:
    """`ret = self.graph_runner.replay(` under _forward_raw is a decode step: only step calls in source lines
    name a step."""
    analysis = _explain("a_graph_replay_in_a_serving_traceback_is_no_capture.log")
    assert analysis.error is not None and analysis.error.phase == "running"
    assert analysis.error.error_class != "cuda_graph_failed"


def test_building_the_attention_backend_comes_after_the_pools() -> None:
    """init_attention_backend builds FlashInfer's workspace after the pools: a layer's __init__ there is not
    weight loading."""
    analysis = _explain("building_the_attention_backend_comes_after_the_pools.log")
    assert analysis.error is not None and analysis.error.phase == "allocating_pools"


def test_an_nccl_init_error_chain_the_launch_outlived_fails_nothing() -> None:
    """NCCL's `init.cc:N -> 2` unwinding counts only when the launch went no further."""
    analysis = _explain("an_nccl_init_error_chain_the_launch_outlived_fails_nothing.log")
    assert analysis.outcome == "ready"


def test_a_client_polling_before_the_port_opens_is_no_warm_up_failure() -> None:
    """ "Max retries exceeded with url: /generate (... Connection refused)" from a script that polls: the
    server became ready."""
    analysis = _explain("a_client_polling_before_the_port_opens_is_no_warm_up_failure.log")
    assert analysis.outcome == "ready"
