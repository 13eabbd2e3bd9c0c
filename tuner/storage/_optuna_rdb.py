"""Optuna's private RDB names that tuner's one-transaction writes use, imported here and nowhere
else, and the verdict on whether the installed Optuna may carry them.

:mod:`tuner.storage.trial_attrs` writes many attributes of a trial in one statement through
Optuna's own session helper (``optuna.storages._rdb.storage._create_scoped_session``), its models
(``optuna.storages._rdb.models``) and ``RDBStorage._set_trial_attr_without_commit``; it also relies
on what no name says: Optuna's sessions are per thread, so a write nested in another joins its
transaction. None of this is Optuna's public API, so it is used only on the Optuna versions
the storage tests have passed on, :data:`TESTED_OPTUNA` (4.5 to 5.1; CI runs the newest), and
only while every name is still there. Anywhere else tuner opens plain
``RDBStorage``, which stores the same, one transaction per attribute: slower, never wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import optuna

_LOWEST, _BEYOND = (4, 5), (5, 2)
TESTED_OPTUNA = f">={_LOWEST[0]}.{_LOWEST[1]},<{_BEYOND[0]}.{_BEYOND[1]}"
"""The Optuna versions whose internals the fast path was tested on (a pip specifier)."""


@dataclass(frozen=True)
class Internals:
    """Optuna's private names the fast path calls."""

    models: Any
    """``optuna.storages._rdb.models``: the trial, its attribute tables and its heartbeat."""
    scoped_session: Callable[..., AbstractContextManager[Any]]
    """``_create_scoped_session(scoped_session, ignore_integrity_error=False)``: one transaction,
    committed on leaving, rolled back on an error."""


@dataclass(frozen=True)
class FastPath:
    """Whether the one-transaction writes are on: :attr:`internals` when they are, else
    :attr:`unavailable` says why not."""

    internals: Internals | None
    unavailable: str | None


def find_fast_path(version: str) -> FastPath:
    """The internals on an Optuna of ``version`` within :data:`TESTED_OPTUNA` that has every one
    of them; otherwise none, with the reason (the version, or the name that moved)."""
    if not in_tested_range(version):
        return FastPath(None, f"Optuna {version} is outside the tested range {TESTED_OPTUNA}")
    try:
        from optuna.storages._rdb import models
        from optuna.storages._rdb.storage import _create_scoped_session
    except ImportError as exc:
        return FastPath(None, f"Optuna {version} moved its RDB internals ({exc})")
    wanted = {
        "RDBStorage._set_trial_attr_without_commit": (
            optuna.storages.RDBStorage,
            "_set_trial_attr_without_commit",
        ),
        "models.TrialModel.find_or_raise_by_id": (
            getattr(models, "TrialModel", None),
            "find_or_raise_by_id",
        ),
        "models.TrialUserAttributeModel": (models, "TrialUserAttributeModel"),
        "models.TrialSystemAttributeModel": (models, "TrialSystemAttributeModel"),
        "models.TrialHeartbeatModel": (models, "TrialHeartbeatModel"),
    }
    missing = [name for name, (owner, attr) in wanted.items() if not hasattr(owner, attr)]
    if missing:
        return FastPath(None, f"Optuna {version} has no {', '.join(missing)}")
    return FastPath(Internals(models, _create_scoped_session), None)


def in_tested_range(version: str) -> bool:
    """Whether ``version`` (``"5.0.0"``, ``"4.6.0rc1"``) is within :data:`TESTED_OPTUNA`, by its
    major and minor number; a version that does not start with both is outside."""
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None:
        return False
    release = (int(found[1]), int(found[2]))
    return _LOWEST <= release < _BEYOND


FAST_PATH = find_fast_path(optuna.__version__)
"""The verdict on the installed Optuna, reached once, on first import."""
