"""The adaptive LR sweep in the driver (issue 32): a real driver, a real SQLite study and a fake
child whose final loss has one minimum in log lr. A sweep rate beyond a rate that finished worse
than the best at its batch ends ``bracketed`` (PRUNED, no child, not a measured point); the law
is still fitted at every batch; without the seed noise the fit needs more points, and
``lr_sweep_full`` trains every rate."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok
from optuna.trial import TrialState

from tuner.core.adaptive_sweep import visit_rank
from tuner.core.recommend._law import study_law
from tuner.core.record import decode
from tuner.driver import study as study_module
from tuner.driver.decide.seeds import SEED_NOISE
from tuner.driver.study import run_search

BEST = {64: 1e-3, 256: 2e-3}
"""lr* per batch: the sweep's middle at both (base 1e-3 at 64; at 4x, 0.5e-3 ... 8e-3)."""


@pytest.fixture(autouse=True)
def no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


def one_valley(request: Any) -> dict[str, Any]:
    """A loss with its minimum at :data:`BEST` in log lr; the seed moves it by 1 % a step."""
    batch, lr = request.global_batch_size, request.learning_rate
    loss = 0.1 * (1 + math.log(lr / BEST[batch]) ** 2) * (1 + 0.01 * request.seed)
    return ok(batch, final_loss=loss)


def points(report: Any) -> dict[tuple[int, str], Any]:
    return {(t.params["global_batch_size"], t.params["lr_rule"]): t for t in report.study.trials}


def test_rates_beyond_a_worse_one_are_skipped_and_the_law_still_fits(tmp_path: Path) -> None:
    child = FakeChild(one_valley)
    spec = make_spec((1, 4), seeds=3, lr_sweep=5)
    url = f"sqlite:///{tmp_path / 'adaptive.db'}"
    report = run_search(spec, PLAN, url, baseline=False, runner=child)
    trials = points(report)
    skipped = {point for point, t in trials.items() if decode(t).status == "bracketed"}
    assert skipped == {(b, r) for b in (64, 256) for r in ("sweep-1/5", "sweep-5/5")}
    for point in skipped:
        trial = trials[point]
        assert trial.state == TrialState.PRUNED and trial.values is None
        assert decode(trial).error.startswith("bracketed: the best rate at this batch")
        assert decode(trial).decision.early_stop_skipped is None
    launched = {(b, round(r.learning_rate, 7)) for r in child.requests if r.mode == "trial"
                for b in [r.global_batch_size] if r.seed == spec.search.run.seed}  # fmt: skip
    skipped_rates = {(b, round(decode(trials[b, r]).flat["learning_rate"], 7)) for b, r in skipped}
    assert not launched & skipped_rates  # never sent to a child
    # the best and its neighbours on each side trained at both batches: lr* is measured there
    law = study_law(report.study.trials, report.study.user_attrs[SEED_NOISE][PLAN.device_signature])
    assert law is not None
    for star in law.stars:
        assert star.censored is None and star.method == "seed noise bootstrap"
        assert star.low <= BEST[star.batch] <= star.high


def test_without_the_seed_noise_or_with_the_full_sweep_every_rate_trains(tmp_path: Path) -> None:
    for name, spec in {
        "quick": make_spec((1, 4), seeds=1, lr_sweep=5),  # 5 points around the best: all here
        "full": make_spec((1, 4), seeds=3, lr_sweep=5, lr_sweep_full=True),
    }.items():
        report = run_search(
            spec, PLAN, f"sqlite:///{tmp_path / name}.db", baseline=False,
            runner=FakeChild(one_valley),
        )  # fmt: skip
        statuses = {decode(t).status for t in report.study.trials}
        assert statuses == {"ok"}, name


