"""Read `sglang.launch_server`'s flag table from SGLang's own parser, with heavy modules stubbed.

Standalone, stdlib only, Python 3.8+ (it runs on the target's interpreter; tests/remote/test_flag_payload.py
checks both), and never imported by sgtui: it is sent as text to the target's interpreter
(`remote/flag_probe.py`) and run by `tools/extract_sglang_flags.py` on unpacked wheels, so the shipped
tables and a target's own table come from the same code.

SGLang builds its parser in code (0.5.23 derives it from annotated dataclasses), so reading the source
text would miss choices and defaults computed at import time. This imports `ServerArgs` with every heavy
dependency (torch, transformers, triton, SGLang's model and kernel packages) replaced by an inert stub
through an import hook, runs `ServerArgs.add_cli_args` into a plain argparse parser and prints what
argparse holds. Nothing touches a GPU, loads a model or opens a socket; only `msgspec`, `typing_extensions`
and `yaml` are real (when installed), since SGLang's argument dataclasses need them.

    python flag_payload.py [ROOT]   # ROOT: a folder holding an unpacked `sglang/` (else the installed one)

Output: one line `@@sgtui-flags {"version": ..., "python": ..., "rows": [...]}`.
"""

import argparse
import json
import os
import sys

MARKER = "@@sgtui-flags "
# SGLang subpackages the parser does not need; importing them pulls in torch and kernels.
STUBBED_SGLANG = (
    "sglang.srt.configs",
    "sglang.kernels",
    "sglang.jit_kernel",
    "sglang.srt.models",
    "sglang.srt.managers",
    "sglang.srt.layers",
    "sglang.srt.utils.hf_transformers_patches",
    "sglang.srt.lora",
    "sglang.srt.model_executor",
    "sglang.srt.distributed",
    "sglang.srt.mem_cache",
)
REAL_TOP_LEVEL = ("sglang", "yaml", "msgspec", "typing_extensions")
KIND_BY_TYPE = {
    "str": "str",
    "int": "int",
    "float": "float",
    "loads": "json",
    "json_list_type": "json",
    "human_readable_int": "human_int",
    "nullable_str": "str",
}


def _stdlib_names():
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return set(names) | set(sys.builtin_module_names)
    import sysconfig  # Python < 3.10: whatever the stdlib folder holds

    found = set(sys.builtin_module_names)
    for key in ("stdlib", "platstdlib"):
        folder = sysconfig.get_paths().get(key)
        for sub in (folder, os.path.join(folder or "", "lib-dynload")):
            if sub and os.path.isdir(sub):
                for entry in os.listdir(sub):
                    found.add(entry.split(".")[0])
    return found


def install_stubs(root=None):
    """Put an import hook first in sys.meta_path; returns the stub class (so values can be told apart)."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import types

    class _Meta(type):
        def __getattr__(cls, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return _Stub

        def __getitem__(cls, key):
            return _Stub

        def __iter__(cls):
            return iter(())

        def __or__(cls, other):
            return _Stub

        def __ror__(cls, other):
            return _Stub

        def __call__(cls, *args, **kwargs):
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return args[0]  # used as a decorator
            return _Stub

        def __bool__(cls):
            return False

        def __len__(cls):
            return 0

        def __int__(cls):
            return 0

        def __index__(cls):
            return 0

        def __lt__(cls, other):
            return False

        __gt__ = __le__ = __ge__ = __lt__

        def __mro_entries__(cls, bases):
            return (object,)

        def __enter__(cls):
            return _Stub

        def __exit__(cls, *exc):
            return False

    class _Stub(metaclass=_Meta):
        def __init_subclass__(cls, **kwargs):  # 0.5.20+: a TypedDict subclasses a stub with a class keyword
            pass

    class StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return _Stub

    stdlib = _stdlib_names()
    if root:
        sys.path.insert(0, root)
    real_available = {}

    def really_there(top):
        if top not in real_available:
            finder = importlib.machinery.PathFinder
            real_available[top] = finder.find_spec(top, sys.path) is not None
        return real_available[top]

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            stubbed = any(name == p or name.startswith(p + ".") for p in STUBBED_SGLANG)
            top = name.split(".")[0]
            if not stubbed and (top in stdlib or (top in REAL_TOP_LEVEL and really_there(top))):
                return None
            return importlib.machinery.ModuleSpec(name, self, is_package=True)

        def create_module(self, spec):
            module = StubModule(spec.name)
            module.__path__ = []
            module.__version__ = "2.9.0"
            return module

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, Finder())
    _Stub.missing_real = real_available  # top-level name -> found, for the error when the parser is empty
    return _Stub


def _jsonable(value, stub):
    if value is stub or isinstance(value, type):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v, stub) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v, stub) for k, v in value.items()}
    if hasattr(value, "value") and isinstance(value.value, (str, int)):  # enums
        return value.value
    return str(value)


def _kind(action):
    name = type(action).__name__
    if name == "_StoreTrueAction":
        return "bool"
    if name == "_StoreFalseAction":
        return "bool_false"
    if name == "BooleanOptionalAction":
        return "bool_optional"
    if action.nargs == 0:  # store_const, deprecated switches: the option takes no value
        return "bool"
    return KIND_BY_TYPE.get(getattr(action.type, "__name__", None) or "str", "str")


def rows_of(parser, stub):
    rows = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        nargs = None if action.nargs == 0 else action.nargs
        choices = None
        if action.choices is not None:
            listed = action.choices
            if isinstance(listed, (set, frozenset)):  # set order changes with hash seeds
                listed = sorted(listed, key=str)
            choices = _jsonable(list(listed), stub) or None
        row = {
            "options": list(action.option_strings),
            "dest": action.dest,
            "kind": _kind(action),
            "nargs": nargs if nargs in (None, "+", "*", "?") else str(nargs),
            "choices": choices,
            "default": _jsonable(action.default, stub),
            "help": " ".join(str(action.help or "").split()),
        }
        if type(action).__name__.startswith("Deprecated"):
            row["deprecated"] = True
            new_flag = getattr(action, "new_flag", None)
            if new_flag:
                row["new_flag"] = str(new_flag)
            message = getattr(action, "error_message", None)
            if message:
                row["error_message"] = str(message)
        rows.append(row)
    return rows


def read_table(root=None):
    stub = install_stubs(root)
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(add_help=False)
    ServerArgs.add_cli_args(parser)
    version = None
    if not root:
        try:
            import importlib.metadata as metadata

            version = metadata.version("sglang")
        except Exception:
            version = getattr(sys.modules.get("sglang"), "__version__", None)
            version = version if isinstance(version, str) else None
    python = ".".join(str(part) for part in sys.version_info[:3])
    rows = rows_of(parser, stub)
    if not rows:
        missing = sorted(name for name, found in stub.missing_real.items() if not found)
        why = f" (not installed for this interpreter: {', '.join(missing)})" if missing else ""
        raise RuntimeError("SGLang's parser came out empty" + why)
    return {"version": version, "python": python, "rows": rows}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        table = read_table(root)
    except BaseException as exc:  # one line the caller shows as is
        sys.stdout.write(MARKER + json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    sys.stdout.write(MARKER + json.dumps(table) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
