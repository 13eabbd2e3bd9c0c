"""``tuner lr-find``: the learning-rate range test at the base batch, in one child that trains as
a trial would while its rate ramps geometrically (:mod:`tuner.worker.lr_find`); the suggestion is
read off its losses here (:func:`tuner.core.lr_find.suggest`). Nothing is stored in a study.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tuner.core import lr_find as core
from tuner.core.errors import ConfigError, TunerError
from tuner.core.options import DEFAULT_MAX_LR, DEFAULT_MIN_LR, LR_FIND_STEPS, named
from tuner.core.outcome import ok_payload
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S, Budget, Event, LrFindRequest, ProgressEvent
from tuner.driver.children import ChildRunner, OnEvent, child_runner, first_precision, workload_ref
from tuner.driver.options import SpecOptions, checked_spec_and_plan
from tuner.files import check_output

if TYPE_CHECKING:
    from tuner.driver.search import Front

FIGURE_SUFFIXES = (".html", ".png")
"""What ``--plot`` writes: an interactive page, or a picture (Kaleido and Chrome)."""
FROZEN_REASON = (
    "the model has no trainable weights (every layer is frozen), so no rate changes its loss; "
    "unfreeze the layers to train (layer.trainable = True) and compile again"
)
"""Why a model with nothing to train gets no suggestion, whatever its curve's noise shows."""
RAMP_RTOL = 1e-3
"""How far the optimizer's rate after the run may be from the ramp's at its step count."""


@dataclass(frozen=True, kw_only=True)
class LrFindOptions(SpecOptions):
    """``tuner lr-find``'s options, each its flag with underscores (:func:`tuner.lr_find`'s too)."""

    COMMAND: ClassVar[str] = "lr-find"

    min_lr: float = DEFAULT_MIN_LR
    max_lr: float = DEFAULT_MAX_LR
    steps: int = LR_FIND_STEPS
    output: Path | None = None
    """Where the JSON report goes."""
    plot: Path | None = None
    """Where the figure goes (``.html`` or ``.png``)."""
    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S

    def spec_overrides(self) -> dict[str, Any]:
        """The flags' overrides, over :data:`LR_FIND_DEFAULTS` for the keys a spec file written
        only for the range test leaves out (a spec written for ``tuner search`` is read as is)."""
        given = {key: value for key, value in super().spec_overrides().items() if value is not None}
        return _missing_keys(self.spec, self.min_lr) | given


LR_FIND_DEFAULTS: dict[str, Any] = {
    "study.name": "lr-find",
    "search.base_batch_size": 64,
    "search.batch_multipliers": [1],
    "search.lr_rules": ["none"],
}
"""What a spec for ``tuner lr-find`` alone may leave out: the grid (the test trains the base batch
at the ramp's rates), a study name (nothing is stored) and the base batch (64, as ``--help``
says); ``base_lr`` is the ramp's first rate, and two epochs stand in for a missing budget."""


def _missing_keys(spec: Any, min_lr: float) -> dict[str, Any]:
    """:data:`LR_FIND_DEFAULTS` for the keys the spec file lacks (none for a spec given as tables,
    no file, or one that cannot be read: loading it says what is wrong)."""
    if not isinstance(spec, str | Path) or not Path(spec).is_file():
        return {}
    from tuner.driver.setup.spec_file import read_toml

    try:
        tables = read_toml(Path(spec))
    except ConfigError:
        return {}
    defaults = {**LR_FIND_DEFAULTS, "search.base_lr": min_lr}
    if not any(key in _table(tables, "search") for key in ("epochs", "train_samples")):
        defaults["search.epochs"] = 2
    return {
        dotted: value
        for dotted, value in defaults.items()
        if dotted.split(".")[1] not in _table(tables, dotted.split(".")[0])
    }


def _table(tables: dict[str, Any], section: str) -> dict[str, Any]:
    table = tables.get(section, {})
    return table if isinstance(table, dict) else {}


