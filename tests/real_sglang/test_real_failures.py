"""The real SGLang 0.5.23's failure paths, launched by `sgtui launch --watch` over OpenSSH: each case exits
1 with SGLang's own final error, the right phase and the rule that fits, and leaves no live server behind
without saying so.

Each case is launched once (module scope) and several tests read it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.real_sglang.conftest import real_host_at
from tests.real_sglang.harness import RealEnv
from tests.real_sglang.realhost import Launch, RealHost, free_port, run_pids

pytestmark = pytest.mark.real_sglang


@dataclass
class Failed:
    launch: Launch
    left: list[int]  # processes of the run alive once `launch --watch` returned

    @property
    def error(self) -> dict[str, Any]:
        return self.launch.last("error")

    @property
    def failed(self) -> dict[str, Any]:
        return self.launch.last("failed")

    def titles(self) -> list[str]:
        return [e["title"] for e in self.launch.events if e.get("event") == "diagnosis"]

    def suggestions(self) -> list[dict[str, Any]]:
        return [s for e in self.launch.events if e.get("event") == "diagnosis" for s in e["suggestions"]]


class FailureCases:
    """case name -> its launch, made on first use and kept; what was left of it is KILLed at once."""

    def __init__(self, host: RealHost) -> None:
        self.host = host
        self.seen: dict[str, Failed] = {}

    def profile(self, name: str, port: int) -> Path:
        host, env = self.host, self.host.env
        if name == "no-accelerator":  # no --device cpu, no CPU engine: SGLang looks for a GPU
            return host.profile(name, port, extra={"device": None}, env=env.server_env(cpu_engine=False))
        if name == "cpu-engine-no-stub":
            return host.profile(name, port, env=env.server_env(stub=False))
        if name == "model-folder-missing":
            return host.profile(name, port, model="/models/does-not-exist")
        if name == "hub-id-offline":
            return host.profile(name, port, model="sgtui-test/no-such-model")
        if name == "mem-fraction-too-small":
            return host.profile(name, port, extra={"mem-fraction-static": 0.0001})
        return host.profile(name, port)

    def __call__(self, name: str) -> Failed:
        if name not in self.seen:
            port = free_port()
            holder = None
            if name == "port-in-use":
                holder = socket.socket()
                holder.bind(("127.0.0.1", port))
                holder.listen(1)
            try:
                launch = self.host.launch(self.profile(name, port))
                self.seen[name] = Failed(launch, run_pids(launch.run_id) if launch.events else [])
            finally:
                self.host.kill_everything()
                if holder is not None:
                    holder.close()
        return self.seen[name]


@pytest.fixture(scope="module")
def cases(real_env: RealEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FailureCases]:
    for host in real_host_at(tmp_path_factory.mktemp("failures"), real_env):
        yield FailureCases(host)


def test_without_an_accelerator_the_launch_fails(cases: FailureCases) -> None:
    case = cases("no-accelerator")
    assert case.launch.rc == 1, case.launch.stdout[-2000:]
    assert case.failed["event"] == "failed"


def test_without_an_accelerator_sglang_s_own_final_error_is_quoted(cases: FailureCases) -> None:
    """Issue 16 item 4: the chain starts with NotImplementedError in get_device; SGLang's error is last."""
    text = cases("no-accelerator").error["text"]
    assert "No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin is available" in text


def test_the_cpu_engine_without_the_stub_fails_on_the_kernel_import(cases: FailureCases) -> None:
    case = cases("cpu-engine-no-stub")
    assert case.launch.rc == 1, case.launch.stdout[-2000:]
    assert "libcuda.so.1" in case.launch.log


def test_the_kernel_import_error_is_quoted_with_its_message_and_no_weights_phase(
    cases: FailureCases,
) -> None:
    """Issue 16 item 5: the message is on the lines after `ImportError:`; nothing was loaded yet."""
    error = cases("cpu-engine-no-stub").error
    assert "common_ops" in error["text"] or "sgl_kernel" in error["text"], error
    assert error["phase"] != "loading_weights"


def test_a_port_in_use_fails_as_port_in_use(cases: FailureCases) -> None:
    case = cases("port-in-use")
    assert case.launch.rc == 1, case.launch.stdout[-2000:]
    assert case.failed["error_class"] == "port_in_use"


def test_a_port_in_use_leaves_no_live_server_behind_without_saying_so(cases: FailureCases) -> None:
    """Issue 16 item 1: SGLang 0.5.23 does not exit after the bind error; it hangs holding ~4 GB."""
    case = cases("port-in-use")
    said = f"sgtui stop {case.launch.run_id}" in case.launch.stdout
    assert case.left == [] or said, case.launch.stdout[-2000:]


def test_a_missing_model_folder_fails(cases: FailureCases) -> None:
    case = cases("model-folder-missing")
    assert case.launch.rc == 1, case.launch.stdout[-2000:]
    assert "/models/does-not-exist" in case.error["text"]


def test_a_missing_model_folder_quotes_the_final_error_and_says_the_path_names_no_model(
    cases: FailureCases,
) -> None:
    case = cases("model-folder-missing")
    assert case.error["text"].startswith("OSError:"), case.error
    titles = [t.lower() for t in case.titles()]
    assert any("model path" in t or "hugging face" in t for t in titles), case.titles()


def test_a_hub_id_with_hf_hub_offline_fails_with_the_hugging_face_rule(
    cases: FailureCases,
) -> None:
    case = cases("hub-id-offline")
    assert case.launch.rc == 1, case.launch.stdout[-2000:]
    assert any("Hugging Face" in t or "model path" in t for t in case.titles()), case.titles()


def test_a_too_small_mem_fraction_static_fails(cases: FailureCases) -> None:
    case = cases("mem-fraction-too-small")
    assert case.launch.rc == 1, case.launch.stdout[-2000:]


def test_a_too_small_mem_fraction_static_is_named_with_its_real_value(cases: FailureCases) -> None:
    """Issue 16 item 7: not "raise from 0 to 0.03"."""
    case = cases("mem-fraction-too-small")
    raises = [s for s in case.suggestions() if s.get("flag") == "--mem-fraction-static"]
    assert raises and all("from 0 " not in s["why"] for s in raises), raises
    assert any("0.0001" in s["why"] for s in raises), raises
