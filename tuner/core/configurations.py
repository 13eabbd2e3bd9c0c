"""One configuration's trials: status, grid point, the representative trial and what it measured.

A configuration (a grid point and model configuration) may have several trials: its first run,
racing's re-runs (``repeat_of``), workers' duplicates. Its REPRESENTATIVE is the COMPLETE trial
with the longest ``repeats`` (it holds the median and interval over all), the lowest number among
equals. A ``same_as`` grid point is never picked: its original stands for it (:func:`is_same_as`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from tuner.core.hyperparams import config_key
from tuner.core.record import STATES, decode
from tuner.core.stats import Interval, log_t_interval, throughput_interval

INFEASIBLE = ("oom", "oom-implied")
"""Statuses of a global batch that does not fit: measured, or implied by a smaller one."""
PRECISION = "precision"
"""The precision axis: a parameter where a study searches several, and always an attribute."""
DEFAULT_PRECISION = "float32"
"""The precision of a trial that names none (tuner before precisions were an axis)."""
ACCUMULATION_STEPS = "accumulation_steps"
"""Trial attribute: the micro-steps of one update (1: the batch fit in one step)."""


def status_of(trial: FrozenTrial) -> str:
    """The tuner status of a trial (``running`` while it runs, ``unknown`` if never set)."""
    if trial.state == TrialState.RUNNING:
        return "running"
    status = decode(trial).status
    # A trial's record is written before its state: a trial another worker failed as stale in
    # between holds an outcome its state never took (FAIL, not that outcome's state).
    if status is None or (trial.state == TrialState.FAIL and STATES.get(status) != "FAIL"):
        return "unknown"
    return status


def grid_point(trial: FrozenTrial) -> tuple[Any, ...]:
    """``(global_batch_size, lr_rule[, precision])``: precision where it is a parameter."""
    point = (trial.params.get("global_batch_size"), trial.params.get("lr_rule"))
    if PRECISION in trial.params:
        return (*point, trial.params[PRECISION])
    return point


def precision_of(trial: FrozenTrial) -> str:
    """The trial's dtype policy: parameter, else attribute, else :data:`DEFAULT_PRECISION`."""
    value = trial.params.get(PRECISION) or decode(trial).configuration.precision
    return str(value) if value else DEFAULT_PRECISION


def model_config(trial: FrozenTrial) -> str:
    """The trial's model hyperparameters as a stable key (``{}`` for a plain model)."""
    return config_key(decode(trial).configuration.model_hyperparameters or {})


def is_complete(trial: FrozenTrial) -> bool:
    """Whether a trial COMPLETEd with finite values (a recommendation can stand on it)."""
    return bool(
        trial.state == TrialState.COMPLETE
        and trial.values
        and all(map(math.isfinite, trial.values))
    )


def is_same_as(trial: FrozenTrial) -> bool:
    """Whether the trial trained nothing itself: it copies the trial it trains exactly like."""
    return decode(trial).reuse.same_as is not None


def runs_of(trial: FrozenTrial) -> int:
    """How many runs of its configuration the trial's values stand on (1 before any repeat)."""
    repeats = decode(trial).result.repeats
    return len(repeats) if isinstance(repeats, list) and repeats else 1


def unique_trials(trials: Iterable[FrozenTrial]) -> list[FrozenTrial]:
    """Per grid point and model: its representative, else latest finished, else any trial."""

    def rank(trial: FrozenTrial) -> tuple[int, int, int]:
        if trial.state == TrialState.COMPLETE:
            return (0, -runs_of(trial), trial.number)
        return (1 if trial.state.is_finished() else 2, 0, -trial.number)

    best: dict[tuple[Any, Any, str], FrozenTrial] = {}
    for trial in trials:
        point = grid_point(trial)
        if None in point:  # killed before its parameters were stored: not a grid point
            continue
        key = (*point, model_config(trial))
        if key not in best or rank(trial) < rank(best[key]):
            best[key] = trial
    return sorted(best.values(), key=lambda t: t.number)


def infeasible_batch_sizes(
    trials: Iterable[FrozenTrial], precision: str | None = None
) -> list[int]:
    """Global batch sizes out of memory (measured or implied) at ``precision``, ascending."""
    return sorted(
        {
            int(t.params["global_batch_size"])
            for t in trials
            if status_of(t) in INFEASIBLE
            and "global_batch_size" in t.params
            and (precision is None or precision_of(t) == precision)
        }
    )


