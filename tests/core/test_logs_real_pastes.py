"""Real pastes from public SGLang issues and notes (tests/fixtures/logs/issues/, each file's `# source:` names
where it comes from): tails that start or end inside a traceback, a crash whose traceback follows its header,
kernel assertions, the scheduler watchdog, an exception raised beside graph capture rather than by it."""

from __future__ import annotations

from pathlib import Path

from sgtui.core.logs import classify_text, diagnose
from sgtui.core.logs.analysis import LogAnalysis

ISSUES = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "issues"


def _explain(name: str) -> LogAnalysis:
    return classify_text((ISSUES / name).read_text(encoding="utf-8"))


def _error(name: str) -> tuple[str | None, str | None, int | None]:
    error = _explain(name).error
    assert error is not None
    return error.error_class, error.phase, error.line


def test_a_scheduler_crash_takes_its_phase_from_the_frames_logged_after_its_header() -> None:
    """scheduler.py logs "Scheduler hit an exception: Traceback ..." and then the frames: the source line
    `scheduler.event_loop_overlap()` says it died serving, and 50 running requests say the same."""
    assert _error("sglang-6624-busy-prefill-then-crash.log") == ("child_failed", "running", 7)


def test_a_pasted_failure_before_a_serving_traceback_happened_while_serving() -> None:
    """The CUBLAS error is the cause (the first line of the paste); the scheduler traceback logged after
    it runs through run_batch: the server was serving, not starting."""
    error_class, phase, line = _error("sglang-19081-cublas-before-traceback.log")
    assert (error_class, phase, line) == ("other", "running", 4)


def test_pre_0_3_serving_frames_put_a_crash_in_the_serving_phase() -> None:
    """0.2.x: ControllerSingle.loop_for_forward -> tp_worker.exposed_step -> forward_decode_batch."""
    assert _error("sglang-1087-controller-single-0.2.log")[:2] == ("other", "running")


def test_the_scheduler_watchdog_fires_only_with_a_batch_in_flight() -> None:
    error_class, phase, _ = _error("sglang-3752-watchdog-timeout.log")
    assert (error_class, phase) == ("stalled", "running")
    assert "while serving requests" in diagnose(_explain("sglang-3752-watchdog-timeout.log"))[0].detail


def test_kernel_assertion_lines_are_the_cause_and_are_counted_once() -> None:
    """ATen prints one `Assertion ... failed.` line per GPU thread; the first is the error, the scheduler's
    death follows from it (not "its error is not in this log")."""
    analysis = _explain("sglang-23828-kernel-assertion-lines.log")
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line, analysis.error.phase) == ("other", 4, "running")
    assert [c.kind for c in analysis.error.consequences] == ["death"]
    assert diagnose(analysis)[0].title == "A CUDA kernel's assertion failed (device-side assert)"


def test_device_side_assert_triggered_gets_its_own_diagnosis() -> None:
    analysis = _explain("sglang-pr3730-device-side-assert.log")
    assert analysis.error is not None and analysis.error.error_class == "other"
    diagnosis = diagnose(analysis)[0]
    assert diagnosis.title == "A CUDA kernel's assertion failed (device-side assert)"
    assert "CUDA_LAUNCH_BLOCKING" in [s.flag for s in diagnosis.suggestions]


def test_a_bare_exception_line_is_an_error_and_its_wrapped_message_is_joined() -> None:
    """SGLang raises "Capture cuda graph failed" as a bare `Exception`; the reporter wrapped the OOM text
    over lines. The message names its own step: capturing graphs, though nothing before it says so."""
    analysis = _explain("sglang-23769-capture-oom-bare-exception.log")
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.phase) == ("cuda_graph_failed", "capturing_graphs")
    assert "GPU 0 has a total capacity of 140.06 GiB" in analysis.error.text


def test_an_exception_beside_graph_capture_is_no_capture_failure() -> None:
    """model_runner.init_cuda_graphs builds the eager runner, whose warm-up sets up FlashInfer's all-reduce
    workspace: "requires SM90" is a feature this GPU lacks, raised with no graph runner's frame."""
    error_class, phase, _ = _error("paste-glm-pp2-flashinfer-fusion-requires-sm90.log")
    assert (error_class, phase) == ("other", "capturing_graphs")


def test_another_loggers_record_does_not_continue_an_exceptions_message() -> None:
    analysis = _explain("notes-dcu-pd-assertion-then-info-line.log")
    assert analysis.error is not None and analysis.error.error_class == "incompatible_flags"
    assert "INFO:" not in analysis.error.text
    assert analysis.error.text.endswith("mixed chunked prefill.")


