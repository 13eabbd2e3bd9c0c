"""The recommended-config JSON as a training script reads it: pure, from the recommendation
(:func:`tuner.core.recommend._pipeline.recommend`), the chosen trial and the study's spec.

The recommendation's flat keys stay as they are (scripts rely on them), beside
``schema_version`` and the sections; docs/reference/json.md ("Schema and sections") says what
each holds and at how many significant digits floats are kept.
"""

from __future__ import annotations

import math
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import DEFAULT_PRECISION
from tuner.core.devices import hosts_in
from tuner.core.optimizers import from_description
from tuner.core.record import decode

SCHEMA_VERSION = 3
"""Raised when a key is removed or changes meaning, not for a new key (docs/reference/json.md)."""
SECTIONS = ("recommended", "fit", "compile", "distribution", "evidence", "provenance")
MEASURED_DIGITS = 6  # a measurement: throughput, loss, noise scale, ratios
SETTING_DIGITS = 15  # a setting: learning rate, Adam's moments, epsilon
EXACT_DIGITS = 17  # enough for every float64 to read back as itself
EXACT_KEYS = frozenset({"model_hyperparameters"})
"""Values the user's model is built from, kept exactly: a hypermodel rebuilt from the JSON must
be the model the trial trained."""
MEASURED_KEYS = frozenset(
    {
        "throughput",
        "final_loss",
        "train_loss",
        "gradient_noise_scale",
        "statistical_efficiency",
        "goodput",
        "input_throughput",
        "baseline_throughput",
        "speedup_vs_single_device",
        "scaling_efficiency",
        "throughput_ci",
        "loss_tolerance",
        "seed_loss_spread",
        "seed_final_losses",
        "speedup_ci",
        "scaling_efficiency_ci",
        "time_to_target_s",
        "time_to_target_ci",
        "prediction",
        "close_calls",
        "lr_law",
        "learning_rate_ci",
    }
)
"""The flat keys (and ``per_device_signature`` keys) that hold measurements."""


def export_document(
    rec: dict[str, Any], chosen: FrozenTrial, spec: dict[str, Any], storage: str | None
) -> dict[str, Any]:
    """``rec`` (the recommendation, whose trial is ``chosen``) with ``schema_version`` and the
    sections, floats at their precision. ``spec``: the study's stored spec
    (``StudySpec.to_dict()``); ``storage``: the URL, password masked (``None``: not known)."""
    attrs = decode(chosen).flat
    search, workload = spec.get("search", {}), spec.get("workload", {})
    named = workload.get("optimizer") or "adam"  # or Keras's serialized form: its class
    named = named if isinstance(named, str) else str(named.get("class_name"))
    optimizer, source = optimizer_section(attrs, named, rec)
    if rec.get("learning_rate_source") == "lr_law":  # the measured lr*, not the trial's rate
        optimizer["config"]["learning_rate"] = float(rec["learning_rate"])
    document = {
        "schema_version": SCHEMA_VERSION,
        "recommended": recommended_section(rec, optimizer),
        "fit": fit_section(rec),
        "compile": compile_section(rec, attrs, workload),
        "distribution": distribution_section(attrs, search, workload.get("backend")),
        "evidence": evidence_section(rec, attrs, spec),
        "provenance": provenance_section(attrs, workload, storage, source),
        **{key: value for key, value in rec.items() if key not in ("schema_version", *SECTIONS)},
    }
    return tidy_document(document)


def recommended_section(rec: dict[str, Any], optimizer: dict[str, Any]) -> dict[str, Any]:
    """What a plain-Keras training script needs: ``optimizer`` as
    ``keras.optimizers.deserialize`` takes it, ``precision`` as ``set_global_policy`` does."""
    section = {
        "global_batch_size": int(rec["global_batch_size"]),
        "per_replica_batch_size": int(rec["per_replica_batch_size"]),
        "learning_rate": float(rec["learning_rate"]),
        "optimizer": optimizer,
        "precision": str(rec.get("precision") or DEFAULT_PRECISION),
    }
    steps = (rec.get("accumulation") or {}).get("steps")
    if steps:  # the optimizer's gradient_accumulation_steps; fit feeds batch / steps at a time
        section["accumulation_steps"] = int(steps)
    return section