def smallest_oom_batch(
    trials: Iterable[FrozenTrial],
    signature: str | None = None,
    config: str | None = None,
    precision: str | None = None,
) -> int | None:
    """The smallest global batch that really ran out of memory (on ``signature``, ``config`` and
    ``precision``, when given): monotone in the batch within one precision, not across them."""
    sizes = [
        int(t.params["global_batch_size"])
        for t in trials
        if status_of(t) == "oom"
        and (signature is None or decode(t).configuration.device_signature == signature)
        and (config is None or model_config(t) == config)
        and (precision is None or precision_of(t) == precision)
    ]
    return min(sizes) if sizes else None


def without_batch_sizes(error: str, attrs: dict[str, Any]) -> str:
    """``error`` with the batch sizes taken out where they stand as numbers (tensor shapes)."""
    for size in {attrs["global_batch_size"], attrs["per_replica_batch_size"]}:
        error = re.sub(rf"(?<![\w.]){size}(?![\w.])", "<batch>", error)
    return error


def failed_batch(
    trials: Iterable[FrozenTrial], batch: int, signature: str, config: str, precision: str
) -> tuple[list[int], str] | None:
    """Two trials at ``batch`` failing alike under two rules (the batch fails), else ``None``."""
    rules_by_error: dict[str, dict[str, FrozenTrial]] = {}
    for trial in trials:
        record = decode(trial)
        conf = record.configuration
        if (
            status_of(trial) != "error"
            or not record.error
            or conf.global_batch_size != batch
            or conf.device_signature != signature
            or model_config(trial) != config
            or precision_of(trial) != precision
        ):
            continue
        sizes = {"global_batch_size": batch, "per_replica_batch_size": conf.per_replica_batch_size}
        message = without_batch_sizes(record.error, sizes)
        rules_by_error.setdefault(message, {}).setdefault(str(conf.lr_rule), trial)
    for by_rule in rules_by_error.values():
        if len(by_rule) >= 2:
            failed = sorted(by_rule.values(), key=lambda t: t.number)
            return [t.number for t in failed], str(decode(failed[0]).error)
    return None


def steps_of(trial: FrozenTrial) -> int:
    """The micro-steps of ``trial``'s updates (1: no accumulation, so it is known to fit)."""
    return int(decode(trial).configuration.accumulation_steps or 1)


def feasibility_by_precision(
    trials: Iterable[FrozenTrial],
) -> tuple[dict[str, int | None], dict[str, list[int]]]:
    """Per precision: the largest batch done in one step (``None``: none), and the sizes that do
    not fit, ascending."""
    grouped: dict[str, list[FrozenTrial]] = {}
    for trial in trials:
        if "global_batch_size" in trial.params:
            grouped.setdefault(precision_of(trial), []).append(trial)
    largest: dict[str, int | None] = {}
    infeasible: dict[str, list[int]] = {}
    for precision in sorted(grouped):
        group = grouped[precision]
        done = [
            int(t.params["global_batch_size"]) for t in group if is_complete(t) and steps_of(t) == 1
        ]
        largest[precision] = max(done) if done else None
        infeasible[precision] = infeasible_batch_sizes(group)
    return largest, infeasible


def stored_interval(value: Any, method: Any) -> Interval | None:
    """An interval stored as ``[low, high]`` (``None`` unless two finite numbers, low <= high)."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in value):
        return None
    low, high = float(value[0]), float(value[1])
    return Interval(low, high, str(method or "stored")) if low <= high else None


def window_rates(record: dict[str, Any]) -> list[float]:
    """A run's timed window rates (older runs: epoch throughputs less the first)."""
    rates = record.get("window_throughputs") or (record.get("epoch_throughputs") or [])[1:]
    return [float(r) for r in rates if isinstance(r, int | float) and math.isfinite(r)]


def throughput_ci(record: dict[str, Any]) -> Interval | None:
    """A trial's (or baseline's) throughput interval: stored, else computed (older studies)."""
    stored = stored_interval(record.get("throughput_ci"), record.get("throughput_ci_method"))
    if stored is not None:
        return stored
    repeats = [float(r) for r in record.get("repeats") or [] if isinstance(r, int | float)]
    return throughput_interval(repeats, window_rates(record))


def time_to_target_ci(attrs: dict[str, Any]) -> Interval | None:
    """The interval of a trial's time to target: stored, else over its runs' times."""
    runs = [float(r) for r in attrs.get("time_to_target_runs") or [] if r is not None]
    method = f"t over {len(runs)} runs" if len(runs) >= 2 else None
    stored = stored_interval(attrs.get("time_to_target_ci"), method)
    return stored if stored is not None else log_t_interval(runs, method)
