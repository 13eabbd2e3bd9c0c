"""A trial's attributes written together: one statement in one transaction, not a transaction
per attribute.

Optuna writes each ``Trial.set_user_attr`` (and each ``set_trial_system_attr``) in a transaction
of its own: a commit (an fsync on SQLite, round trips on a server) and two statements per
attribute. A tuner trial stores some 40 attributes (its configuration when it starts, its
measurements when it ends), so that alone cost about 0.3 s a trial, more than the rest of the
driver (``benchmarks/driver_scaling.py``). :class:`TunerRDBStorage` is Optuna's ``RDBStorage``
(Optuna still wraps it in its trial cache) with three things more:

* :meth:`~TunerRDBStorage.set_trial_user_attrs` and :meth:`~TunerRDBStorage.set_trial_system_attrs`
  write many attributes of one trial at once: on SQLite and PostgreSQL one multi-row form of the
  upsert Optuna itself issues per attribute, into Optuna's own table through its own model, after
  the same "is the trial still running" check; on other databases Optuna's per-attribute
  statement, all in one transaction;
* :meth:`~TunerRDBStorage.set_user_attrs_with_state` holds a trial's outcome attributes until
  Optuna sets the trial's final state, and :meth:`~TunerRDBStorage.set_trial_state_values`
  writes both in one transaction: other workers see a finished trial with all its attributes,
  never one without them, and the trial's end costs one commit, not two;
* :meth:`~TunerRDBStorage._get_silent_trial_ids` reads which RUNNING trials have no heartbeat
  at all, which Optuna's stale check passes over
  (:func:`tuner.driver.trial.resume.requeue_unfinished`).

:func:`set_user_attrs` and :func:`set_outcome_attrs` use them where they can and fall back to
``set_user_attr`` one by one elsewhere (the journal storage, a trial without a storage), with the
same result.

This is the one write of tuner's own beside Optuna's (the storage module's rule is "no SQL of
our own"), and it rests on Optuna's private API (its session helper, its models, the trial's
attribute cache, and that Optuna's sessions are per thread, so a write nested in another joins
its transaction), named in one place, :mod:`tuner.storage._optuna_rdb`. It is tested on Optuna
``>=4.5,<5.2`` (``TESTED_OPTUNA``); :func:`rdb_storage_class` gives :class:`TunerRDBStorage` only
there, and only while every private name is still in place, else plain ``RDBStorage`` (one
transaction per attribute, the same stored result) with a debug line saying why.
``tests/storage/test_storage_batch.py`` checks that the batch paths store what ``set_user_attr``
would, ``tests/storage/test_storage_batch_faults.py`` that a refused, failed or empty write
behaves as Optuna's own (SQLite and PostgreSQL); ``tests/storage/test_storage_optuna_pin.py``
which path the installed Optuna takes, that plain ``RDBStorage`` stores the same, and that an
installed Optuna outside the range fails a test.
"""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import optuna
from optuna.trial import TrialState
from sqlalchemy import exists
from sqlalchemy.dialects import postgresql, sqlite

from tuner.storage import _optuna_rdb
from tuner.storage._optuna_rdb import TESTED_OPTUNA, Internals

__all__ = [
    "TESTED_OPTUNA",
    "TunerRDBStorage",
    "batch_writer",
    "fast_path_unavailable",
    "rdb_storage_class",
    "set_outcome_attrs",
    "set_user_attrs",
]

_log = logging.getLogger(__name__)
_UPSERTS: dict[str, Callable[[Any], Any]] = {"postgresql": postgresql.insert}
if sqlite3.sqlite_version_info >= (3, 24, 0):  # ON CONFLICT DO UPDATE, as Optuna requires
    _UPSERTS["sqlite"] = sqlite.insert


def fast_path_unavailable() -> str | None:
    """Why the installed Optuna cannot take the one-transaction writes (outside
    :data:`TESTED_OPTUNA`, or a private name moved), or ``None`` when it can."""
    return _optuna_rdb.FAST_PATH.unavailable


