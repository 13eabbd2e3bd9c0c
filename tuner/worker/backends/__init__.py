"""The one table that picks a backend: TensorFlow (``MirroredStrategy``) or Keras 3 on JAX
(``keras.distribution.DataParallel``).

A backend's package is imported on first use, never by this module, so a JAX child never
imports TensorFlow.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol, cast

from tuner.core.protocol import InspectRequest, RunRequest, Workload
from tuner.core.spec import BACKENDS

if TYPE_CHECKING:
    from tuner.worker.meters import Emit
    from tuner.worker.session import Session
    from tuner.worker.sources import Source


class Framework(Protocol):
    """One backend, as the modes reach it: what every backend package provides at its top."""

    def prepare(self) -> None:
        """Set the process up for this backend once its framework is imported (before any run)."""

    def open_session(self, request: RunRequest, emit: Emit, record_steps: bool) -> Session:
        """The request's run, ready to train; ``record_steps``: a sync a step, validation only."""

    def load_source(self, workload: Workload) -> Source:
        """The workload's data as this backend's input layer reads them."""

    def refuse_across_replicas(self, source: Source, replicas: int) -> None:
        """Raise :class:`~tuner.core.errors.WorkloadError` for data ``replicas`` cannot train on."""

    def first_batch(self, source: Source, split: str, size: int) -> Any:
        """The first ``size`` examples of ``split`` as NumPy ``(x, y[, sample_weight])``."""

    def measure_noise_once(self, model: Any, batch: tuple[Any, ...], samples: int) -> None:
        """One step of this backend's noise meter on ``batch``: raises what a trial's would."""

    def versions(self) -> dict[str, str]:
        """The versions of the frameworks a run used, as the child sees them."""


def backend_name(request: InspectRequest | RunRequest) -> str:
    """The request's backend; ``ValueError`` for a name not in :data:`~tuner.core.spec.BACKENDS`."""
    name = request.workload.backend
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    return name


def load(name: str) -> Framework:
    """The backend ``name``, its framework imported; ``ValueError`` for an unknown name."""
    # Importing a backend runs no Keras code that asks whether TensorFlow is there (Keras asks
    # lazily, when a run seeds or serializes), so ``prepare`` may hide it after the import;
    # tests/e2e/test_jax_trial.py checks that a JAX child ends without TensorFlow loaded.
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    framework = cast(Framework, import_module(f"{__name__}.{name}"))
    framework.prepare()
    return framework


def open_session(request: RunRequest, emit: Emit, record_steps: bool = False) -> Session:
    """Open the request's run on its backend; :class:`WorkloadError` for a batch over the data."""
    framework = load(backend_name(request))
    from tuner.worker.optim import micro  # Keras: once the backend is chosen

    return framework.open_session(micro(request), emit, record_steps)


if TYPE_CHECKING:  # mypy holds both packages to the face
    from tuner.worker.backends import jax as _jax
    from tuner.worker.backends import tensorflow as _tensorflow

    _KEEP_THE_FACE: tuple[Framework, ...] = (_tensorflow, _jax)
