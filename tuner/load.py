"""A recommended-config JSON read back in a training script: :func:`load_recommendation`. Files
of schema versions 1 and 2 still load (version 1's optimizer is a top-level section; both hold
the trial's budget in ``fit``, read as :attr:`Recommendation.trial_budget`).

TensorFlow's C++ log lines (``E0000 … failed call to cuInit`` on a host without a GPU, oneDNN's,
absl's) are kept out of the user's own process where tuner is what imports Keras there. The
children's stderr is never touched: it goes to their trial folders."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.recommend import SCHEMA_VERSION


@dataclass(frozen=True)
class Recommendation:
    """A recommended config, ready for ``model.compile(optimizer=rec.optimizer)`` and
    ``model.fit(x, y, **rec.fit_kwargs)``."""

    config: dict[str, Any]
    """The whole JSON, as written by ``tuner export``."""
    optimizer: Any
    """The Keras optimizer the trial trained with (one per model: see :meth:`new_optimizer`)."""
    fit_kwargs: dict[str, Any] = field(default_factory=dict)
    """What ``model.fit`` takes from the recommendation: ``batch_size``, nothing that limits the
    training (the epochs are the user's: the trial's short budget is :attr:`trial_budget`)."""
    custom_objects: dict[str, Any] | None = None

    @property
    def batch_size(self) -> int:
        """The recommended global batch size."""
        return int(self.config["fit"]["batch_size"])

    @property
    def trial_budget(self) -> dict[str, int]:
        """The search's short budget the trial trained for (evidence, not advice):
        ``{"epochs": n}``, or ``train_samples`` and ``steps`` (``{}``: not known)."""
        return trial_budget_of(self.config)

    @property
    def learning_rate(self) -> float:
        """The learning rate the rule gave at this batch (a warm-up's peak)."""
        return float(recommended(self.config).get("learning_rate", self.config["learning_rate"]))

    @property
    def precision(self) -> str:
        """The Keras dtype policy the trial trained under, to set before building the model
        (:meth:`set_precision`)."""
        return precision_of(self.config)

    def set_precision(self) -> str:
        """Set :attr:`precision` as Keras's global policy (before building the model); its name."""
        with quiet_native_logs():
            import keras

        keras.mixed_precision.set_global_policy(self.precision)
        return self.precision

    def new_optimizer(self) -> Any:
        """A fresh optimizer of the same config (an optimizer serves one model; under
        ``MirroredStrategy`` create it inside ``strategy.scope()``)."""
        return optimizer_from(self.config, self.custom_objects)


def load_recommendation(
    path: str | Path, custom_objects: dict[str, Any] | None = None
) -> Recommendation:
    """Read a recommended-config JSON written by ``tuner export`` and build its optimizer
    (``custom_objects`` as for ``keras.optimizers.deserialize``; under ``MirroredStrategy`` call
    it inside ``strategy.scope()``). Raises :class:`~tuner.core.errors.ConfigError` when the file
    cannot be read, is not JSON, or has no ``schema_version`` or a newer one."""
    return recommendation_from(_read(Path(path)), custom_objects, where=str(path))


def recommendation_from(
    config: dict[str, Any],
    custom_objects: dict[str, Any] | None = None,
    *,
    where: str = "the recommendation",
) -> Recommendation:
    """A recommended config already read as a :class:`Recommendation`; ``where`` names it in
    the error of an unbuildable optimizer."""
    try:
        optimizer = optimizer_from(config, custom_objects)
    except (ValueError, TypeError, KeyError) as exc:  # Keras's words for a config it cannot use
        raise ConfigError(f"{where}: the optimizer section cannot be built: {exc}") from None
    return Recommendation(
        config=config,
        optimizer=optimizer,
        fit_kwargs=fit_kwargs(config["fit"]),
        custom_objects=custom_objects,
    )


def optimizer_from(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Any:
    """The Keras optimizer of a recommended config, loss-scaled when the trial's was."""
    # The first variable starts TensorFlow's devices: its C++ lines (cuInit on a host without
    # a GPU) would land above whatever the user prints next.
    with quiet_native_logs():
        import keras

        # Keras's from_config replaces a nested schedule's dict in place: give it a copy.
        section = copy.deepcopy(optimizer_config(config))
        optimizer = keras.optimizers.deserialize(section, custom_objects=custom_objects)
    if not isinstance(optimizer, keras.optimizers.Optimizer):  # Keras hands back what it can't find
        raise ValueError(f"no Keras optimizer class {section.get('class_name')!r}")
    if loss_scaled(config) and not isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def recommended(config: dict[str, Any]) -> dict[str, Any]:
    """A recommended config's ``recommended`` block (``{}`` in a schema version 1 file)."""
    block = config.get("recommended")
    return block if isinstance(block, dict) else {}


def optimizer_config(config: dict[str, Any]) -> Any:
    """The serialized optimizer: ``recommended.optimizer``, else version 1's, else ``None``."""
    return recommended(config).get("optimizer") or config.get("optimizer")


def precision_of(config: dict[str, Any]) -> str:
    """A recommended config's precision: ``recommended.precision``, else (older files)
    ``compile.dtype_policy``, the flat ``precision``, ``float32``."""
    section = config.get("compile")
    policy = section.get("dtype_policy") if isinstance(section, dict) else None
    return str(
        recommended(config).get("precision") or policy or config.get("precision") or "float32"
    )


def loss_scaled(config: dict[str, Any]) -> bool:
    """Whether the trial's optimizer was loss-scaled (older files: under ``mixed_float16``)."""
    section = config.get("compile")
    if isinstance(section, dict) and isinstance(section.get("loss_scale_optimizer"), bool):
        return bool(section["loss_scale_optimizer"])
    return precision_of(config) == "mixed_float16"


def fit_kwargs(fit: dict[str, Any]) -> dict[str, Any]:
    """The ``fit`` section as arguments of ``keras.Model.fit``: ``batch_size`` alone (an older
    file's ``epochs`` or ``steps`` there are the search's budget, not the user's training)."""
    return {"batch_size": int(fit["batch_size"])}


def trial_budget_of(config: dict[str, Any]) -> dict[str, int]:
    """``evidence.trial_budget``; in an older file, ``fit``'s ``epochs`` or ``steps``."""
    evidence = config.get("evidence")
    if isinstance(evidence, dict) and isinstance(evidence.get("trial_budget"), dict):
        budget = evidence["trial_budget"]
        return {str(key): value for key, value in budget.items() if type(value) is int}
    fit = config.get("fit") or {}
    return {key: int(fit[key]) for key in ("epochs", "steps") if key in fit}


def _read(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the recommended config {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not a recommended-config JSON: {exc}") from None
    if not isinstance(config, dict) or "schema_version" not in config:
        raise ConfigError(
            f"{path} has no schema_version: it was written before the fit and optimizer "
            "sections; write it again with `tuner export`"
        )
    version = config["schema_version"]
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        raise ConfigError(
            f"{path} has schema_version {version!r}; this tuner reads 1 to {SCHEMA_VERSION}: "
            "pip install -U mirrortuner"
        )
    missing = [
        key
        for key, section in (("fit", config.get("fit")), ("optimizer", optimizer_config(config)))
        if not isinstance(section, dict)
    ]
    if missing:
        raise ConfigError(f"{path} has no {' or '.join(missing)} section")
    _check_fit(path, config["fit"])
    return config


def _check_fit(path: Path, fit: dict[str, Any]) -> None:
    """The ``fit`` section holds a positive integer ``batch_size`` and ``steps`` or ``epochs``."""
    for key in ("batch_size", "steps", "epochs"):
        value = fit.get(key)
        if (key == "batch_size" or value is not None) and not (type(value) is int and value > 0):
            raise ConfigError(f"{path}: fit.{key} must be a positive integer, got {value!r}")


LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
QUIET_LEVEL = "3"
"""Errors too: cuInit's failure is logged as one, though TensorFlow then runs on the CPU."""
NATIVE_LINE = re.compile(
    rb"^(?:[IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w./-]+:\d+\] .*"
    rb"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR)"
    rb"\r?\n?$"
)
"""absl's line format (severity, date, time (before absl is set up: seconds since 1970), thread,
file:line), and its one warning."""


@contextlib.contextmanager
def quiet_native_logs() -> Iterator[None]:
    """Within the block, C++ log lines on file descriptor 2 are dropped and every other line is
    written there at its end; an import of TensorFlow in it (which reads the level once) gets
    :data:`QUIET_LEVEL` where the user set none."""
    level_set = LEVEL_ENV not in os.environ and "tensorflow" not in sys.modules
    if level_set:
        os.environ[LEVEL_ENV] = QUIET_LEVEL
    try:
        with _native_lines_dropped():
            yield
    finally:
        if level_set:
            os.environ.pop(LEVEL_ENV, None)


@contextlib.contextmanager
def _native_lines_dropped() -> Iterator[None]:
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no descriptor 2 (a service), or a closed sys.stderr
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = [line for line in sink.readlines() if not NATIVE_LINE.match(line)]
            if kept:
                os.write(2, b"".join(kept))
