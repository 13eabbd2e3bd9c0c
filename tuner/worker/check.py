"""Inside the child: check a workload once, on one CPU, before any trial runs (mode ``inspect``).

Catches what would otherwise fail every trial (imports, the data's form, NaN or inf, shapes and
labels that do not fit: one real training step, Keras's own line; loss, optimizer and rule) and
reports the workload's sizes. Logits given to a crossentropy that expects probabilities, and a
noise scale the meter cannot measure, are said, never errors. It reads only the first
:data:`SCAN_SAMPLES` samples of each split: no dataset is ever materialised.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import keras
import numpy as np

from tuner.core.errors import WorkloadError, error_line
from tuner.core.hyperparams import check, defaults
from tuner.core.logits import PROBABILISTIC_LOSSES, logits_line, not_probabilities
from tuner.core.objective import TRAINING_LOSS, is_validation, logged_name, missing_line
from tuner.core.protocol import InspectRequest, Workload
from tuner.core.scaling import optimizer_settings
from tuner.worker import backends, compiled, hypermodel
from tuner.worker.digest import workload_digest, workload_parts
from tuner.worker.noise import failure_reason, overrides
from tuner.worker.sources import FUNCTION, PART_NAMES, Source, leaves, map_leaves
from tuner.worker.workload import check_loss

if TYPE_CHECKING:
    from tuner.worker.backends import Framework

SAMPLES = 8
"""How many examples the check trains one step on: enough to show a mismatch, cheap on any model."""
SCAN_SAMPLES = 256
"""How many examples of each split the check reads and scans for NaN and inf: the first ones."""
CHECK_SEED = 0
CHECK_LR = 1e-3
"""The learning rate of the check's optimizer; the check never trains, so any rate does."""


def check_workload(request: InspectRequest) -> dict[str, Any]:
    """Load the data, build and compile the model, train one step and evaluate once on the first
    samples; the workload's sizes, or :class:`WorkloadError` with one line naming what to fix."""
    workload = request.workload
    backend = backends.backend_name(request)
    inputs = backends.load(backend)
    from tuner.worker.determinism import seed_everything  # keras: once the backend is chosen

    seed_everything(CHECK_SEED)  # as a trial: the same first samples, which the digest holds
    source = inputs.load_source(workload)
    inputs.refuse_across_replicas(source, request.replicas)
    _check_budget(request, source)
    read = {split: inputs.first_batch(source, split, SCAN_SAMPLES) for split in ("train", "val")}
    _check_finite(source.reference, read)
    first = {split: _head(batch, SAMPLES) for split, batch in read.items()}
    x_train, y_train, _ = _parts(first["train"])
    found = hypermodel.discover(workload.model)
    fit_override = hypermodel.check_fit(workload.model, x_train, y_train)
    model, optimizer, compile_info, given = _compiled_model(workload, found)
    compiled_by_build = compile_info["from_build"]
    if "sqrt-adam" in request.lr_rules:
        _check_sqrt_adam(request, optimizer, compiled_by_build)
    if compiled_by_build and request.loop != "fit":
        raise WorkloadError(
            f"{workload.model} compiles its model; a compiled model runs with loop = fit "
            "(the custom loops compile the spec's loss)"
        )
    if request.loop != "fit" and overrides(model, "train_step"):
        raise WorkloadError(
            f"{workload.model} has its own train_step, which the custom loops would never run "
            "(they train on compute_loss): use loop = fit"
        )
    _check_trains(model, workload, source.reference, first)
    warning = loss_warning(model, model.loss, x_train, given)
    arrays = {split: _numpy(batch) for split, batch in read.items()}
    skipped = _noise_skipped(request, inputs, model, source, first["train"])
    return {
        **({"noise_scale_skipped": skipped} if skipped is not None else {}),
        **({"loss_warning": warning} if warning is not None else {}),
        **({"fit_override": fit_override} if fit_override is not None else {}),
        "n_train": source.train_size,
        "n_val": source.val_size,
        "input_form": source.form,
        "input_rebatched": source.rebatched,
        "input_shape": _sample_shape(x_train),
        "parameters": hypermodel.parameter_count(model),
        "versions": inputs.versions(),
        "backend": backend,
        "hypermodel": found,
        "compiled_by_build": compiled_by_build,
        "compile": compile_info,
        "digest": workload_digest(workload, model, arrays),
        "digest_parts": workload_parts(workload, model, arrays),
    }


def _compiled_model(
    workload: Workload, found: dict[str, Any] | None
) -> tuple[Any, Any, dict[str, Any], Any]:
    """The model compiled as a run compiles it, its optimizer, what it compiled with, and the
    spec's loss where the run's is the spec's."""
    values = None
    if found is not None:
        check(found["space"])
        values = defaults(found["space"])
    model = hypermodel.build(workload.model, values)
    build = compiled.of_build(model)
    if workload.loss is not None and "loss" not in (build or {}):
        check_loss(workload.loss)  # the spec's loss is the one used
    args = compiled.compile_args(build, workload, CHECK_LR, workload.model)
    compiled.compile_model(model, args)
    given = compiled.spec_loss(build, workload)
    described = compiled.describe(args, build is not None, given)
    if own := compiled.own_optimizers(model):
        described["own_optimizers"] = own
    if build is not None:
        described["overrides"] = compiled.spec_differences(build, workload)
    return model, args["optimizer"], described, given


