"""The diagnosis of real failures from public SGLang issues and notes (tests/fixtures/logs/issues/, each
file's `# source:` names where it comes from): what failed decides the advice, so a user is not sent the wrong
way (fewer GPUs for a lost node, P2P off for a refused socket, more GPUs for a model the fallback does not
shard).
"""

from __future__ import annotations

from pathlib import Path

from sgtui.core.logs import Diagnosis, classify_text, diagnose

ISSUES = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "issues"
_ONE_HOST = {"NCCL_P2P_DISABLE", "--tp-size"}


def _diagnosis(name: str) -> Diagnosis:
    result = diagnose(classify_text((ISSUES / name).read_text(encoding="utf-8")))
    assert result, "expected a diagnosis"
    return result[0]


def _flags(d: Diagnosis) -> set[str | None]:
    return {s.flag for s in d.suggestions}


def _whys(d: Diagnosis) -> str:
    return " ".join(s.why for s in d.suggestions)


# ---- 1. NCCL, Gloo and the rendezvous store ------------------------------------------------------------


def test_a_two_node_store_timeout_gets_network_advice_not_fewer_gpus() -> None:
    """2 x 8 GPUs, DistStoreError after 1800 s: the other node never joined. Halving --tp-size ("one GPU in
    the 16-GPU set is at fault") and P2P off are about one host's links, not the rendezvous."""
    d = _diagnosis("sglang-3398-two-nodes-store-timeout.log")
    assert d.error_class == "nccl"
    assert not _flags(d) & _ONE_HOST
    assert "NCCL_SOCKET_IFNAME" in _flags(d) and "GLOO_SOCKET_IFNAME" in _whys(d)
    assert "11.130.1.53:5000 (--dist-init-addr)" in _whys(d)
    assert "rendezvous store" in d.detail and "GPU-to-GPU" not in d.detail
    assert "1800 s" in d.detail


def test_a_lost_tcpstore_points_at_the_first_node_s_own_failure() -> None:
    """ "Ping failed, invalid nonce returned": the store's server (rank 0's process) went away first."""
    d = _diagnosis("verl-ray-tcpstore-nonce.log")
    assert "TCPStore" in d.title and "GPU-to-GPU" not in d.detail
    assert "other node's log" in d.suggestions[0].why
    assert not _flags(d) & _ONE_HOST


def test_gloo_peer_closed_during_capture_is_a_peer_gone_not_the_graphs() -> None:
    """SGLang wraps the Gloo barrier's "Connection closed by peer" in "Capture cuda graph failed": the peer
    at 172.31.18.145 went away; its log has the cause."""
    d = _diagnosis("sglang-3254-capture-wraps-gloo-peer-closed.log")
    assert d.title.startswith("Gloo")
    assert "172.31.18.145:45492 closed the connection" in d.detail
    assert "graphs are not the cause" in d.detail
    assert "other node's log" in d.suggestions[0].why
    assert not _flags(d) & (_ONE_HOST | {"--disable-cuda-graph"})


def test_a_refused_nccl_bootstrap_connection_names_the_address_and_the_firewall() -> None:
    d = _diagnosis("slurm-nccl-warn-refused-then-traceback.log")
    assert d.title == "NCCL could not connect to another node"
    assert "10.99.91.49:58525" in d.detail and "10.99.91.49:58525" in _whys(d)
    assert "NCCL_P2P_DISABLE" not in _flags(d)


def test_a_watchdog_timeout_on_one_host_reads_the_other_ranks_first() -> None:
    """The watchdog's timeout on a single host: the rank that died first is the cause; read the others
    before touching P2P."""
    d = _diagnosis("sglang-3368-watchdog-allreduce.log")
    assert "A collective timed out" in d.detail
    assert "every rank" in d.suggestions[0].why
    assert "NCCL_P2P_DISABLE" in _flags(d)