def test_a_pool_capped_by_max_total_tokens_says_so_rather_than_raising_the_memory_fraction() -> None:
    analysis = _explain("docs-native-apis-max-total-tokens.log")
    assert analysis.outcome == "ready"
    advice = next(d for d in diagnose(analysis) if d.title == "KV pool smaller than one full-length request")
    flags = [s.flag for s in advice.suggestions]
    assert flags[0] == "--max-total-tokens" and "--mem-fraction-static" not in flags


def test_a_peer_gone_during_capture_is_a_distributed_failure_not_a_capture_bug() -> None:
    """The graph runner wraps what failed: "Capture cuda graph failed: [...gloo/.../pair.cc:534] Connection
    closed by peer" is a node that went away (its peer hit NCCL's watchdog), not a kernel."""
    error_class, phase, _ = _error("sglang-3254-capture-wraps-gloo-peer-closed.log")
    assert (error_class, phase) == ("nccl", "capturing_graphs")


def test_a_lost_tcpstore_is_a_distributed_failure() -> None:
    """SGLang inside Ray actors (verl): torch's TCPStore ping fails ("invalid nonce returned") and its
    socket is reset by the peer while the process group is created."""
    error_class, phase, _ = _error("verl-ray-tcpstore-nonce.log")
    assert (error_class, phase) == ("nccl", "distributed_init")


def test_an_nccl_warning_before_its_traceback_takes_the_tracebacks_step() -> None:
    """The first NCCL WARN ("connect ... returned Connection refused") has no frame of its own; the
    traceback logged after it runs through init_torch_distributed."""
    error_class, phase, _ = _error("slurm-nccl-warn-refused-then-traceback.log")
    assert (error_class, phase) == ("nccl", "distributed_init")


def test_a_paste_indented_in_a_list_item_keeps_its_times_and_ranks() -> None:
    """GitHub list items and quotes indent pasted lines: the `[time DP1 TP3 EP3]` prefix is still read."""
    analysis = _explain("slurm-dp-attention-deepep-indented.log")
    begin = next(m for m in analysis.milestones if m.kind == "load_weight_begin")
    assert (begin.time, begin.rank) == ("2026-02-20 11:13:52", "DP1 TP3 EP3")


