"""Python tracebacks in a log: the frames say where the process was (serving requests, or which startup step),
the source line under a frame is code (never the error), and the line that ends the traceback names the
exception, whatever its name looks like (`triton.runtime.errors.OutOfResources: ...`, `KeyboardInterrupt`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Frames that only run once the scheduler serves: its event loops (normal, overlap, pipeline, disaggregated),
# one batch's run, the overlap scheduler's forward thread, the tokenizer manager's request handling; before
# 0.3 the controller's loop and the TP worker's step (controller_single.loop_for_forward ->
# tp_worker.exposed_step -> forward_step -> forward_decode_batch / forward_fill_batch).
_SERVING_FUNCS = (
    "event_loop",
    "run_event_loop",  # 2026: run_scheduler_process -> run_event_loop -> dispatch_event_loop -> event_loop_*
    "dispatch_event_loop",
    "run_batch",
    "forward_thread_func",
    "process_batch_result",
    "handle_generate",
    "loop_for_forward",
    "exposed_step",
    "forward_step",
    "forward_decode_batch",
    "forward_fill_batch",
    "transfer_worker",  # PD disaggregation's KV transfer threads (disaggregation/*/conn.py): live requests
    "backup_from_device",  # HiCache's write-back of live KV to host memory (mem_cache/hicache*)
)
# A forward pass: serving, unless a startup step (graph capture, a warm-up run, memory profiling) called it.
_FORWARD_FUNCS = frozenset(
    {"forward_extend", "forward_decode", "forward_idle", "forward_batch_generation", "forward_split_prefill"}
)
# A speculative worker's functions that run on a batch (srt/speculative/*worker*.py: draft, verify,
# forward_batch_speculative_generation, forward_draft_extend, _mamba_verify_update, ...).
_SPEC_STEPS = ("forward_", "draft", "verify", "_draft", "_verify", "_mamba_verify")
# Startup steps that run forward passes of their own.
_STARTUP_FUNCS = frozenset(
    {"kernel_warmup", "_dummy_run", "warmup", "profile_run", "capture", "_capture_graph"}
)
# A graph's own capture: cuda_graph_runner.py, 0.5.23's runner/decode_cuda_graph_runner.py and
# prefill_cuda_graph_runner.py, the piecewise/NPU/XPU siblings (every such file ends in `graph_runner.py`).
# model_runner.init_cuda_graphs also builds the eager runner and warms up all-reduce workspaces, whose
# failures are no capture failure.
_CAPTURE_FUNCS = frozenset(
    {"capture", "_capture", "capture_one_batch_size", "capture_one_shape", "_capture_graph"}
    | {"_capture_one_stream"}
)
# Files and functions that name a startup step (the innermost one wins).
_FRAME_HINTS = (
    ("cuda_graph_runner", "capturing_graphs"),
    ("graph_runner", "capturing_graphs"),
    ("init_cuda_graphs", "capturing_graphs"),
    ("init_device_graphs", "capturing_graphs"),
    ("capture_one_batch_size", "capturing_graphs"),
    ("_capture_cuda_graph", "capturing_graphs"),  # an attention backend's init_forward_metadata_capture_*
    ("init_memory_pool", "allocating_pools"),
    ("init_attention_backend", "allocating_pools"),  # after the pools, before the graphs
    # LoRA's manager: after the weights, before the pools (model_runner.initialize)
    ("init_lora_manager", "allocating_pools"),
    ("pool_configurator", "allocating_pools"),
    ("kv_cache_configurator", "allocating_pools"),
    ("profile_max_num_token", "allocating_pools"),
    ("load_weights", "loading_weights"),
    ("load_model", "loading_weights"),
    ("model_loader", "loading_weights"),
    ("init_torch_distributed", "distributed_init"),
    ("initialize_model_parallel", "distributed_init"),
    ("init_distributed_environment", "distributed_init"),
    ("server_args.py", "arguments"),
    ("/arg_groups/", "arguments"),  # 0.5.23 checks its arguments in srt/arg_groups/*_hook.py
)
# The line that ends a traceback: a (dotted) class name, then its message. Outside a traceback only names that
# say what they are count (an Error/Exception/Exit suffix, or a dotted module path before the class).
EXCEPTION_LINE = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s*(.*))?$")
_NAMED_EXCEPTION = re.compile(
    r"((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit)|Exception|BaseException)"
    r"|(?:[a-z_]\w*\.)+[A-Z]\w*)(?::\s*(.*))?$"
)  # a bare `Exception: ...` too: SGLang raises its graph-capture failure as one (cuda_graph_runner.py)


# a call of the scheduler's (or detokenizer's) serving loop, not asyncio's `get_event_loop()`
_CALLS_EVENT_LOOP = re.compile(r"(?:\b|\brun_|\bdispatch_)event_loop\w*\(")


def frame_file(line: str) -> str:
    """The file name a `File "/a/b/flashinfer_backend.py", line 452, in f` frame names ("" if none)."""
    start = line.find('File "')
    end = line.find('"', start + 6) if start >= 0 else -1
    return line[start + 6 : end].rsplit("/", 1)[-1] if end > start else ""


def frame_func(line: str) -> str:
    """A frame's function: `..., line 452, in f` (a traceback) or `..., line 452 in f` (faulthandler)."""
    cut = line.rfind(" in ")
    return line[cut + 4 :].strip() if cut >= 0 else ""