def test_the_watchdog_sentence_follows_the_watchdog_value_not_the_quoted_words() -> None:
    """ProcessGroupNCCL's "Timeout at NCCL work" is the watchdog too, though it never says "Watchdog"."""
    text = (
        "[rank3]:[E227 16:30:43.526301625 ProcessGroupNCCL.cpp:1834] [PG ID 2 PG GUID 3 Rank 3] Timeout at "
        "NCCL work: 32, last enqueued NCCL work: 32, last completed NCCL work: 31.\n"
    )
    d = diagnose(classify_text(text))[0]
    assert d.error_class == "nccl" and "A collective timed out" in d.detail


# ---- 2. the installation or the GPU cannot run the launch ----------------------------------------------


def test_an_invalid_device_ordinal_counts_the_gpus_each_node_needs() -> None:
    """--tp 16 over --nnodes 2 gives each node 8 GPUs; TP6 asked for GPU 6 on a node that has fewer."""
    d = _diagnosis("sglang-3470-invalid-device-ordinal.log")
    assert d.title == "A GPU index the launch needs does not exist"
    assert "8 GPU(s) (--tp-size 16 / --nnodes 2)" in d.detail and "TP6 asked for GPU 6" in d.detail
    assert {"CUDA_VISIBLE_DEVICES", "--tp-size", "--nnodes"} <= _flags(d)


def test_a_hip_invalid_device_function_is_a_build_without_this_gpu_s_kernels() -> None:
    """MI100 (gfx908) under a ROCm image built for other gfx targets."""
    d = _diagnosis("sglang-5775-hip-invalid-device-function.log")
    assert d.title == "The GPU is not supported by these kernels"
    assert "gfx target" in d.suggestions[0].why


def test_a_gpu_below_sm75_is_named_as_too_old() -> None:
    d = _diagnosis("tke-guide-below-sm75.log")
    assert d.title == "The GPU is older than SGLang supports"
    assert "7.5" in d.detail and "7.5" in d.suggestions[0].why


def test_a_package_that_is_not_installed_is_named() -> None:
    d = _diagnosis("slurm-dp-attention-deepep-indented.log")
    assert d.title == "A Python package is missing or broken"
    assert d.detail.startswith("DeepEP is not installed") and "Install DeepEP" in d.suggestions[0].why


def test_the_flag_that_selects_a_missing_package_is_named() -> None:
    """--moe-a2a-backend deepep chose DeepEP: launching without it is the other way out."""
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8, moe_a2a_backend='deepep')\n"
        "[2026-01-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/layers/moe/token_dispatcher/deepep.py", line 304, in __init__\n'
        "ImportError: DeepEP is not installed. Please install DeepEP package from "
        "https://github.com/deepseek-ai/deepep.\n"
    )
    d = diagnose(classify_text(text))[0]
    assert "which --moe-a2a-backend deepep selects" in d.detail
    assert "--moe-a2a-backend" in _flags(d)


def test_an_import_time_type_error_is_a_package_version_mismatch_named_by_its_package() -> None:
    """launch_server's imports reach transformers' AutoImageProcessor.register with arguments the installed
    transformers (5.3 from git) no longer takes: a version mismatch, not a bug to search for."""
    d = _diagnosis("notes-glm5-import-time-typeerror.log")
    assert "version mismatch" in d.title
    assert "transformers" in d.detail and "Install the transformers version" in d.suggestions[0].why


