"""The typed trial record (:mod:`tuner.core.record`): a handful of stored attributes, every name
owned by one group, and a trial of the earlier flat layout read exactly as the grouped one."""

from __future__ import annotations

from dataclasses import fields
from types import SimpleNamespace
from typing import Any

import pytest
from optuna.trial import TrialState, create_trial

from tuner.core.outcome import _RESULT_ATTRS
from tuner.core.record import (
    GROUPS,
    SCALARS,
    STORED_KEYS,
    StudyRecord,
    TrialRecord,
    changes,
    decode,
    decode_study,
    encode,
    store_study,
)

EVERY_NAME: dict[str, Any] = {
    **{name: f"<{name}>" for name in SCALARS},
    "timings": {"wall_s": 3.5, "training_s": 1.0},
    **{f.name: f"<{f.name}>" for cls in GROUPS.values() for f in fields(cls)},
}


def test_a_trial_stores_a_handful_of_attributes_each_name_in_one_place() -> None:
    assert len(STORED_KEYS) <= 12 and len(set(STORED_KEYS)) == len(STORED_KEYS)
    names = [f.name for cls in GROUPS.values() for f in fields(cls)]
    assert len(names) == len(set(names)) and not set(names) & set(STORED_KEYS)
    assert set(encode(EVERY_NAME)) == set(STORED_KEYS)


def test_the_earlier_flat_layout_reads_exactly_as_the_grouped_one() -> None:
    old = create_trial(state=TrialState.RUNNING, user_attrs=EVERY_NAME)  # ~80 flat attributes
    new = create_trial(state=TrialState.RUNNING, user_attrs=encode(EVERY_NAME))
    assert len(old.user_attrs) > 70 and len(new.user_attrs) == len(STORED_KEYS)
    assert decode(old) == decode(new)
    assert decode(new).flat == EVERY_NAME
    assert decode(new).configuration.global_batch_size == "<global_batch_size>"
    assert decode(new).reuse.repeat_of == "<repeat_of>"


def test_every_name_a_child_result_stores_is_owned() -> None:
    encode({name: 1 for name in _RESULT_ATTRS})


def test_a_name_no_group_owns_is_refused_not_stored() -> None:
    with pytest.raises(KeyError, match="no stored trial attribute is named 'throughput_typo'"):
        encode({"throughput_typo": 1.0})
    with pytest.raises(KeyError, match="no stored study attribute"):
        store_study(object(), "basline", {})


def test_writing_onto_an_earlier_layout_trial_stores_whole_groups_read_alike() -> None:
    old = create_trial(
        state=TrialState.RUNNING,
        user_attrs={"global_batch_size": 64, "lr_rule": "none", "repeat_of": 0},
    )
    written = changes(old, {"status": "ok", "throughput": 10.0})
    assert written["configuration"] == {"global_batch_size": 64, "lr_rule": "none"}
    assert written["reuse"] == {"repeat_of": 0}
    upgraded = create_trial(state=TrialState.RUNNING, user_attrs={**old.user_attrs, **written})
    record = decode(upgraded)  # the groups are read; the earlier flat names no longer are
    assert record.configuration.global_batch_size == 64 and record.reuse.repeat_of == 0
    assert record.status == "ok" and record.throughput == 10.0
    assert changes(upgraded, {"throughput": 10.0}) == {}  # nothing changed: nothing written


def test_an_empty_trial_decodes_to_an_empty_record() -> None:
    assert decode(create_trial(state=TrialState.RUNNING)) == TrialRecord()


def test_a_study_record_holds_its_own_names_only() -> None:
    study = SimpleNamespace(
        user_attrs={"spec": {"search": {}}, "baselines": {"2x cpu": {}}, "note": "other's"}
    )
    record = decode_study(study)
    assert record == StudyRecord(spec={"search": {}}, baselines={"2x cpu": {}})
    assert record.flat == {"spec": {"search": {}}, "baselines": {"2x cpu": {}}}