def rdb_storage_class() -> type[optuna.storages.RDBStorage]:
    """:class:`TunerRDBStorage` where the installed Optuna can take it, else plain
    ``RDBStorage`` (which stores the same, one transaction per attribute), said at debug level:
    a slower write is no fault of the user's."""
    unavailable = fast_path_unavailable()
    if unavailable is None:
        return TunerRDBStorage
    _log.debug("plain RDBStorage, a transaction per trial attribute: %s", unavailable)
    return optuna.storages.RDBStorage


def _internals() -> Internals:
    """Optuna's private names, or :class:`RuntimeError` on an Optuna that cannot take them."""
    internals = _optuna_rdb.FAST_PATH.internals
    if internals is None:
        raise RuntimeError(f"TunerRDBStorage cannot run here: {fast_path_unavailable()}")
    return internals


class TunerRDBStorage(optuna.storages.RDBStorage):
    """Optuna's ``RDBStorage`` that can also write many attributes of one trial at once, and a
    trial's outcome attributes with its final state. Only on an Optuna that can take it
    (:func:`rdb_storage_class`); elsewhere making one raises :class:`RuntimeError`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _internals()  # refuse before connecting; the names are looked up at each write
        super().__init__(*args, **kwargs)
        self._with_state: dict[int, dict[str, Any]] = {}
        """Outcome attributes by trial id, written with the trial's final state."""

    def set_trial_user_attrs(self, trial_id: int, attrs: Mapping[str, Any]) -> None:
        """Set every ``key: value`` of ``attrs`` on the trial in one transaction: all or none
        (a finished trial refuses them, as ``set_trial_user_attr`` does)."""
        internals = _internals()
        with internals.scoped_session(self.scoped_session, True) as session:
            self._upsert(session, internals.models.TrialUserAttributeModel, trial_id, attrs)

    def set_trial_system_attrs(self, trial_id: int, attrs: Mapping[str, Any]) -> None:
        """:meth:`set_trial_user_attrs` for system attributes (a sampler's bookkeeping)."""
        internals = _internals()
        with internals.scoped_session(self.scoped_session, True) as session:
            self._upsert(session, internals.models.TrialSystemAttributeModel, trial_id, attrs)

    def set_user_attrs_with_state(self, trial_id: int, attrs: Mapping[str, Any]) -> None:
        """Write ``attrs`` as user attributes in the transaction that sets the trial's final
        state (:meth:`set_trial_state_values`); a later call for the trial adds to them. A value
        JSON cannot hold fails here, inside the objective, where Optuna fails the trial, not in
        the state change after it, which would leave the trial RUNNING."""
        for value in attrs.values():
            json.dumps(value)
        self._with_state.setdefault(trial_id, {}).update(attrs)

    def set_trial_state_values(
        self, trial_id: int, state: TrialState, values: Sequence[float] | None = None
    ) -> bool:
        """Optuna's state change, with the attributes held for the trial in the same transaction:
        both are stored, or neither. They stay held until they are stored with a final state: a
        write that fails (the database locked or gone) keeps them for the retry; only a trial
        that is finished (by another worker) or missing drops them, since nothing can store
        them any more."""
        attrs = self._with_state.get(trial_id)
        # Only a final state takes them: Optuna refuses RUNNING by returning False inside its
        # transaction, which then commits, so held attributes would be stored with a refusal.
        if not attrs or not state.is_finished():
            return super().set_trial_state_values(trial_id, state, values)
        internals = _internals()
        try:
            with internals.scoped_session(self.scoped_session) as session:
                self._upsert(session, internals.models.TrialUserAttributeModel, trial_id, attrs)
                # Optuna's session is this thread's: the state change joins this transaction,
                # and its commit stores the attributes with the state (its rollback drops both;
                # a final state's refusal is a raise or a rollback, never a commit).
                stored = super().set_trial_state_values(trial_id, state, values)
        except (optuna.exceptions.UpdateFinishedTrialError, KeyError):
            self._with_state.pop(trial_id, None)
            raise
        if stored:
            self._with_state.pop(trial_id, None)
        return stored

    def _get_silent_trial_ids(self, study_id: int, trial_ids: Sequence[int]) -> list[int]:
        """Those of ``trial_ids`` (the study's) that are RUNNING without a heartbeat row: their
        worker died before its first beat (Optuna's stale check skips them), or has just
        claimed them."""
        internals = _internals()
        models = internals.models
        trial, beat = models.TrialModel, models.TrialHeartbeatModel
        with internals.scoped_session(self.scoped_session) as session:
            rows = (
                session.query(trial.trial_id)
                .filter(trial.study_id == study_id)
                .filter(trial.trial_id.in_(list(trial_ids)))
                .filter(trial.state == TrialState.RUNNING)
                .filter(~exists().where(beat.trial_id == trial.trial_id))
                .all()
            )
        return [trial_id for (trial_id,) in rows]

    def _upsert(
        self, session: Any, model: type[Any], trial_id: int, attrs: Mapping[str, Any]
    ) -> None:
        """Every ``key: value`` of ``attrs`` into ``model``'s table for the trial, uncommitted,
        after Optuna's checks (a missing trial raises :class:`KeyError`, a finished one
        ``UpdateFinishedTrialError``), made for an empty ``attrs`` too, as for one attribute."""
        trial = _internals().models.TrialModel.find_or_raise_by_id(trial_id, session)
        self.check_trial_is_updatable(trial_id, cast(TrialState, trial.state))
        insert = _UPSERTS.get(self.engine.name)
        if insert is None or not attrs:
            for key, value in attrs.items():
                self._set_trial_attr_without_commit(session, model, trial_id, key, value)
            return
        rows = [
            {"trial_id": trial_id, "key": key, "value_json": json.dumps(value)}
            for key, value in attrs.items()
        ]
        statement = insert(model).values(rows)
        session.execute(
            statement.on_conflict_do_update(
                index_elements=[model.trial_id, model.key],
                set_={"value_json": statement.excluded.value_json},
            )
        )