def _check_sqrt_adam(request: InspectRequest, optimizer: Any, compiled_by_build: bool) -> None:
    """The optimizer must have Adam's moments, at every ratio of the grid."""
    try:
        optimizer_settings("sqrt-adam", float(request.max_ratio), optimizer.get_config())
    except ValueError as exc:
        model = request.workload.model
        where = f"{model} compiles a" if compiled_by_build else "the optimizer is"
        raise WorkloadError(f"{where} {type(optimizer).__name__}: {exc}") from None


def _check_budget(request: InspectRequest, source: Source) -> None:
    """Unsized training data need ``train_samples``, unsized validation data ``val_samples``."""
    if source.train_size is None and not request.budget.train_samples:
        kind = "infinite" if source.train_infinite else "of unknown size"
        raise WorkloadError(
            f"the training data of {source.reference} are {kind}: give [search] train_samples "
            "(or --train-samples), the samples every trial trains on"
        )
    if source.val_size is None and not request.budget.val_samples:
        raise WorkloadError(
            f"the validation data of {source.reference} have no known size: give [search] "
            "val_samples, the fixed set every trial is evaluated on"
        )


def _check_finite(reference: str, read: dict[str, tuple[Any, ...]]) -> None:
    """No NaN or inf in what the check read: one line naming each array with any, per split."""
    found: dict[str, list[str]] = {}
    for split, batch in read.items():
        for name, array in named_arrays(batch):
            if bad := non_finite_count(array):
                found.setdefault(name, []).append(f"{bad:,} of {array.size:,} values in {split}")
    if found:
        where = "; in ".join(f"{name} ({', '.join(counts)})" for name, counts in found.items())
        raise WorkloadError(
            f"{reference}: NaN or inf in {where}, among the first {SCAN_SAMPLES} samples of each "
            "split (all the check reads); every trial would diverge: clean or filter the data"
        )


def named_arrays(batch: tuple[Any, ...]) -> Iterator[tuple[str, np.ndarray]]:
    """The arrays of an ``(x, y[, sample_weight])`` batch by name (``x``, a key, ``x[0]``)."""
    for name, part in zip(PART_NAMES, batch, strict=False):
        yield from _leaves(name, part)


def _leaves(name: str, part: Any) -> Iterator[tuple[str, np.ndarray]]:
    if isinstance(part, Mapping):
        for key, value in part.items():
            yield from _leaves(str(key), value)
    elif isinstance(part, tuple | list):
        for index, value in enumerate(part):
            yield from _leaves(f"{name}[{index}]", value)
    elif part is not None:
        yield name, _values(part)


def _values(leaf: Any) -> np.ndarray:
    """A leaf's values as NumPy, for scanning and hashing only: a ragged tensor's flat values,
    a sparse tensor's stored values, strings as bytes (the model is given the tensors)."""
    if hasattr(leaf, "flat_values"):
        leaf = leaf.flat_values
    elif hasattr(leaf, "indices") and hasattr(leaf, "dense_shape"):
        leaf = leaf.values
    return np.asarray(leaf)


