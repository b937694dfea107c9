"""One exception chain is one error event (signals.py's FailureLog calls `merge_chain` when Python's words
between two tracebacks joined them): which exception is quoted and which are context."""

from __future__ import annotations

from dataclasses import replace

from sgtui.core.logs.state import Signal, StartupState

_OWN_WORDS = ("exception", "message", "source", "frame", "context")  # what one exception of a chain said


def merge_chain(state: StartupState, first: int, last: int, while_handling: bool) -> None:
    """Merge signal `last` into `first` (and drop `last`). Python prints last the exception that propagated
    (SGLang's own error, raised while handling a library's): it is quoted, the earlier ones are kept as
    context; a known class of the earlier ones holds when the last is of no known class. `while_handling`:
    Python's words were "During handling of the above exception, another exception occurred"."""
    signals = state.signals
    earlier, final = signals[first], signals[last]
    if while_handling and final.error_class is None and is_fault(earlier):
        # a CUDA fault or a dead peer, then a cleanup step that failed because of it ("CUDA-capable
        # device(s) is/are busy or unavailable" while restoring a stream): the fault is what went wrong
        earlier, final = final, earlier
    known = final.error_class is not None or earlier.error_class is None
    context = list(earlier.values.get("context", ()))
    if earlier.text[:300] not in context:  # a library may raise the same error twice in one chain
        context.append(earlier.text[:300])
    kept = {k: v for k, v in earlier.values.items() if k not in _OWN_WORDS}
    values = {**kept, **final.values, "context": context}
    signals[first] = replace(
        final,
        rank=final.rank or earlier.rank,
        error_class=final.error_class if known else earlier.error_class,
        strength=final.strength if known else earlier.strength,
        order=min(earlier.order, final.order),
        phase=final.phase if final.phase != "starting" else earlier.phase,
        values=values,
    )
    del signals[last]
    state.invalidate()


def is_fault(signal: Signal) -> bool:
    """A CUDA fault, a fatal signal or a distributed failure: what a later exception in the same chain follows
    from, not what it explains."""
    return bool(signal.values.get("crash")) or signal.error_class == "nccl"
