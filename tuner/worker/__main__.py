"""The trial child process: ``python -m tuner.worker REQUEST.json RESULT.json``.

Reads one request, runs it by its mode and writes one result (the only place a result is
written); progress goes to stdout as ``TUNER-EVENT {json}`` lines. Test aid: ``TUNER_TEST_FAULT``
makes a trial misbehave on purpose (docs/development.md), several faults comma-separated
(``segfault@128,hang@256``). Inert unless set.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path

from tuner.core.protocol import (
    PARENT_PID_ENV,
    Event,
    ProtocolVersionError,
    Request,
    Result,
    TrialRequest,
    decode_request,
    encode_event,
    encode_result,
)
from tuner.core.spec import DEFAULT_BACKEND
from tuner.files import atomic_write_text
from tuner.worker import supervisor, warm
from tuner.worker.modes import Modes


def runners(backend: str = DEFAULT_BACKEND) -> Modes:
    """Each mode's runner, ``backend``'s framework imported here only (its import time measured)."""
    from tuner.worker import backends

    backends.load(backend)
    from tuner.worker.check import check_workload
    from tuner.worker.lr_find import run_lr_find
    from tuner.worker.probe import run_probe
    from tuner.worker.trial import run_trial
    from tuner.worker.validate import run_validation

    return Modes(
        inspect=lambda request, _emit: Result(status="ok", payload=check_workload(request)),
        trial=run_trial,
        probe=run_probe,
        validate=run_validation,
        lr_find=run_lr_find,
    )


def _emit(event: Event) -> None:
    sys.stdout.write(encode_event(event))
    sys.stdout.flush()


def _watch_parent() -> None:
    """Exit when the parent (its pid from the environment) dies: no orphan holds the devices."""
    parent = int(os.environ.get(PARENT_PID_ENV, os.getppid()))
    supervisor.die_with_parent(signal.SIGKILL)
    if supervisor.is_orphaned(parent):
        os._exit(137)

    def watch() -> None:
        while not supervisor.is_orphaned(parent):
            time.sleep(0.5)
        os._exit(137)

    threading.Thread(target=watch, name="tuner-parent-watch", daemon=True).start()


def _fault_matches(at: str, here: tuple[str, str]) -> bool:
    batch, _, rule = at.partition("/")
    return batch == here[0] and rule in ("", here[1])


def _inject_fault(request: Request, result_path: Path) -> None:
    spec = os.environ.get("TUNER_TEST_FAULT", "")
    if not spec or not isinstance(request, TrialRequest):
        return
    # ``fault``, ``fault@BATCH`` or ``fault@BATCH/RULE``: which trials misbehave.
    rule = None if request.rule is None else request.rule.name
    here = (str(request.global_batch_size), str(rule))
    faults = [entry.partition("@") for entry in spec.split(",")]
    chosen = [name for name, _, at in faults if not at or _fault_matches(at, here)]
    if not chosen:
        return
    fault = chosen[0]
    if fault == "segfault":
        import ctypes

        ctypes.string_at(0)
    elif fault == "abort":
        os.abort()
    elif fault == "hang":
        while True:
            time.sleep(60)
    elif fault == "exit":
        os._exit(3)
    elif fault == "garbage":
        result_path.write_text("this is not a result {")
        os._exit(0)
    elif fault == "raise":
        raise RuntimeError("fault injected by TUNER_TEST_FAULT")


def main(argv: list[str]) -> None:
    """Run the request at ``argv[0]``, write its result to ``argv[1]``, exit (or ``--warm``)."""
    backend, argv = warm.split_argv(argv)
    sys.argv[1:] = argv  # the workload sees a warm child's argv as a fresh one's
    request_path, result_path = Path(argv[0]), Path(argv[1])
    started_at = time.time()
    started = time.perf_counter()
    _watch_parent()
    preloaded = warm.preload(backend, runners) if backend is not None else None
    if preloaded is not None:
        taken_at = warm.wait_for_request()
    request = _read_request(request_path)
    if preloaded is not None:  # the trial's time starts at hand-over, not at this process's start
        spawned_at = None if isinstance(request, Result) else request.spawned_at
        started_at = preloaded.handed_over(spawned_at, taken_at)
        started = time.perf_counter() - (time.time() - started_at)
    result = request if isinstance(request, Result) else _answer(request, result_path, preloaded)
    timings = {
        **result.timings,
        "child_total_s": time.perf_counter() - started,
        "child_started_at": started_at,
        "child_finished_at": time.time(),
    }
    if preloaded is not None:
        timings["import_hidden_s"] = preloaded.hidden_s
    atomic_write_text(result_path, encode_result(replace(result, timings=timings)))
    # The result is on disk: skip TensorFlow's teardown, which can take seconds (after an
    # out-of-memory, ~10 s while another replica's allocator waits out its retry).
    sys.stdout.flush()
    sys.stderr.flush()
    _leave_gang(request, result)
    os._exit(0)


def _leave_gang(request: Request | Result, result: Result) -> None:
    """A rank of a run across hosts leaves the JAX runtime in step with the others (JAX only:
    :func:`tuner.worker.backends.jax.leave_gang`); nothing for any other run. A probe's size
    that did not fit is no result the others share: this rank leaves at once."""
    if getattr(request, "gang", None) is None:
        return
    from tuner.core.gang import result_status
    from tuner.worker.backends.jax import leave_gang

    leave_gang(result_status(result))


def _read_request(path: Path) -> Request | Result:
    """The request at ``path``, or the result that refuses it (one line for another protocol
    version: the driver is another tuner version)."""
    try:
        return decode_request(path.read_text())
    except ProtocolVersionError as exc:
        return Result(status="error", error=str(exc))
    except (OSError, ValueError) as exc:  # ProtocolError is a ValueError
        return Result(status="error", error=_shorten(f"{type(exc).__name__}: {exc}"))


def _answer(request: Request, result_path: Path, preloaded: warm.Preloaded | None) -> Result:
    """Run ``request`` by its mode; whatever fails becomes the result that says so."""
    try:
        _inject_fault(request, result_path)
        from tuner.core.errors import WorkloadError, error_line
        from tuner.worker.backends import backend_name

        import_started = time.perf_counter()
        if preloaded is None:
            modes = runners(backend_name(request))
            import_s = time.perf_counter() - import_started
        else:
            modes, import_s = preloaded.runners(backend_name(request), runners)
        try:
            result = modes.answer(request, _emit)
            return replace(result, timings={**result.timings, "import_s": import_s})
        except WorkloadError as exc:
            return Result(status="invalid", error=str(exc))
        except Exception as exc:  # classified, then reported with its tail
            return Result(
                status="oom" if _is_oom(exc) else "error",
                error=_shorten(error_line(exc, limit=600)),
                traceback=_shorten(traceback.format_exc(), 4000),
            )
    except Exception as exc:  # the child must always leave a result
        return Result(status="error", error=_shorten(f"{type(exc).__name__}: {exc}"))


def _is_oom(exc: BaseException) -> bool:
    """Out-of-memory in this child (:func:`tuner.core.oom.is_child_oom`), capped or not."""
    from tuner.core import oom
    from tuner.core.devices import CPU_CAP_ENV

    return oom.is_child_oom(exc, cpu_capped=bool(os.environ.get(CPU_CAP_ENV)))


def _shorten(text: str, limit: int = 600) -> str:
    # Short messages become one line; long ones (tracebacks) keep their lines.
    text = " ".join(text.split()) if limit <= 600 else text
    return text if len(text) <= limit else "…" + text[-limit:]


if __name__ == "__main__":
    main(sys.argv[1:])