def _numpy(batch: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(map_leaves(_values, part) for part in batch)


def _parts(batch: tuple[Any, ...]) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` of a batch as Keras unpacks it (``None`` where absent)."""
    x, y, weights = (*batch, None, None)[:3]
    return x, y, weights


def non_finite_count(array: np.ndarray) -> int:
    """How many values of ``array`` are NaN or infinite (none in integer, bool or text data)."""
    if not np.issubdtype(array.dtype, np.inexact):
        return 0
    return int(array.size - np.count_nonzero(np.isfinite(array)))


def _head(batch: tuple[Any, ...], size: int) -> tuple[Any, ...]:
    """The first ``size`` samples of a batch, in its structure (tensors stay tensors)."""
    return tuple(map_leaves(lambda array: array[:size], part) for part in batch)


def _sample_shape(part: Any) -> Any:
    """One sample's shape: a list for an array (``None`` where ragged), the structure kept."""
    return map_leaves(lambda a: [None if d is None else int(d) for d in tuple(a.shape)[1:]], part)


def _shape_text(part: Any) -> str:
    shape = _sample_shape(part)
    return str(tuple(shape)) if isinstance(shape, list) else str(shape)


def _check_trains(
    model: Any, workload: Workload, reference: str, first: dict[str, tuple[Any, ...]]
) -> None:
    """One training and one evaluation step through ``fit`` and ``evaluate``, as a trial runs
    them (not ``train_on_batch``, which hands a ``train_step`` ``(x, y, None)``), and the
    objective's value read where the trials will read it (:mod:`tuner.core.objective`)."""
    x, y, weights = _parts(first["train"])
    try:
        history = _one_step(model.fit, x, y, weights, epochs=1, shuffle=False)
    except Exception as exc:  # whatever a step raises here, model and data disagree
        shapes = f"x {_shape_text(x)}" + (f", y {_shape_text(y)}" if y is not None else "")
        # Keras takes x alone for a model that computes its own loss; with a compiled loss its
        # message ("None values not supported") does not say that the targets are missing.
        alone = "; the elements are x alone, without targets y" if y is None else ""
        raise WorkloadError(
            f"model {workload.model} does not fit data {reference} ({shapes}): "
            f"{error_line(exc)}{alone}"
        ) from exc
    trained = sorted(getattr(history, "history", None) or {})
    if not is_validation(workload.objective):
        if logged_name(workload.objective) not in trained:
            raise WorkloadError(
                f"model {workload.model}: {missing_line(workload.objective, trained)}"
            )
        return
    val_x, val_y, val_weights = _parts(first["val"])
    try:
        logs = _one_step(model.evaluate, val_x, val_y, val_weights, return_dict=True)
    except Exception as exc:  # it trains: what fails is its evaluation
        raise WorkloadError(_evaluation_failed(workload, reference, trained, exc)) from exc
    if logged_name(workload.objective) not in logs:
        raise WorkloadError(
            f"model {workload.model}: {missing_line(workload.objective, sorted(logs))}"
        )


def _evaluation_failed(
    workload: Workload, reference: str, trained: list[str], exc: Exception
) -> str:
    """The line of a model that trains on the data but cannot be evaluated (a ``train_step``
    that computes a loss ``compile`` does not have, an override of an older signature): what
    to override, or the training loss as the objective where its training reports one."""
    line = (
        f"model {workload.model} trains on data {reference}, but its evaluation fails: "
        f"{error_line(exc).rstrip('.')}; override test_step to evaluate it as train_step "
        "trains it"
    )
    if TRAINING_LOSS in trained:
        line += (
            f', or set [workload] objective = "{TRAINING_LOSS}" to compare trials by their '
            "training loss (the last epoch's, taken while the weights changed and on no "
            "held-out data: it cannot show overfitting)"
        )
    return line


def _noise_skipped(
    request: InspectRequest, framework: Framework, model: Any, source: Source, batch: Any
) -> str | None:
    """Why the trials' noise meter will not measure, from one measurement step, or ``None``."""
    if not request.noise_scale or request.loop not in ("fit", "custom") or source.form == FUNCTION:
        return None  # not measured (a dataset function's trials say why themselves)
    samples = int(leaves(batch[0])[0].shape[0])
    try:
        framework.measure_noise_once(model, batch, samples)
    except Exception as exc:  # whatever the meter raises, the trials train on without it
        return failure_reason(exc)
    return None


def _one_step(run: Any, x: Any, y: Any, weights: Any, **options: Any) -> Any:
    """``fit`` or ``evaluate`` over the samples given, in one batch; what it returns."""
    samples = int(leaves(x)[0].shape[0])
    return run(x, y, sample_weight=weights, batch_size=samples, verbose=0, **options)


def probabilistic(loss: Any) -> str | None:
    """The Keras loss function ``loss`` computes when it is a crossentropy that expects
    probabilities (``from_logits`` false), by name, function or object; else ``None``."""
    function = compiled.loss_function(loss)
    name = function.__name__ if isinstance(function, types.FunctionType) else ""
    if name not in PROBABILISTIC_LOSSES:
        return None
    # A name is the function called with its defaults (probabilities); a Loss says its own.
    if isinstance(loss, keras.losses.Loss) and loss.get_config().get("from_logits", False):
        return None
    return name


def loss_warning(model: Any, loss: Any, x: Any, given: Any) -> str | None:
    """The line to say when ``model``'s outputs on ``x`` are not probabilities although ``loss``
    expects them (``given``: the spec's loss, ``None`` for the build's); a model of several
    outputs, or one the check cannot call on ``x``, is not looked at."""
    function = probabilistic(loss)
    if function is None:
        return None
    try:
        outputs = model(x, training=False)
        if isinstance(outputs, list | tuple | Mapping):
            return None  # several outputs: which loss goes with which is the compile's
        reason = not_probabilities(function, keras.ops.convert_to_numpy(outputs))
    except Exception:  # a call only fit makes: no look, no warning
        return None
    if reason is None:
        return None
    shown = _shown(given if given is not None else loss)
    return logits_line(function, shown, reason, from_spec=given is not None)


def _shown(loss: Any) -> str:
    """The loss as its user wrote it: a name, a serialized loss's class, an object's class."""
    if isinstance(loss, str):
        return repr(loss)
    if isinstance(loss, Mapping):
        return repr(str(loss.get("class_name")))
    return type(loss).__name__ if not isinstance(loss, types.FunctionType) else loss.__name__
