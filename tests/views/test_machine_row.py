"""A study measured on a busy machine says so where its figures are read: the devices table of
the dashboard note and the report (tuner.views.summary.environment_rows)."""

from __future__ import annotations

from tuner.core.plan import MACHINE_LOAD, load_record
from tuner.views.note import study_note
from tuner.views.summary import environment_rows


def test_the_note_says_the_machine_was_busy() -> None:
    busy = {MACHINE_LOAD: load_record(12.0, 2, 0, "2026-01-01T00:00:00+00:00")}
    assert ("machine", "the machine was busy (load 12 on 2 cores): throughput figures are not "
            "reliable") in environment_rows(busy, [])  # fmt: skip
    note = study_note("busy", [], busy, None, "now")
    assert "the machine was busy (load 12 on 2 cores): throughput figures are not reliable" in note
    quiet = {MACHINE_LOAD: load_record(0.25, 2, 0, "2026-01-01T00:00:00+00:00")}
    assert ("machine", "quiet (load 0.25 on 2 cores)") in environment_rows(quiet, [])
    assert all(label != "machine" for label, _ in environment_rows({}, []))  # not measured