# Calls that enter a startup step, as a frame's source line shows them (never a file name: a serving
# frame's `self.graph_runner.replay(` is no capture).
_STEP_CALLS = (
    ("init_cuda_graphs(", "capturing_graphs"),
    ("init_device_graphs(", "capturing_graphs"),
    ("capture_one_batch_size(", "capturing_graphs"),
    ("init_attention_backend(", "allocating_pools"),
    ("init_memory_pool(", "allocating_pools"),
    ("init_lora_manager(", "allocating_pools"),
    ("profile_max_num_token(", "allocating_pools"),
    ("load_model(", "loading_weights"),
    ("load_weights(", "loading_weights"),
    ("init_torch_distributed(", "distributed_init"),
    ("initialize_model_parallel(", "distributed_init"),
    ("init_distributed_environment(", "distributed_init"),
)
# Files that name a step only when no frame above them did: the pools' buffers (mem_cache/memory_pool.py,
# _npu, _host) are also touched while capturing graphs or serving, so they speak only for an excerpt that
# starts below init_memory_pool.
_WEAK_HINTS = (("/mem_cache/memory_pool", "allocating_pools"),)


# Building a model's layers and their quantization methods (model_loader._initialize_model -> the model's
# and its layers' __init__ -> quant_config.get_quant_method / create_weights): only load_model does that.
_BUILDS_LAYERS = frozenset({"__init__", "get_quant_method", "create_weights"})


def _frame_hint_loop(line: str) -> str | None:
    for needle, hint in _FRAME_HINTS:
        if needle in line:
            return hint
    return None


def _hint_automaton() -> Callable[[str], str | None] | None:
    """`_frame_hint_loop` as one Aho-Corasick pass (pyahocorasick, as prefilter.py): every frame and source
    line of a traceback asks; the earliest needle of _FRAME_HINTS found wins, as in the loop."""
    try:
        import ahocorasick
    except ImportError:  # pragma: no cover - a dependency; the loop gives the same answers, slower
        return None
    automaton = ahocorasick.Automaton()
    for order, (needle, hint) in enumerate(_FRAME_HINTS):
        automaton.add_word(needle, (order, hint))
    automaton.make_automaton()
    scan = automaton.iter

    def find(line: str) -> str | None:
        best: tuple[int, str] | None = None
        for _, found in scan(line):
            if best is None or found[0] < best[0]:
                best = found
        return best[1] if best is not None else None

    return find


frame_hint: Callable[[str], str | None] = _hint_automaton() or _frame_hint_loop