def test_an_exception_while_handling_a_cuda_fault_is_not_the_error() -> None:
    """The illegal memory access is quoted; "CUDA-capable device(s) is/are busy or unavailable", raised while
    restoring a stream during its handling, is context."""
    analysis = _explain("sglang-3892-illegal-access-then-busy-device.log")
    assert analysis.error is not None
    assert analysis.error.text.startswith(
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    assert any("busy or unavailable" in c for c in analysis.error.values["context"])


def test_the_nccl_watchdogs_first_report_is_the_error_line() -> None:
    """ProcessGroupNCCL's "Exception (either an error or timeout) detected by watchdog at work: 32" comes
    before its "Timeout at NCCL work: 32"."""
    analysis = _explain("sglang-3932-nccl-watchdog-detected.log")
    assert analysis.error is not None and analysis.error.error_class == "nccl"
    assert "detected by watchdog" in analysis.error.text


def test_a_c_assertion_abort_is_a_crash_and_0_1s_bare_warm_up_failure_a_failure() -> None:
    """Triton's compiler hits glibc's `assert()` ("Allocation.cpp:40: ... Assertion `...' failed.": SIGABRT),
    then 0.1.x prints the failed warm-up request bare ("HTTPConnectionPool(...): Read timed out")."""
    analysis = _explain("sglang-199-triton-assert-then-warmup-timeout-0.1.log")
    assert analysis.outcome == "failed"
    assert analysis.error is not None and analysis.error.error_class == "other"
    assert "Assertion" in analysis.error.text


def test_a_kernel_assertion_cut_before_failed_is_still_the_cause() -> None:
    """torch's own message has back-quotes ("either `inf`, `nan`"): the printf's head names the assertion."""
    error_class, phase, _ = _error("podman-capture-kernel-assert-with-backquotes.log")
    assert (error_class, phase) == ("other", "running")


def test_a_kv_cache_line_cut_at_the_terminals_width_is_still_the_milestone() -> None:
    analysis = _explain("sglang-pr28171-cpu-lines-cut-at-terminal-width.log")
    assert "kv_cache_allocated" in [m.kind for m in analysis.milestones]
    assert (analysis.facts["kv_tokens"], analysis.facts["k_size_gib"]) == (20585625, 137.42)
    assert analysis.facts.get("v_size_gib") is None  # cut: "V size" without its number


def test_nccl_failing_to_connect_its_peers_is_distributed_init() -> None:
    """ "socketStartConnect ... failed : Software caused connection abort": NCCL's bootstrap, while the
    communicators are created (ncclCommInitRank), though nothing before it says where the launch was."""
    assert _error("sglang-5594-nccl-socket-connect-abort.log")[:2] == ("nccl", "distributed_init")


def test_gloos_monitored_barrier_is_a_peer_that_never_finished_loading() -> None:
    """0.4.5's load_model waits in `dist.monitored_barrier` after the weights: "Rank 3 successfully reached
    monitoredBarrier, but received errors while waiting for send/recv from rank 0"."""
    error_class, phase, _ = _error("sglang-5602-gloo-monitored-barrier.log")
    assert (error_class, phase) == ("child_failed", "loading_weights")


def test_a_failure_of_no_rank_is_in_the_slowest_ranks_phase() -> None:
    """0.1.x, TP2: both ranks began loading, only rank 1 finished; the router's traceback is rank 0's wait."""
    analysis = _explain("sglang-99-rank0-never-finishes-loading-0.1.log")
    assert analysis.error is not None and analysis.error.phase == "loading_weights"


def test_the_steps_between_weights_and_pools_have_their_phase() -> None:
    """LoRA's manager (after the weights) and the pools' buffers (an excerpt starting below init_memory_pool:
    only mem_cache/memory_pool*.py frames are left) both put a failure in allocating pools."""
    assert _error("miles-lora-init-after-weights.log")[1] == "allocating_pools"
    assert _error("gpustack-4761-npu-kv-pool-oom.log")[1] == "allocating_pools"


def test_a_traceback_cut_in_the_argument_code_is_no_flag_conflict() -> None:
    """server_args.__post_init__ also reads the model's config: a traceback that ends at its frame, before
    any exception line, says nothing about the flags."""
    assert _error("ome-546-traceback-cut-in-server-args.log")[0] != "incompatible_flags"


def test_a_failure_in_the_kv_transfer_thread_happened_while_serving() -> None:
    """PD disaggregation's transfer_worker thread moves KV for live requests (the access log shows a 500)."""
    analysis = _explain("llm-d-2433-pd-transfer-worker.log")
    assert analysis.error is not None and analysis.error.phase == "running"
    assert "# " not in analysis.error.text  # the reporter's remark after it is no part of the message


def test_an_rl_engines_tail_of_control_requests_is_a_serving_server() -> None:
    """slime drives SGLang through /generate, /abort_request and /flush_cache: answered, it serves."""
    assert _explain("slime-1136-mid-run-control-requests.log").outcome == "ready"


def test_a_batch_with_no_free_kv_slots_kills_the_scheduler_while_serving() -> None:
    """ "Prefill out of memory. Try to lower your batch size." is logged, then raised (alloc_token_slots)."""
    analysis = _explain("report-swa-prefill-out-of-memory.log")
    assert analysis.outcome == "failed"
    assert analysis.error is not None and (analysis.error.error_class, analysis.error.phase) == (
        "other",
        "running",
    )
    assert diagnose(analysis)[0].title == "The KV cache ran out while serving"


def test_the_memory_balance_check_ends_distributed_init() -> None:
    error_class, phase, _ = _error("writeup-hetero-gpus-memory-unbalanced.log")
    assert (error_class, phase) == ("memory_unbalanced", "distributed_init")


def test_the_allocators_oom_warning_is_the_cause_of_the_schedulers_death() -> None:
    """PyTorch's "memory allocation failed with OOM on device 0 while trying to allocate N bytes (free: F,
    total: T)" is the only OOM text in a tail cut inside the traceback."""
    analysis = _explain("sglang-38202-allocator-oom-warning.log")
    assert analysis.error is not None and analysis.error.error_class == "cuda_oom"


def test_retractions_are_printed_only_while_requests_decode() -> None:
    assert _explain("sglang-4184-retractions-only.log").outcome == "ready"


def test_advice_in_a_logging_record_sets_no_flag() -> None:
    """ "WARNING:sglang.srt.server_args:... try to use --disable-radix-cache": advice, not the command."""
    assert _explain("notes-lfm2-logging-record-advice.log").facts.get("disable_radix_cache") is not True


def test_a_message_ends_where_the_next_capture_begins() -> None:
    analysis = _explain("draft-capture-verify-graph-failed-blank-line.log")
    assert analysis.error is not None and analysis.error.error_class == "cuda_graph_failed"
    assert "Capturing batches" not in analysis.error.text


def test_an_example_command_in_an_sglang_record_is_not_the_launch() -> None:
    """DeepGEMM's pre-compile warning quotes `--model deepseek-ai/DeepSeek-V3 --tp 8` on every FP8 run."""
    facts = _explain("sglang-pr10622-deepgemm-example-command.log").facts
    assert facts.get("model_path") != "deepseek-ai/DeepSeek-V3" and facts.get("tp_size") != 8


def test_a_kernel_librarys_native_check_exits_the_process() -> None:
    """FlashMLA's CHECK_CUDA prints "CUDA error (file:line): no kernel image ..." and calls exit(1)."""
    analysis = _explain("sglang-14700-flashmla-native-cuda-error.log")
    assert analysis.outcome == "failed"
    assert analysis.error is not None and analysis.error.error_class == "other"


def test_a_weights_progress_bar_means_the_weights_are_loading() -> None:
    """ "Multi-thread loading shards: 0% ..." with no "Load weight begin" in the excerpt."""
    assert _error("sglang-12577-loading-shards-bar-then-crash.log")[1] == "loading_weights"


def test_frames_copied_from_a_json_export_are_frames() -> None:
    """`File \\"/sgl-workspace/.../scheduler.py\\", line 989, in event_loop_normal`: escaped quotes."""
    assert _error("sglang-15050-json-escaped-frames.log")[1] == "running"


def test_nccls_init_error_chain_is_a_failed_communicator() -> None:
    """NCCL_DEBUG=INFO's "bootstrap.cc:285 -> 2 ... init.cc:1799 -> 2": ncclCommInitRank failed."""
    assert _error("sglang-6017-nccl-init-error-chain.log")[:2] == ("nccl", "distributed_init")


def test_hicaches_write_back_runs_while_serving() -> None:
    assert _error("recipe-mi300x-hicache-backup-crash.log")[1] == "running"


def test_the_context_length_warning_is_no_failure() -> None:
    """0.4's default logs "Warning: User-specified context_length ... is greater than the derived ..." and
    goes on (every EAGLE draft prints it); only the ValueError form is fatal."""
    analysis = _explain("docs-eagle-context-length-warning.log")
    assert (analysis.outcome, analysis.error) == ("ready", None)


def test_a_traceback_cut_right_after_a_call_names_the_step_it_entered() -> None:
    """The last source line is `self.init_cuda_graphs()`: the frame had entered graph capture."""
    assert _error("sglang-4968-traceback-cut-after-call.log")[1] == "capturing_graphs"


def test_building_a_models_layers_is_loading_weights() -> None:
    """A linear layer's __init__ -> get_quant_method (bitsandbytes not installed): model construction."""
    assert _error("sglang-2769-bitsandbytes-layer-init.log")[1] == "loading_weights"


def test_a_failed_health_check_that_nothing_ran_after_is_a_hang() -> None:
    """After an EPLB rebalance the detokenizer sends nothing for 20 s (http_server.health_generate) and the
    log ends: the server hung."""
    analysis = _explain("eplb-rebalance-then-health-check-failed.log")
    assert analysis.error is not None
    assert (analysis.outcome, analysis.error.error_class, analysis.error.phase) == (
        "failed",
        "stalled",
        "running",
    )
    assert diagnose(analysis)[0].title == "The server stopped answering (health check failed)"


def test_a_failed_health_check_the_server_recovers_from_is_no_failure() -> None:
    """A long prefill can hold a health request past 20 s: batches after it say the server went on."""
    text = (ISSUES / "eplb-rebalance-then-health-check-failed.log").read_text(encoding="utf-8")
    text += (
        "[2026-04-10 15:39:50 TP0 EP0] Decode batch. #running-req: 8, #token: 9000, token usage: 0.10, "
        "gen throughput (token/s): 800.00, #queue-req: 0\n"
    )
    analysis = classify_text(text)
    assert (analysis.outcome, analysis.error) == ("ready", None)


def test_an_error_message_wrapped_over_lines_is_one_error_with_all_its_values() -> None:
    """ "... leave no GPU memory for the KV cache under\\n--mem-fraction-static=0.94. Raise ... above 0.942":
    the second line is the same error's text (no consequence of its own) and still names the value in use."""
    analysis = _explain("notes-wrapped-leave-no-gpu-memory.log")
    assert analysis.error is not None and analysis.error.consequences == ()
    assert "Raise --mem-fraction-static above 0.942" in analysis.error.text
    assert analysis.facts["mem_fraction_static"] == 0.94


def test_the_2026_scheduler_loop_names_are_serving() -> None:
    """run_scheduler_process -> run_event_loop -> dispatch_event_loop -> event_loop_*: a segfault dump."""
    assert _error("writeup-amd-pd-segfault-run-event-loop.log")[1] == "running"


def test_an_attention_backends_capture_metadata_is_graph_capture() -> None:
    """init_forward_metadata_capture_cuda_graph runs only while capturing; its assert is a capture failure."""
    assert _error("minicpm-sala-attention-backend-capture-assert.log")[:2] == (
        "cuda_graph_failed",
        "capturing_graphs",
    )


def test_an_indented_raise_line_is_code_not_the_error() -> None:
    """`    raise RuntimeError(f"NCCL error: ...")` behind a collector's stamp: the next line is the error."""
    analysis = _explain("writeup-amd-pd-indented-raise-nccl.log")
    assert analysis.error is not None and analysis.error.text.startswith("RuntimeError: NCCL error")


def test_a_docker_stop_with_its_drain_and_a_clean_systemexit_is_no_failure() -> None:
    """ "Gracefully exiting... Remaining number of requests 0." then `SystemExit: 0` out of the event loop."""
    assert _explain("worklog-docker-stop-drain-systemexit.log").outcome != "failed"


def test_c10ds_wait_for_input_timeout_is_a_rendezvous_failure() -> None:
    """ "[c10d] waitForInput: socket ... timed out after 1800000ms" after 30 minutes in distributed init."""
    assert _error("sglang-7478-c10d-wait-for-input-timeout.log")[:2] == ("nccl", "distributed_init")


def test_a_failed_warm_up_is_placed_at_the_http_server_step() -> None:
    """ "Initialization failed. warmup error: ..." (http_server._wait_and_warmup, 0.3 on)."""
    assert _error("sglang-2193-initialization-failed-warmup-error.log")[1] == "serving"


def test_a_paste_with_an_editors_line_numbers_keeps_its_records_and_frames() -> None:
    """vim's `:set number`: "16433 [2026-07-23 ... DP2 TP2 EP2] Scheduler hit an exception" and "16434   File
    ..." frames through run_event_loop."""
    assert _error("sglang-32182-vim-line-numbers.log")[1] == "running"


def test_the_asked_max_total_tokens_is_read_from_the_profiled_value_warning() -> None:
    facts = _explain("ktransformers-1757-max-total-tokens-over-profiled.log").facts
    assert facts["max_total_tokens_arg"] == 100000


def test_a_worker_node_is_ready_when_its_dummy_health_server_starts() -> None:
    """node_rank >= 1 never starts Uvicorn nor prints "ready to roll": engine.py starts a dummy /health
    server once its schedulers are up ("Dummy health check server started in background thread at ...")."""
    assert _explain("note-pd-worker-node-dummy-health-server.log").outcome == "ready"


def test_free_memory_at_graph_capture_is_the_minimum_over_ranks() -> None:
    facts = _explain("report-kimi-rocm-graph-capture-ranks.log").facts
    assert facts["cuda_graph_begin_avail_gib"] == 45.01


def test_a_crash_written_onto_a_progress_bar_and_its_thread_dump() -> None:
    """ "...4.59s/it]Fatal Python error: Segmentation fault", then faulthandler prints other threads' stacks
    before the crashing one ("Current thread 0x..."): only its frames (graph capture) say where."""
    analysis = _explain("sglang-7847-bar-then-segfault-thread-dump.log")
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.phase) == ("cuda_graph_failed", "capturing_graphs")


def test_a_warm_up_failure_is_the_http_servers_step_whatever_traffic_came_before() -> None:
    """A client's requests before ready (a busy prefill) do not make the warm-up's failure a serving one."""
    analysis = _explain("sglang-16855-busy-prefill-then-warmup-failure.log")
    assert analysis.error is not None and analysis.error.phase == "serving"


def test_a_failed_warm_up_cut_before_its_cause_is_no_child_failure() -> None:
    """The HTTP server kills its own tree after the warm-up fails (kill_process_tree(os.getpid()))."""
    assert _error("sglang-2193-initialization-failed-warmup-error.log")[0] == "other"