def batch_writer(trial: optuna.Trial) -> TunerRDBStorage | None:
    """The storage that can write ``trial``'s attributes in one transaction, or ``None``."""
    storage = getattr(trial, "storage", None)  # none on a FixedTrial
    backend = getattr(storage, "_backend", storage)  # under Optuna's trial cache
    if isinstance(backend, TunerRDBStorage) and hasattr(trial, "_cached_frozen_trial"):
        return backend
    return None


def set_user_attrs(trial: optuna.Trial, attrs: Mapping[str, Any]) -> None:
    """``trial.set_user_attr(key, value)`` for each item of ``attrs``, in one transaction where
    the storage allows it; the trial's own view (``trial.user_attrs``) sees them either way."""
    writer = batch_writer(trial)
    if writer is None:
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        return
    if not attrs:
        return
    writer.set_trial_user_attrs(trial._trial_id, attrs)
    # What Trial.set_user_attr does after its write: its cached copy sees the new values.
    trial._cached_frozen_trial.user_attrs.update(copy.deepcopy(dict(attrs)))


def set_outcome_attrs(trial: optuna.Trial, attrs: Mapping[str, Any]) -> None:
    """Store a trial's outcome ``attrs`` just before the objective returns (or raises) its end:
    written with the trial's final state where the storage allows it (one transaction, see the
    module), else at once as :func:`set_user_attrs`. The trial's own view sees them either way."""
    writer = batch_writer(trial)
    if writer is None:
        set_user_attrs(trial, attrs)
        return
    writer.set_user_attrs_with_state(trial._trial_id, attrs)
    trial._cached_frozen_trial.user_attrs.update(copy.deepcopy(dict(attrs)))
