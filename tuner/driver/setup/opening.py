"""Opening a study: create it, or resume it when the spec and the devices match what it holds."""

from __future__ import annotations

import datetime as _dt
import platform
import re
import warnings
from importlib import metadata
from typing import Any, Literal

import optuna
from optuna.trial import TrialState

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError
from tuner.core.options import named
from tuner.core.record import decode_study, store_study
from tuner.core.spec import StudySpec, check_study_name, identity_of, shown_reference
from tuner.driver.observer import quiet_optuna
from tuner.driver.trial.grid import make_sampler
from tuner.storage import mask_password, open_storage
from tuner.storage.guarded import attach, storage_call

METRIC_NAMES = ("final_loss", "throughput")
DIRECTIONS: list[Literal["minimize", "maximize"]] = ["minimize", "maximize"]


def open_study(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    study_name: str | None,
    info: dict[str, Any],
    heartbeat_s: float | None,
    wait_s: float | None = None,
) -> optuna.Study:
    """Create or resume the study ``study_name`` (``None``: the spec's name) in ``storage_url``,
    waiting ``wait_s`` for an unreachable storage. Raises :class:`ConfigError` when the stored
    study was made by another program, with another spec, or on other devices."""
    name = spec.name if study_name is None else check_study_name(study_name, named("study_name"))
    storage = open_storage(storage_url, create=True, heartbeat_s=heartbeat_s, wait_s=wait_s)
    where = f"study {name!r} in {mask_password(storage_url)}"
    sampler = make_sampler(spec, info.get("hypermodel"))
    # Each step is one storage call of tuner's, run again whole after an outage (both are
    # idempotent: a study made meanwhile is loaded, an attribute set twice is set once).
    study = storage_call(storage, _load_or_create, storage, name, spec, sampler, where)
    attach(study, storage)
    storage_call(study, _check_same_workload, study, storage, info, (where, name))
    storage_call(study, _record, study, spec, plan, info, (where, name))
    return study


def _load_or_create(
    storage: Any, name: str, spec: StudySpec, sampler: optuna.samplers.BaseSampler, where: str
) -> optuna.Study:
    if name in optuna.get_all_study_names(storage=storage):
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        _check_same_spec(study, spec, where)
        return study
    quiet_optuna()
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        directions=list(DIRECTIONS),
        sampler=sampler,
        load_if_exists=True,  # another worker may be creating it right now
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(list(METRIC_NAMES))
    store_study(study, "spec", spec.to_dict())
    store_study(study, "created_at", _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
    return study


def _record(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    info: dict[str, Any],
    where_and_name: tuple[str, str],
) -> None:
    """What the study stores about itself: devices, backend, versions, hypermodel, sizes."""
    _record_devices(study, plan, *where_and_name)
    store_study(study, "backend", spec.workload.backend)
    store_study(study, "versions", versions(info.get("versions"), spec.workload.backend))
    if info.get("hypermodel"):
        store_study(study, "hypermodel", info["hypermodel"])
    sizes = {key: info[key] for key in ("n_train", "n_val", "parameters")}
    digests = {key: info.get(key) for key in ("digest", "digest_parts")}
    store_study(study, "workload", {**sizes, **digests})


_FRAMEWORKS = {"tensorflow": ("tensorflow", "keras"), "jax": ("keras", "jax", "jaxlib")}
"""The packages whose versions a study records, per backend: a JAX study names no TensorFlow."""


def versions(
    child_versions: dict[str, str] | None = None, backend: str = "tensorflow"
) -> dict[str, str]:
    """Versions of tuner, Optuna, Python, and (from the workload check's child, else package
    metadata) the backend's frameworks: TensorFlow and Keras, or Keras, jax and jaxlib."""
    from tuner import __version__

    found = {
        "tuner": __version__,
        "optuna": optuna.__version__,
        "python": platform.python_version(),
    }
    for package in _FRAMEWORKS[backend]:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    found.update(child_versions or {})
    return found


def _check_same_spec(study: optuna.Study, spec: StudySpec, where: str) -> None:
    """Refuse to resume a study that tuner did not make, or that ran another spec."""
    stored = decode_study(study).spec
    if stored is None and study.get_trials(deepcopy=False):
        raise ConfigError(f"{where} was not made by tuner; choose another {named('study_name')}")
    if stored is None:  # another worker is creating it right now: finish the job
        stored = spec.to_dict()
        store_study(study, "spec", stored)
    stored_identity = identity_of(stored)
    if stored_identity != spec.identity():
        raise ConfigError(
            f"{where} was created with a different spec "
            f"({_first_difference(stored_identity, spec.identity())}); resume it with the same "
            f"spec or pick a new {named('study_name')}"
        )


def _check_same_workload(
    study: optuna.Study, storage: Any, info: dict[str, Any], where_and_name: tuple[str, str]
) -> None:
    """Refuse to resume a study whose finished trials measured another workload (a changed model
    or data under the same spec); one stored before the parts were kept, or with no finished
    trial, is not compared."""
    stored = decode_study(study).workload or {}
    before, now = stored.get("digest_parts"), info.get("digest_parts")
    if not before or not now:
        return
    sizes = [f"{key} {stored[key]} -> {info[key]}" for key in ("n_train", "n_val")
             if key in stored and stored[key] != info.get(key)]  # fmt: skip
    changed = [part for part in before if before[part] != now.get(part)] + sizes
    finished = (TrialState.COMPLETE, TrialState.PRUNED)
    if not changed or not study.get_trials(deepcopy=False, states=finished):
        return
    where, name = where_and_name
    taken = set(optuna.get_all_study_names(storage=storage))
    free = next(f"{name}-{n}" for n in range(2, len(taken) + 3) if f"{name}-{n}" not in taken)
    hint = " (data drawn at random without a seed differs at every run: seed it)"
    raise ConfigError(
        f"{where} measured another workload: {', '.join(changed)} changed since its trials ran"
        f"{hint if changed == ['data samples'] else ''}; search this one under a new "
        f"{named('study_name')} (e.g. {free!r}), or delete the old study "
        "(optuna delete-study) to start it again"
    )


def _record_devices(study: optuna.Study, plan: DevicePlan, where: str, name: str) -> None:
    """Add ``plan``'s device signature to the study's; refuse other devices once it has trials
    (their out-of-memory sizes and throughput are not comparable)."""
    signatures = set(decode_study(study).device_signatures or [])
    signature = plan.device_signature
    if signatures and signature not in signatures and study.get_trials(deepcopy=False):
        slug = "-".join(re.findall(r"[a-z0-9]+", signature.lower()))  # 2x-nvidia-a100-sxm4-80gb
        raise ConfigError(
            f"{where} ran on {', '.join(sorted(signatures))}; "
            f"this run is on {signature}, whose out-of-memory sizes and throughput differ: "
            f"give these devices their own {named('study_name')} (e.g. {name}-{slug})"
        )
    if signature not in signatures:
        store_study(study, "device_signatures", sorted(signatures | {signature}))


def _first_difference(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> str:
    """The first key (dotted path) whose values differ, with both values."""
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            found = _first_difference(a, b, f"{prefix}{key}.")
            if found:
                return found
        elif a != b:
            return f"{prefix}{key}: stored {shown_reference(a)}, now {shown_reference(b)}"
    return ""