def optimizer_section(
    attrs: dict[str, Any], spec_optimizer: str, rec: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """The serialized optimizer the trial trained with, and its source: the Keras config the
    trial stored (``trained``); rebuilt from its class and scalar settings, for trials stored
    before the config was (``described``); the spec's optimizer at the trial's learning rate,
    when the trial stored no optimizer (``spec``)."""
    described = attrs.get("optimizer")
    if isinstance(described, dict) and isinstance(described.get("keras"), dict):
        keras_config = described["keras"]
        return {**keras_config, "config": dict(keras_config["config"])}, "trained"
    rebuilt = from_description(described, spec_optimizer, float(rec["learning_rate"]))
    return rebuilt, "described" if described else "spec"


def fit_section(rec: dict[str, Any]) -> dict[str, Any]:
    """What a user pastes into ``model.fit``: ``batch_size`` alone. How long the trial trained
    is evidence (:func:`trial_budget`): in ``fit`` it would cut the user's training short."""
    return {"batch_size": fit_batch(rec)}


def fit_batch(rec: dict[str, Any]) -> int:
    """The global batch, or the micro-batch when the optimizer accumulates."""
    return int(rec["global_batch_size"]) // int((rec.get("accumulation") or {}).get("steps") or 1)


def trial_budget(
    rec: dict[str, Any], attrs: dict[str, Any], search: dict[str, Any]
) -> dict[str, Any]:
    """What the trial trained for: ``epochs``, or ``train_samples`` and ``steps``; else ``{}``."""
    if search.get("train_samples") is not None:
        used = attrs.get("train_samples_used") or int(search["train_samples"])
        steps = max(1, int(used) // fit_batch(rec))  # a budget below one batch trained one
        return {"train_samples": int(search["train_samples"]), "steps": steps}
    if attrs.get("windows") or search.get("epochs"):
        return {"epochs": int(attrs.get("windows") or search["epochs"])}
    return {}


def compile_section(
    rec: dict[str, Any], attrs: dict[str, Any], workload: dict[str, Any]
) -> dict[str, Any]:
    """How the model is built and compiled beyond the optimizer's settings: the dtype policy,
    whether the optimizer was loss-scaled (``mixed_float16``), and :func:`compiled_with`."""
    policy = str(rec.get("precision") or DEFAULT_PRECISION)
    return {
        "dtype_policy": policy,
        "loss_scale_optimizer": policy == "mixed_float16",
        **compiled_with(attrs, workload),
    }


def compiled_with(attrs: dict[str, Any], workload: dict[str, Any]) -> dict[str, Any]:
    """The loss and optimizer class the trial trained with, and ``from_build`` (then the build's
    ``metrics``, ``loss_weights`` and ``weighted_metrics`` it set). Trials stored before they
    recorded it: the spec's names, what is not known left out."""
    described = attrs.get("compile")
    if not isinstance(described, dict):
        optimizer = attrs.get("optimizer")
        from_build = optimizer.get("from_build") if isinstance(optimizer, dict) else None
        known = {
            "from_build": from_build,
            "loss": None if from_build else workload.get("loss"),
            "optimizer_class": None if from_build else workload.get("optimizer"),
        }
        return {key: value for key, value in known.items() if value is not None}  # unknown: absent
    extra = ("loss_weights", "metrics", "weighted_metrics")
    return {
        "from_build": bool(described.get("from_build")),
        "loss": described.get("loss"),
        "optimizer_class": described.get("optimizer"),
        **{key: described[key] for key in extra if described.get(key) is not None},
    }


def distribution_section(
    attrs: dict[str, Any], search: dict[str, Any], backend: str | None = None
) -> dict[str, Any]:
    """The strategy and the loop (the replicas, batches and devices are flat keys); under JAX
    Keras's ``DataParallel``, across hosts with the hosts and each one's devices."""
    hosts = hosts_in(str(attrs.get("device_signature") or ""))
    jax = backend == "jax" or hosts > 1
    section = {
        "strategy": "keras.distribution.DataParallel" if jax else "MirroredStrategy",
        "loop": attrs.get("loop", search.get("loop", "fit")),
        "update_on": attrs.get("update_on", search.get("update_on", "replicas")),
    }
    if hosts > 1:  # each host runs keras.distribution.initialize() first, then DataParallel
        replicas = int(attrs.get("num_replicas") or hosts)
        section.update(hosts=hosts, devices_per_host=replicas // hosts)
    return section


def evidence_section(
    rec: dict[str, Any], attrs: dict[str, Any], spec: dict[str, Any]
) -> dict[str, Any]:
    """What the choice stands on beyond the flat keys: the trial's budget, its loss, the
    losses and run throughputs behind the values, and with a target :func:`target_evidence`."""
    return {
        "trial_budget": trial_budget(rec, attrs, spec.get("search", {})),
        "loss": _used_loss(attrs, spec.get("workload", {})),
        "epoch_train_losses": list(attrs.get("epoch_losses") or []),
        "run_throughputs_samples_per_s": attrs.get("repeats"),
        "throughput_spread_fraction": attrs.get("throughput_spread"),
        "peak_memory_bytes": attrs.get("peak_memory_bytes"),
        **target_evidence(rec, attrs),
    }


def _used_loss(attrs: dict[str, Any], workload: dict[str, Any]) -> Any:
    """The loss the final loss is of: the trial's (a build's), else the spec's name."""
    described = attrs.get("compile")
    if isinstance(described, dict) and described.get("loss") is not None:
        return described["loss"]
    return workload.get("loss")


def target_evidence(rec: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """With a target loss: its compile and evaluation seconds, and the loss at each check."""
    if rec.get("target_loss") is None:
        return {}
    return {
        "compile_s": attrs.get("compile_s"),
        "eval_s": attrs.get("eval_s"),
        "target_curve": attrs.get("target_curve"),
    }


def provenance_section(
    attrs: dict[str, Any], workload: dict[str, Any], storage: str | None, optimizer_source: str
) -> dict[str, Any]:
    """Where the JSON comes from beyond the flat keys: storage, host, the workload's functions."""
    return {
        "storage": storage,
        "host": attrs.get("host"),
        "model": workload.get("model"),
        "data": workload.get("data") or workload.get("dataset"),
        "optimizer_config_source": optimizer_source,
    }


def tidy_document(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every float at its precision (see the module's docstring)."""
    tidied: dict[str, Any] = {}
    for key, value in document.items():
        if key in EXACT_KEYS:
            tidied[key] = rounded(value, EXACT_DIGITS)
        elif key == "evidence" or key in MEASURED_KEYS:
            tidied[key] = rounded(value, MEASURED_DIGITS)
        elif key == "per_device_signature" and isinstance(value, dict):
            tidied[key] = {sig: tidy_document(entry) for sig, entry in value.items()}
        else:
            tidied[key] = rounded(value, SETTING_DIGITS)
    return tidied


def rounded(value: Any, digits: int) -> Any:
    """``value`` with every float (nested too) at ``digits`` digits, a non-finite one ``None``."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item, digits) for item in value]
    return value
