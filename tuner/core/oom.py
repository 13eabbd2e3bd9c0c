"""Named predicates that recognise out-of-memory, in an exception or in a dead child's remains
(under TensorFlow it takes many forms, or none but a signal under a cap), and the line of an
error worth showing (:func:`summary`, :func:`last_message`).
"""

from __future__ import annotations

import re
import signal

_OOM_TYPE_NAMES = frozenset({"ResourceExhaustedError", "OutOfMemoryError", "MemoryError"})

_OOM_MESSAGE = re.compile(
    "|".join(
        [
            r"\bOOM\b",
            r"out of memory",
            r"ResourceExhausted",
            r"Dst tensor is not initialized",
            r"Blas (?:GEMM|xGEMM|SGEMM) launch failed",
            r"CUBLAS_STATUS_ALLOC_FAILED",
            r"cuDNN.*(?:failed to initialize|CUDNN_STATUS_(?:ALLOC_FAILED|NOT_INITIALIZED))",
            r"CUDNN_STATUS_ALLOC_FAILED",
            r"NCCL.*(?:out of memory|unhandled cuda error)",
            r"failed to allocate",
            r"Allocator \(\w+\) ran out of memory",
            r"cannot allocate memory",
            r"std::bad_alloc",  # C++'s own: an allocation under a cap (gloo's buffers, XLA's)
        ]
    ),
    re.IGNORECASE,
)

_CRASH_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGKILL, signal.SIGILL}
)


def is_oom_message(text: str) -> bool:
    """True when ``text`` (an error message or a stderr tail) reads as out-of-memory."""
    return bool(_OOM_MESSAGE.search(text))


_NOISE = ("[[", "File ", "Detected at node", "Graph execution error", "Traceback")
"""Lines of a TensorFlow error that locate it rather than say what went wrong."""

_TALLY = re.compile(
    r"^\d+ (?:root error\(s\) found|successful operations|derived errors ignored)\b"
)
"""The counts TensorFlow adds after the errors of several replicas: they say nothing themselves."""

_ROOT_ERROR = re.compile(r"^\((\d+)\) ([A-Z_]+):\s*")
"""The prefix of one replica's error in a multi-replica message: ``(0) INVALID_ARGUMENT:``."""


def _is_telling(line: str) -> bool:
    """Whether a stripped line says what went wrong (not a frame, tally or cancellation)."""
    if line.startswith(_NOISE) or _TALLY.match(line):
        return False
    root = _ROOT_ERROR.match(line)
    return root is None or root.group(2) != "CANCELLED"


def summary(message: str) -> str:
    """The most telling line of an error message: the out-of-memory line, else the first
    replica's error, else the last line that says what went wrong (the op and the shapes)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    telling = [line for line in lines if _is_telling(line)] or lines
    for line in telling:
        if is_oom_message(line) and len(line) > 12:
            return _ROOT_ERROR.sub("", line)
    roots = [line for line in telling if _ROOT_ERROR.match(line)]
    chosen = roots[0] if roots else (telling[-1] if telling else "")
    return _ROOT_ERROR.sub("", chosen)


_LOG_LINE = re.compile(
    r"^(?:[IWE]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.]+:\d+\]"  # absl: I0101 00:00:17.5 123 x.cc:31]
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWE] "  # TensorFlow's older C++ log format
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|To enable the following instructions: )"  # the CPU feature line's second line
)
"""A line of TensorFlow's own logging (CUDA drivers, cuInit, cuDNN factories, oneDNN, TF-TRT):
never the child's error. Not a fatal (``F``) line: TensorFlow's ``Check failed`` is the error."""

_LOCATION = re.compile(
    r"^(?:File \"|Traceback \(most recent call last\)|Current thread 0x|Thread 0x"
    r"|Extension modules: |\*\*\* Check failure stack trace|@ +0x)"
)
"""Lines that locate a crash rather than say what it was: Python's stack frames and the list of
extension modules after a segfault, absl's stack after a failed check."""


def last_message(stderr_tail: str) -> str:
    """The last line of a dead child's stderr that says what went wrong (not logging, frames;
    ``""``: none)."""
    lines = [line.strip() for line in stderr_tail.splitlines()]
    said = [line for line in lines if line and not (_LOG_LINE.match(line) or _LOCATION.match(line))]
    return said[-1] if said else ""


def is_oom_error(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is an out-of-memory error."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ in _OOM_TYPE_NAMES or is_oom_message(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False


def is_child_oom(exc: BaseException, cpu_capped: bool) -> bool:
    """Out of memory in a child, or a thread not started under JAX's address-space cap."""
    return is_oom_error(exc) or (cpu_capped and "can't start new thread" in str(exc))


def is_probable_oom(returncode: int, stderr_tail: str, memory_capped: bool) -> bool:
    """True when a child that died without a result most likely ran out of memory: a crash
    signal under a memory cap (capped allocators fail that way), or a stderr that says so."""
    if returncode == 0:
        return False
    if returncode < 0 and memory_capped and -returncode in _CRASH_SIGNALS:
        return True
    return is_oom_message(stderr_tail)