def test_the_same_words_raised_by_the_running_server_are_no_import_mismatch() -> None:
    """The entry script's own top-level code runs the server: a `<module>` frame of launch_server.py alone
    is no import; it takes a module being imported below it."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        '  File "/opt/sglang/python/sglang/launch_server.py", line 11, in <module>',
        "    launch_server(server_args)",
        '  File "/opt/sglang/python/sglang/srt/entrypoints/http_server.py", line 700, in launch_server',
        "    tokenizer_manager, scheduler_info = _launch_subprocesses(server_args=server_args)",
        "TypeError: Engine.__init__() got an unexpected keyword argument 'log_level'",
    ]
    assert "version mismatch" not in diagnose(classify_text("\n".join(frames) + "\n"))[0].title


def test_an_attribute_error_on_an_object_is_no_package_mismatch() -> None:
    """Only a module missing an attribute says the package differs; None missing one is a bug."""
    text = "Traceback (most recent call last):\nAttributeError: 'NoneType' object has no attribute 'shape'\n"
    assert "version mismatch" not in diagnose(classify_text(text))[0].title


# ---- 3. the Transformers fallback, 4. transformers that does not know the model -------------------------


def test_an_oom_under_the_transformers_fallback_names_the_fallback_not_more_gpus() -> None:
    """GLM-5 (GlmMoeDsaForCausalLM) on 8 x MI355X: every rank logs the fallback, then runs out of memory in
    transformers' own MoE module. The FP8 checkpoint would fit 8 x 288 GiB sharded; the fallback does not
    shard the experts."""
    path = ISSUES / "notes-glm5-transformers-fallback-oom.log"
    analysis = classify_text(path.read_text(encoding="utf-8"))
    assert analysis.facts["transformers_fallback"] == "GlmMoeDsaForCausalLM"
    fit = {
        "verdict": "fails",
        "fixes": [{"flag": "--tp-size", "value": 16, "verdict": "fits", "why": "more GPUs"}],
        "warnings": [{"flag": "--tp-size", "suggested_value": 16, "message": "more GPUs"}],
    }
    d = diagnose(analysis, fit)[0]
    assert d.error_class == "cuda_oom" and "Transformers fallback" in d.title
    assert "native support for GlmMoeDsaForCausalLM" in d.suggestions[0].why
    assert not _flags(d) & {"--tp-size", "--quantization"}


def test_model_impl_transformers_is_the_fallback_too() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8, model_impl='transformers')\n"
        "[2026-01-01 10:00:05 TP0] Load weight begin. avail mem=70.00 GB\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n"
    )
    d = diagnose(classify_text(text))[0]
    assert "Transformers fallback" in d.title and "--tp-size" not in _flags(d)


def test_transformers_that_does_not_know_the_model_type_is_upgraded_first() -> None:
    """HF's AutoConfig raised it: the reporter fixed it by upgrading transformers, not SGLang."""
    d = _diagnosis("notes-glm5-autoconfig-unknown-architecture.log")
    assert d.error_class == "unsupported_model"
    assert d.suggestions[0].why.startswith("Install a transformers release that knows glm_moe_dsa")
    assert "--model-impl" not in _flags(d)


def test_a_store_lost_on_a_launch_that_says_one_node_stays_on_this_host() -> None:
    """--nnodes 1: the store's server is another process on this host, so no advice about other nodes, and
    no P2P or GPU count either (a lost store is no GPU link)."""
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8, nnodes=1)\n"
        "[W1120 01:13:20.886572352 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=81): "
        "Connection reset by peer\n"
        "RuntimeError: nonce == returnedNonce INTERNAL ASSERT FAILED at TCPStore.cpp:418. Ping failed\n"
    )
    d = diagnose(classify_text(text))[0]
    assert d.error_class == "nccl" and "TCPStore" in d.title
    assert not _flags(d) & (_ONE_HOST | {"NCCL_SOCKET_IFNAME"})
    assert "every rank" in d.suggestions[0].why


def test_a_non_numeric_sglang_port_from_a_kubernetes_service_is_named() -> None:
    """get_open_port -> s.bind(("", port)) with SGLANG_PORT=tcp://... that a Service named sglang injects."""
    d = _diagnosis("tke-guide-sglang-port-service-env.log")
    assert "SGLANG_PORT" in d.title and "Service named sglang" in d.detail


def test_an_invalid_device_ordinal_classed_as_bad_arguments_gets_the_same_count() -> None:
    """The class may say the launch's numbers are wrong (bad_arguments) rather than other: same advice."""
    from dataclasses import replace

    from sgtui.core.logs.diagnosis.arguments import bad_arguments
    from sgtui.core.logs.diagnosis.common import Context

    analysis = classify_text((ISSUES / "sglang-3470-invalid-device-ordinal.log").read_text(encoding="utf-8"))
    assert analysis.error is not None
    error = replace(analysis.error, error_class="bad_arguments")
    d = bad_arguments(Context(analysis, error, dict(analysis.facts), None))
    assert d.title == "A GPU index the launch needs does not exist" and d.error_class == "bad_arguments"