def test_a_sweep_at_its_edge_keeps_going(tmp_path: Path) -> None:
    """lr* far above the sweep at batch 256: each rate tried is the best so far, none is
    skipped above; below, the rates past a worse one are."""

    def rising(request: Any) -> dict[str, Any]:
        if request.global_batch_size == 256:
            return ok(256, final_loss=1.0 / request.learning_rate)
        return one_valley(request)

    spec = make_spec((1, 4), seeds=3, lr_sweep=5)
    report = run_search(spec, PLAN, f"sqlite:///{tmp_path}/edge.db", baseline=False,
                        runner=FakeChild(rising))  # fmt: skip
    trials = points(report)
    assert decode(trials[256, "sweep-5/5"]).flat["status"] == "ok"
    assert decode(trials[256, "sweep-1/5"]).flat["status"] == "bracketed"
    # past the top edge: SWEEP_EXTRA rates more, each the best, then the cap says so
    assert [decode(trials[256, f"sweep-{i}/5"]).status for i in (6, 7, 8)] == ["ok"] * 3
    assert (256, "sweep-9/5") not in trials
    law = study_law(report.study.trials, report.study.user_attrs[SEED_NOISE][PLAN.device_signature])
    assert law is not None and "after 3 rates above the sweep, the most it adds" in law.words


def test_a_sweep_goes_past_its_edge_until_a_rate_is_worse(tmp_path: Path) -> None:
    """lr* one sweep step above the top rate at batch 256 (8e-3 -> 1.6e-2): the sweep adds
    sweep-6/5 (the best), then sweep-7/5 (worse: it stops there); lr* is measured, not a bound.
    At batch 64, one step below the bottom (5e-4 -> 3.5e-4): sweep-0/5, then sweep--1/5, before
    batch 256's trials (the grid's order holds). Run again on the same study, it adds nothing:
    the stored rules say what was added."""
    best = {64: 5e-4 / math.sqrt(2), 256: 1.6e-2}

    def past_the_top(request: Any) -> dict[str, Any]:
        batch, lr = request.global_batch_size, request.learning_rate
        loss = 0.1 * (1 + math.log(lr / best[batch]) ** 2) * (1 + 0.01 * request.seed)
        return ok(batch, final_loss=loss)

    spec = make_spec((1, 4), seeds=3, lr_sweep=5)
    url = f"sqlite:///{tmp_path / 'past.db'}"
    report = run_search(spec, PLAN, url, baseline=False, runner=FakeChild(past_the_top))
    trials = points(report)
    extra = ("sweep-6/5", "sweep-7/5", "sweep-0/5", "sweep--1/5")
    added = {point: t for point, t in trials.items() if point[1] in extra}
    assert set(added) == {(256, "sweep-6/5"), (256, "sweep-7/5"), (64, "sweep-0/5"),
                          (64, "sweep--1/5")}  # fmt: skip
    rates = {point: decode(t).flat["learning_rate"] for point, t in added.items()}
    assert rates == {
        (256, "sweep-6/5"): pytest.approx(1.6e-2), (256, "sweep-7/5"): pytest.approx(3.2e-2),
        (64, "sweep-0/5"): pytest.approx(best[64]), (64, "sweep--1/5"): pytest.approx(2.5e-4),
    }  # fmt: skip
    assert {decode(t).status for t in added.values()} == {"ok"}
    # the extra rates took trial numbers: the grid's order still holds (batch 256's fixed rules
    # first, then its sweep from the middle), not shifted by the two numbers batch 64 added
    at_256 = sorted((t.number, r) for (b, r), t in trials.items() if b == 256 and r not in extra)
    assert [r for _, r in at_256] == sorted((r for _, r in at_256), key=visit_rank)
    assert max(t.number for (b, _), t in trials.items() if b == 64) < at_256[0][0]
    law = study_law(report.study.trials, report.study.user_attrs[SEED_NOISE][PLAN.device_signature])
    assert law is not None
    assert law.to_dict()["extra_rates_by_batch"] == {"64": {"below": 2}, "256": {"above": 2}}
    for batch, lr_star in best.items():
        star = law.star_at(batch)
        assert star is not None and star.lr == pytest.approx(lr_star)
        assert star.low <= lr_star <= star.high
    assert "widen" not in law.words and law.regime != "unresolved"
    again = run_search(spec, PLAN, url, baseline=False, runner=FakeChild(past_the_top))
    assert len(again.study.trials) == len(report.study.trials)
