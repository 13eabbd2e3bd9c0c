"""What a search of several precisions says: the banner counts the precisions, and every
progress line names a trial's precision after its rule; a study of one precision says what it
always did."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

from progress_helpers import restore_logging  # noqa: F401  (the fixture)
from rich.console import Console

from tuner.console import logs
from tuner.console.display import search_banner
from tuner.console.progress import (
    LogProgress,
    SearchProgress,
    end_parts,
    search_progress,
    start_parts,
)
from tuner.core.devices import DevicePlan
from tuner.core.outcome import TrialOutcome
from tuner.core.progress import joined
from tuner.core.spec import SearchSpec, StudySpec, WorkloadSpec

PLAN = DevicePlan(kind="cpu", num_replicas=2)
PARAMS = {
    "global_batch_size": 128,
    "per_replica_batch_size": 64,
    "lr_rule": "linear",
    "learning_rate": 0.002,
    "precision": "mixed_bfloat16",  # every trial's attrs name it, one precision or several
}
OK = TrialOutcome("ok", values=(0.004024, 21687.0), attrs={})


def spec_of(precisions: tuple[str, ...]) -> StudySpec:
    return StudySpec(
        name="p",
        workload=WorkloadSpec(
            model="tuner.workloads.regression:build_model",
            data="tuner.workloads.regression:load_data",
        ),
        search=SearchSpec.from_flat(
            dict(
                base_batch_size=64,
                batch_multipliers=(1, 2, 4),
                lr_rules=("none", "linear"),
                base_lr=1e-3,
                epochs=1,
                precisions=precisions,
            )
        ),
    )


def test_the_banner_counts_the_precisions_only_when_there_are_several() -> None:
    several = search_banner(spec_of(("float32", "mixed_bfloat16")), PLAN, None)
    assert "3 batch sizes × 2 rules × 2 precisions on 2 cpu replicas" in several
    one = search_banner(spec_of(("mixed_bfloat16",)), PLAN, None)
    assert "3 batch sizes × 2 rules on 2 cpu replicas" in one and "precision" not in one
    two = spec_of(("float32", "mixed_float16"))
    flat = {**two.search.flat(), "model_hyperparameters": "search", "trials": 5}
    joint = replace(two, search=SearchSpec.from_flat(flat))
    assert "5 trials of model hyperparameters × 3 batch sizes × 2 rules × 2 precisions" in (
        search_banner(joint, PLAN, "s")
    )


def start_line(*args: Any, **kwargs: Any) -> str:
    return joined(*start_parts(*args, **kwargs))


def end_line(*args: Any, **kwargs: Any) -> str:
    return joined(*end_parts(*args, **kwargs))


def test_plain_lines_name_the_precision_after_the_rule_in_a_study_of_several() -> None:
    assert start_line(3, 1, 4, PARAMS, precision=True) == (
        "trial 3 started: batch 128 (64/replica) · rule linear · precision mixed_bfloat16 · "
        "lr 0.002 · 1 of 4"
    )
    assert end_line(3, PARAMS, OK, 31.0, None, precision=True).startswith(
        "trial 3 ok: batch 128 (64/replica) · rule linear · precision mixed_bfloat16 · "
        "21,687 samples/s"
    )
    # One precision: the lines are what they always were.
    assert "precision" not in start_line(3, 1, 4, PARAMS) + end_line(3, PARAMS, OK, 31.0, None)


def test_both_views_name_the_precision_when_told_the_study_has_several() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    logs.configure(logs.NORMAL, console)
    plain = search_progress(console, precisions=True)
    assert isinstance(plain, LogProgress)
    plain.trial_started(0, 1, 1, PARAMS)
    plain.trial_finished(0, OK)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2 and all("rule linear · precision mixed_bfloat16 ·" in x for x in lines)

    terminal = io.StringIO()
    bars_console = Console(file=terminal, width=200, color_system=None, force_terminal=True)
    bars = search_progress(bars_console, precisions=True)
    assert isinstance(bars, SearchProgress)
    bars.trial_started(5, 1, 1, PARAMS)
    running = bars.progress.tasks[-1].description
    assert running == "trial 5 · batch 128 · rule linear · mixed_bfloat16"
    bars.trial_finished(5, OK)
    assert "rule linear · precision mixed_bfloat16 · 21,687 samples/s" in terminal.getvalue()
    one = SearchProgress(Console(file=io.StringIO(), force_terminal=True))
    one.trial_started(6, 1, 1, PARAMS)
    assert "precision" not in one.progress.tasks[-1].description