def exception_line(body: str, in_traceback: bool) -> tuple[str, str] | None:
    """(exception name, message) when `body` is the line that names an exception."""
    if not body[:1].isalpha():
        return None
    colon = body.find(":", 0, 200)
    if " " in (body[:colon] if colon > 0 else body):
        return None  # prose: the name before the colon is one word (cheap test before any regex)
    m = (EXCEPTION_LINE if in_traceback else _NAMED_EXCEPTION).match(body)
    if m is None:
        return None
    name = m.group(1)
    bare = in_traceback and m.group(2) is None and "." not in name
    # a bare word ends a traceback only if it looks like a class (`KeyboardInterrupt`, `OutOfResources`)
    if bare and not name.endswith(("Error", "Exception")) and not _looks_like_class(name):
        return None
    return name.rsplit(".", 1)[-1], (m.group(2) or "")[:300]


def _looks_like_class(name: str) -> bool:
    return name[1:2].islower() and any(c.isupper() for c in name[1:])


class TraceTracker:
    """The traceback being read: its frames, the step they name, and whether SGLang's own code is in it."""

    def __init__(self) -> None:
        self.open: tuple[int, str | None] | None = None  # (line, time) of a traceback nothing outlived yet
        self.started = 0  # the line the last traceback started on
        self.started_time: str | None = None  # the time of the record it started in
        self.frames = 0
        self.in_sglang = False
        self.after_frame = False  # the line after `File "..."` is that frame's source code
        self.last_frame = ""
        self.last_source = ""
        self.hint: str | None = None  # innermost startup step a frame names (or "arguments")
        self.serving = False  # a frame of the serving loop: decisive
        self.forward = False  # a forward pass outside any startup step
        self.startup = False  # a startup step that runs forward passes itself
        self.ignored = False  # Python's "Exception ignored in: ..." (a destructor at exit), not a death
        self.tail = False  # the previous line was a frame or its source: this one may end the traceback
        self.at_exit = False  # a frame of the exit machinery (multiprocessing's resource tracker)
        self.rank: str | None = None  # the rank tag of the record the traceback started in
        self.raised_in_args = False  # SGLang's innermost frame is its argument code: an argument check failed
        self.graph_runner = False  # a frame of a graph runner (capture, replay): the graphs themselves failed
        self.modules = 0  # `<module>` frames: the entry script's, then each module it was importing
        self.in_module = False  # the last frame is a module's top level (its source line is an import)
        self.hint_weak = False  # the hint came from a helper's file or a layer's __init__, not a step's frame

    def line(self, body: str, first: str, time: str | None) -> str | None:
        """Take a frame ("frame"), its source line or `^^^` markers ("code"); "thread" for faulthandler's
        `Thread 0x...` header of another thread; None for any other line (left to the caller)."""
        if (first == " " or first == "F") and 'File \\"' in body:
            body = body.replace('\\"', '"')  # a frame copied from a JSON export: `File \"/path\", line N`
        if (first == " " or first == "F") and body.lstrip().startswith('File "'):
            self.frame(body)
            self.tail = True
            return "frame"
        if first == "T" and body.startswith("Thread 0x"):
            self.after_frame = False
            return "thread"  # (faulthandler's frames have no source lines: a header may follow a frame)
        if first == "C" and body.startswith("Current thread 0x"):
            self.after_frame = False
            self.restart_frames()  # faulthandler's crashing thread: only its frames say where
            return "current"
        if self.after_frame:
            self.after_frame = False
            # the frame's source: indented, or (indentation lost in a paste) anything but the exception line
            if first == " " or (time is None and exception_line(body, in_traceback=True) is None):
                self.source(body)
                self.tail = True
                return "code"
        if first == " " and body.lstrip(" ^~") == "":
            return "code"  # Python 3.11's ^^^^ markers under that source line
        if (first == "r" or first == " ") and body.lstrip(" ").startswith("raise "):
            self.source(body)  # `raise RuntimeError(f"NCCL error: {e}")` is code; the next line is the error
            self.tail = True
            return "code"
        return None

    def start(self, n: int, time: str | None, ignored: bool) -> None:
        self.open = (n, time)
        self.started = n
        self.started_time = time
        self.frames = 0
        self.in_sglang = False
        self.hint = None
        self.serving = self.forward = self.startup = self.at_exit = self.raised_in_args = False
        self.graph_runner = False
        self.modules = 0
        self.hint_weak = False
        self.ignored = ignored

    def frame(self, body: str) -> None:
        self.after_frame = True
        self.last_frame = frame_file(body)
        self.frames += 1
        if "sglang/" in body and _SGLANG_FRAME.search(body):
            self.in_sglang = True
            # only SGLang's innermost frame counts (a library's below it, enum's or argparse's, does not):
            # 0.5.23's server_args.resolve_once also runs the device detection and imports whole model code,
            # whose failures are no argument check
            self.raised_in_args = self.last_frame == "server_args.py" or "/arg_groups/" in body
        if "/multiprocessing/" in body or "atexit" in body:
            self.at_exit = True
        func = frame_func(body)
        if (
            "graph_runner" in self.last_frame
            or func in _CAPTURE_FUNCS
            or func.endswith("_capture_cuda_graph")
        ):
            self.graph_runner = True
        if func.startswith(_SERVING_FUNCS):
            self.serving = True
        elif func in _FORWARD_FUNCS:
            self.forward = True
        elif func in _STARTUP_FUNCS:
            self.startup = True
        elif "/speculative/" in body and func.startswith(_SPEC_STEPS):
            self.forward = True  # a draft or verify step of a speculative worker: a live batch
        if "graph_runner" in body and func.startswith("replay"):
            self.forward = True  # replaying a captured graph is a decode step while serving
            return
        self.in_module = func == "<module>" or "importlib" in body
        if self.in_module:
            self.modules += 1
            return  # a module being imported: `model_loader` in an import chain loaded nothing yet
        hint = frame_hint(body)
        if hint is not None:
            self.hint, self.hint_weak = hint, False
        elif self.hint is None:
            self.hint = next((h for needle, h in _WEAK_HINTS if needle in body), None)
            builds = func in _BUILDS_LAYERS and "/layers/attention/" not in body
            if self.hint is None and builds and ("/layers/" in body or "/models/" in body):
                self.hint = "loading_weights"  # a model's layers being built: load_model's first half
            self.hint_weak = self.hint is not None

    def restart_frames(self) -> None:
        """Forget what earlier frames said (another thread's stack in a faulthandler dump)."""
        self.frames = self.modules = 0
        self.hint = None
        self.serving = self.forward = self.startup = self.graph_runner = self.hint_weak = False

    @property
    def importing(self) -> bool:
        """Raised while a module was being imported: a `<module>` frame below the entry script's own (whose
        top-level code also runs the server), or importlib's."""
        return self.modules >= 2

    @property
    def exit_noise(self) -> bool:
        """A traceback of Python's exit machinery with no SGLang frame: printed while exiting, not a death."""
        return self.at_exit and not self.in_sglang

    def source(self, body: str) -> None:
        self.after_frame = False
        self.last_source = body.strip()[:200]
        if "event_loop" in body and _CALLS_EVENT_LOOP.search(body):
            self.serving = True  # `scheduler.event_loop_overlap()`: the frame had entered the serving loop
        elif not self.in_module and "(" in body:
            # the call under the innermost frame names the step it entered (`self.init_cuda_graphs()`,
            # `self.load_model()`): a traceback cut right after it still says where it was
            hint = next((h for call, h in _STEP_CALLS if call in body), None)
            if hint is not None:
                self.hint, self.hint_weak = hint, False

    def phase(self) -> str | None:
        """The phase the frames put the failure in: serving ("running") before any startup step they name."""
        if self.serving:
            return "running"
        if self.hint is not None and self.hint != "arguments":
            return self.hint
        if self.forward and not self.startup:
            return "running"
        return None


# A frame in SGLang's own code (not merely under a conda env that happens to be called "sglang").
_SGLANG_FRAME = re.compile(r"(?:-packages|python|\.\.\.)/sglang/|sglang/srt/")