def find_lr(
    options: LrFindOptions, front: Front | None = None, runner: ChildRunner | None = None
) -> dict[str, Any]:
    """Run the range test ``options`` describe; return its report (``suggestion`` inside, ``None``
    with a ``reason`` when the loss never fell steadily). Checked once, before the child starts:
    the ramp, the output paths, the options and the spec, the batch against the replicas. Raises
    :class:`ConfigError` for bad input (naming the options as the front end does),
    :class:`TunerError` when the run fails."""
    core.check_range(options.min_lr, options.max_lr, options.steps)
    check_paths(options.output, options.plot)
    notice = front.notice if front is not None else None
    spec, plan = checked_spec_and_plan(options, notice, options.trial_timeout)
    batch = spec.search.grid.base_batch_size
    if batch % plan.num_replicas:
        raise ConfigError(f"global batch {batch} does not divide by {plan.num_replicas} replicas")
    if front is not None:
        front.note(
            f"ramping the learning rate from {options.min_lr:.3g} to {options.max_lr:.3g} over "
            f"{options.steps} steps at global batch {batch} on {plan.num_replicas} "
            f"{plan.kind} replicas ({spec.workload.backend})…"
        )
    request = LrFindRequest(  # the spec's workload at the base batch, one step per window
        plan=plan,
        workload=workload_ref(spec),
        global_batch_size=batch,
        learning_rate=options.min_lr,
        budget=Budget(
            epochs=options.steps, steps_per_epoch=1, val_samples=spec.search.run.val_samples
        ),
        seed=spec.search.run.seed,
        precision=first_precision(spec),
        loop=spec.search.run.loop_kind,
        min_lr=options.min_lr,
        max_lr=options.max_lr,
        lr_steps=options.steps,
    )
    runner = runner if runner is not None else child_runner()
    run = runner.run(
        request, plan.child_environment(), options.trial_timeout, _progress(front, options)
    )
    payload = ok_payload(
        run, memory_capped=plan.memory_limit_bytes is not None, failed="the range test's run failed"
    )
    return report(payload, options)


def _progress(front: Front | None, options: LrFindOptions) -> OnEvent | None:
    """The child's progress as a line to ``front`` (about every 10 s): the step and its rate."""
    if front is None:
        return None
    rates = core.ramp(options.min_lr, options.max_lr, options.steps)

    def on_event(event: Event) -> None:
        if isinstance(event, ProgressEvent) and 0 < event.step <= len(rates):
            front.note(f"step {event.step} of {event.steps}: lr {rates[event.step - 1]:.3g}")

    return on_event


def check_paths(output: Path | None, plot: Path | None) -> None:
    """Refuse an output that cannot be written, and a figure of an unknown kind."""
    if output is not None:
        check_output(output, named("output"))
    if plot is not None:
        if plot.suffix.lower() not in FIGURE_SUFFIXES:
            raise ConfigError(f"{named('plot')} {plot}: give a .html or .png file name")
        check_output(plot, named("plot"))


def report(payload: dict[str, Any], options: LrFindOptions) -> dict[str, Any]:
    """The JSON report of a finished run: the suggestion and what it rests on, every step's rate,
    loss and smoothed loss (``null`` where skipped or not finite)."""
    rates = [float(r) for r in payload["learning_rates"]]
    losses = [math.inf if x is None else float(x) for x in payload["losses"]]
    if not losses:
        raise TunerError("the range test's run trained no step")
    _check_ramp(payload, options)
    finding = core.suggest(rates, losses, planned_steps=options.steps)
    suggestion, reason = finding.suggestion, finding.reason
    if payload.get("trainable_parameters") == 0:  # a flat curve's noise is no suggestion
        suggestion, reason = None, FROZEN_REASON
    return {
        "suggestion": suggestion,
        "spec_line": None if suggestion is None else core.spec_line(suggestion),
        "reason": reason,
        "slope_per_decade": finding.slope,
        "min_loss_lr": finding.min_loss_lr,
        "diverged_lr": finding.diverged_lr,
        "stopped": payload.get("stopped"),
        "global_batch_size": payload["global_batch_size"],
        "num_replicas": payload["num_replicas"],
        "backend": payload["backend"],
        "precision": payload["precision"],
        "min_lr": options.min_lr,
        "max_lr": options.max_lr,
        "planned_steps": options.steps,
        "steps_run": len(losses),
        "skipped_steps": finding.skipped,
        "ema_beta": finding.beta,
        "learning_rates": rates,
        "losses": [_finite(x) for x in losses],
        "smoothed": [_finite(x) for x in finding.smoothed],
        "optimizer": payload.get("optimizer"),
        "seconds": payload.get("seconds"),
        "versions": payload.get("versions", {}),
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def _check_ramp(payload: dict[str, Any], options: LrFindOptions) -> None:
    """The optimizer's rate after the run must be the ramp's at its step count: else the
    updates did not follow the ramp (an optimizer that ignores its schedule), and the curve
    would be read against the wrong rates."""
    steps = int(payload["optimizer_iterations"])
    expected = options.min_lr * (options.max_lr / options.min_lr) ** (steps / (options.steps - 1))
    held = float(payload["learning_rate_after"])
    if not math.isclose(held, expected, rel_tol=RAMP_RTOL):
        raise TunerError(
            f"the optimizer did not follow the ramp: after {steps} steps it holds lr {held:.4g}, "
            f"the ramp says {expected:.4g}; compile the model with a Keras optimizer whose "
            "learning_rate accepts a schedule"
        )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
