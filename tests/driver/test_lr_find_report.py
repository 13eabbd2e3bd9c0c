"""``tuner lr-find``'s report from a child's payload (no child here): the suggestion read off the
losses, the ramp the optimizer must have followed, the JSON's non-finite values, and the figure
built from the report."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tuner.core import lr_find as core
from tuner.core.errors import ConfigError, TunerError
from tuner.core.options import DEFAULT_MAX_LR, DEFAULT_MIN_LR
from tuner.driver.lr_find import LrFindOptions, check_paths, report
from tuner.views.lr_find_figure import lr_find_figure, write_figure

OPTIONS = LrFindOptions(steps=200)


def _payload(iterations: int | None = None, lr_after: float | None = None) -> dict[str, Any]:
    rates = core.ramp(DEFAULT_MIN_LR, DEFAULT_MAX_LR, 200)[:160]
    losses: list[float | None] = [
        0.2 + 1.8 / (1 + math.exp(3 * (math.log10(lr) + 2))) for lr in rates
    ]
    losses[-1] = None  # the step that went non-finite
    steps = len(rates) if iterations is None else iterations
    ramp_after = DEFAULT_MIN_LR * (DEFAULT_MAX_LR / DEFAULT_MIN_LR) ** (steps / 199)
    return {
        "learning_rates": rates,
        "losses": losses,
        "stopped": "non-finite loss",
        "global_batch_size": 64,
        "num_replicas": 2,
        "backend": "tensorflow",
        "precision": "float32",
        "optimizer_iterations": steps,
        "learning_rate_after": ramp_after if lr_after is None else lr_after,
        "optimizer": {"class": "SGD"},
        "seconds": 1.0,
    }


def test_the_report_reads_the_suggestion_and_writes_json_without_nan(tmp_path: Path) -> None:
    made = report(_payload(), OPTIONS)
    assert made["suggestion"] is not None and 10**-2.6 < made["suggestion"] < 10**-1.4
    assert made["spec_line"] == core.spec_line(made["suggestion"])
    assert made["diverged_lr"] == made["learning_rates"][-1]
    assert made["losses"][-1] is None and made["smoothed"][0] is None  # left out: null
    assert made["steps_run"] == 160 and made["skipped_steps"] == 20
    text = json.dumps(made, allow_nan=False)  # strict JSON: no NaN or Infinity
    assert json.loads(text)["planned_steps"] == 200
    figure = lr_find_figure(made)
    names = [trace.name for trace in figure.data]
    assert names[0] == "loss of each step" and any("suggested" in n for n in names)
    write_figure(figure, tmp_path / "lr.html")
    assert "plotly" in (tmp_path / "lr.html").read_text()


def test_an_optimizer_that_did_not_follow_the_ramp_is_named() -> None:
    with pytest.raises(TunerError, match="did not follow the ramp"):
        report(_payload(lr_after=1e-7), OPTIONS)


def test_the_figure_kind_and_folder_are_checked_first(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\.html or \.png"):
        check_paths(None, tmp_path / "lr.svg")
    with pytest.raises(ConfigError, match="does not exist"):
        check_paths(tmp_path / "missing" / "r.json", None)
    check_paths(tmp_path / "r.json", tmp_path / "lr.PNG")


def test_the_childs_progress_is_a_line_with_the_step_and_its_rate() -> None:
    from tuner.core.progress import progress_event
    from tuner.driver.lr_find import _progress

    lines: list[str] = []

    class Front:
        def note(self, message: str) -> None:
            lines.append(message)

        def notice(self, message: str) -> None:
            lines.append(message)

    on_event = _progress(Front(), LrFindOptions(min_lr=1e-6, max_lr=1.0, steps=61))
    assert on_event is not None
    on_event(progress_event(11, 61, 64))
    assert lines == ["step 11 of 61: lr 1e-05"]


def test_a_model_with_nothing_trainable_gets_no_suggestion() -> None:
    """A frozen model's flat curve has noise that can look like a descent: no rate is read off
    it, and the reason says what to change (not to widen the range)."""
    made = report({**_payload(), "trainable_parameters": 0}, OPTIONS)
    assert made["suggestion"] is None and made["spec_line"] is None
    assert "no trainable weights" in made["reason"]


def test_a_spec_for_the_range_test_alone_may_leave_out_the_grid(tmp_path: Path) -> None:
    """A spec naming only the workload loads: the grid, the study name, the base batch (64) and a
    budget are filled, since the range test uses none of them; what the file gives is kept."""
    from tuner.driver.setup.spec_file import load_spec

    bare = tmp_path / "bare.toml"
    bare.write_text('[workload]\nmodel = "m:build"\ndata = "m:load"\n')
    spec = load_spec(bare, LrFindOptions(spec=bare).spec_overrides())
    assert spec.search.grid.base_batch_size == 64 and spec.search.grid.batch_multipliers == (1,)
    given = tmp_path / "given.toml"
    given.write_text(
        '[study]\nname = "mine"\n[workload]\nmodel = "m:build"\ndata = "m:load"\n'
        "[search]\nbase_batch_size = 32\nbatch_multipliers = [1, 2]\n"
        'lr_rules = ["linear"]\nbase_lr = 0.01\ntrain_samples = 512\n'
    )
    spec = load_spec(given, LrFindOptions(spec=given, base_batch_size=16).spec_overrides())
    assert spec.name == "mine" and spec.search.grid.base_batch_size == 16  # the flag over the file
    assert spec.search.grid.batch_multipliers == (1, 2) and spec.search.grid.base_lr == 0.01
