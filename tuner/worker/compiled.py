"""Inside the child: the compile of a user's build, used as the objects the build made.

A compiled build's loss, metrics and optimizer are read back from ``model._compile_config`` (the
arguments as passed), never through ``get_compile_config()``, whose deserialisation fails on an
unregistered custom class ("Could not locate class 'CustomMSE'"). Only the optimizer is made
again, at the rule's learning rate. What the build compiled wins over what the spec names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras

from tuner.core.errors import WorkloadError
from tuner.core.protocol import Workload
from tuner.core.spec import DEFAULT_LOSS, DEFAULT_OPTIMIZER
from tuner.worker import optim
from tuner.worker.workload import make_loss, make_optimizer

COMPILED_KEYS = ("loss", "loss_weights", "metrics", "weighted_metrics")
"""The compile arguments a build's compile gives besides its optimizer, used as objects."""


def of_build(model: Any) -> dict[str, Any] | None:
    """The compile arguments the user's build gave ``model`` (``optimizer`` as the build made it,
    unscaled; keys it left unset absent), or ``None`` when the build did not compile it."""
    if not getattr(model, "compiled", False):
        return None
    stored = getattr(model, "_compile_config", None)
    # Keras keeps compile's own arguments here (its get_compile_config serialises this).
    config: Mapping[str, Any] = getattr(stored, "config", None) or {}
    args = {key: config[key] for key in COMPILED_KEYS if config.get(key) is not None}
    optimizer = config.get("optimizer") or getattr(model, "optimizer", None)
    if optimizer is not None:
        args["optimizer"] = optim.unscaled(optimizer)
    return args


def compile_args(
    build: dict[str, Any] | None, workload: Workload, learning_rate: float, model: str
) -> dict[str, Any]:
    """The arguments of ``model.compile`` for one run at ``learning_rate``: the build's compile
    where it gives one, else the spec's names; :class:`WorkloadError` naming what is missing."""
    args = dict(build or {})
    optimizer, loss = workload.optimizer, workload.loss
    if build is None:  # as before compiled builds were kept: the documented defaults
        optimizer, loss = optimizer or DEFAULT_OPTIMIZER, loss or DEFAULT_LOSS
    if "optimizer" in args:
        args["optimizer"] = optim.at_learning_rate(args["optimizer"], learning_rate)
    elif optimizer is not None:
        args["optimizer"] = make_optimizer(optimizer, learning_rate)
    if "loss" not in args and loss is not None:
        args["loss"] = make_loss(loss)
    if "optimizer" not in args:
        raise WorkloadError(
            f"{model} compiles its model without an optimizer and the spec names none: give "
            "[workload] optimizer"
        )
    return args  # a compile without a loss stays so: its train_step computes its own


def spec_loss(build: Mapping[str, Any] | None, workload: Workload) -> Any:
    """The spec's loss where a run compiles with it (the build gives none), else ``None``."""
    return workload.loss if "loss" not in (build or {}) else None


def compile_model(model: Any, args: Mapping[str, Any]) -> None:
    """Compile ``model`` with ``args`` (:func:`compile_args`). A model the build compiled is
    compiled again through Keras's own ``Model.compile``, not its class's: a subclass's
    ``compile`` may take arguments of its own (keras-io's ``Distiller``: ``alpha``,
    ``temperature``) that it keeps as attributes; calling it again would fail or lose them."""
    if getattr(model, "compiled", False):
        keras.Model.compile(model, **args)
    else:  # the first compile: the model's own, as the user's script would call it
        model.compile(**args)


def own_optimizers(model: Any) -> list[str]:
    """The attributes of ``model`` holding an optimizer other than ``model.optimizer`` (keras-io's
    GAN: ``d_optimizer``, ``g_optimizer``): its own ``train_step`` trains at their rates, never
    the rule's."""
    compiled_with = getattr(model, "optimizer", None)
    return sorted(
        name
        for name, value in vars(model).items()
        if isinstance(value, keras.optimizers.Optimizer) and value is not compiled_with
    )


def describe(args: Mapping[str, Any], from_build: bool, given: Any = None) -> dict[str, Any]:
    """What a run compiles with, as plain data (a custom object as its class and module; the
    spec's serialized loss ``given`` as given, so that ``from_logits`` reaches the export)."""
    described: dict[str, Any] = {
        "from_build": from_build,
        "loss": dict(given) if isinstance(given, Mapping) else named(args.get("loss")),
        "optimizer": named(optim.unscaled(args["optimizer"])) if "optimizer" in args else None,
    }
    for key in ("loss_weights", "metrics", "weighted_metrics"):
        if args.get(key) is not None:
            described[key] = named(args[key])
    if "optimizer" in args and optim.schedule_kept(args["optimizer"]) is not None:
        described["learning_rate_schedule_kept"] = optim.schedule_kept(args["optimizer"])
    return described


def named(value: Any) -> Any:
    """``value`` (a loss, metric or optimizer, or a list or dict of them) as plain data."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(key): named(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [named(item) for item in value]
    kind = "function" if callable(value) and not hasattr(value, "get_config") else "class"
    target = value if kind == "function" or isinstance(value, type) else type(value)
    name = getattr(target, "__name__", repr(target))
    module = getattr(target, "__module__", "") or ""
    if module.split(".")[0] == "keras":
        return name  # Keras's own: its name is enough to find it
    return {kind: name, "module": module}


def spec_differences(build: Mapping[str, Any], workload: Workload) -> dict[str, Any]:
    """The spec's loss and optimizer names the build's compile overrides with something else;
    names Keras resolves to what the build compiled (``"mse"``, ``MeanSquaredError()``) are none."""
    differ: dict[str, Any] = {}
    loss, optimizer = build.get("loss"), build.get("optimizer")
    if workload.loss is not None and loss is not None and not _same_loss(workload.loss, loss):
        differ["loss"] = workload.loss
    name = workload.optimizer
    if name is not None and optimizer is not None and not _same_optimizer(name, optimizer):
        differ["optimizer"] = name
    return differ


def _same_loss(spec: Any, loss: Any) -> bool:
    return loss_function(spec) is not None and loss_function(spec) == loss_function(loss)


def loss_function(loss: Any) -> Any:
    """What a loss computes: the function a name or a built-in ``Loss`` wraps, else its class."""
    try:
        resolved = keras.losses.get(loss) if isinstance(loss, str | Mapping) else loss
    except (ValueError, TypeError):
        return None
    function = getattr(resolved, "fn", None)  # LossFunctionWrapper: MeanSquaredError, ...
    if function is not None:
        return function
    return resolved if not isinstance(resolved, keras.losses.Loss) else type(resolved)


def _same_optimizer(spec: Any, optimizer: Any) -> bool:
    try:
        made = keras.optimizers.get(dict(spec) if isinstance(spec, Mapping) else spec)
    except (ValueError, TypeError):
        return False
    return type(made) is type(optim.unscaled(optimizer))
