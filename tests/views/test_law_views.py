"""The measured learning-rate law where a person reads it (issue 32): ``tuner show`` prints it
after the verdict, ``tuner report`` draws lr* against the batch with the three rules, the study
note says it and links the plot, the dashboard stores the plot. A stored SQLite study of an LR
sweep whose losses are the noisy quadratic model's exact expected losses; no training."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
from conftest import invoke_tuner
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState, create_trial

from tuner.core.scaling import scaled_learning_rate, sweep_rules
from tuner.views.dashboard import publish
from tuner.views.law_figure import LAW_PLOT, law_figures
from tuner.views.note import study_note
from tuner.workloads import noisy_quadratic as nqm

BASE, BASE_LR = 8, 0.17
BATCHES = [8, 16, 32, 64, 128]
RULES = list(sweep_rules(5))


def stored(tmp_path: Path) -> tuple[str, optuna.Study]:
    url = f"sqlite:///{tmp_path / 'law.db'}"
    study = optuna.create_study(study_name="law", storage=url, directions=["minimize", "maximize"])
    study.set_user_attr("spec", {"search": {"base_lr": BASE_LR, "base_batch_size": BASE}})
    distributions = {
        "global_batch_size": CategoricalDistribution(BATCHES),
        "lr_rule": CategoricalDistribution(RULES),
    }
    for batch in BATCHES:
        rates = [scaled_learning_rate(r, BASE_LR, batch, BASE) for r in RULES]
        for rule, lr, loss in zip(RULES, rates, nqm.expected_losses(rates, batch), strict=True):
            ok = loss < 1e3
            attrs = {
                "status": "ok" if ok else "diverged",
                "device_signature": "2x cpu",
                "global_batch_size": batch,
                "per_replica_batch_size": batch // 2,
                "num_replicas": 2,
                "devices": ["/cpu:0", "/cpu:1"],
                "learning_rate": lr,
                "lr_rule": rule,
                **({"final_loss": float(loss), "throughput": 100.0 * batch} if ok else {}),
            }
            study.add_trial(
                create_trial(
                    state=TrialState.COMPLETE if ok else TrialState.PRUNED,
                    values=[float(loss), 100.0 * batch] if ok else None,
                    params={"global_batch_size": batch, "lr_rule": rule},
                    distributions=distributions,
                    user_attrs=attrs,
                )
            )
    return url, study


def test_show_report_note_and_dashboard_carry_the_law(tmp_path: Path) -> None:
    url, study = stored(tmp_path)
    exported = invoke_tuner("export", "--storage", url, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    rec = json.loads(exported.stdout)
    law = rec["lr_law"]
    assert law["regime"] == "plateau" and law["alpha_ci"][0] <= 1 <= law["alpha_ci"][1]
    assert set(law["lr_star_by_batch"]) == {str(b) for b in BATCHES}

    shown = invoke_tuner("show", "--storage", url, "--wide", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "learning-rate law: alpha =" in text and "[regime: plateau]" in text

    report = invoke_tuner("report", "--storage", url, "--output", "r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f'id="{LAW_PLOT}"' in page and "Best learning rate per batch" in page
    names = [trace.name for trace in law_figures(rec)[LAW_PLOT].data]
    assert names[:3] == ["none (lr ∝ B^0)", "sqrt (lr ∝ B^0.5)", "linear (lr ∝ B^1)"]
    assert "measured law" in names and "lr* (95 % interval)" in names

    note = study_note("law", study.get_trials(), {}, rec, "now")
    assert f"(./#user-defined-plot:{LAW_PLOT})" in note and "stops growing past batch" in note
    publish(study, rec)
    stored_plots = study._storage.get_study_system_attrs(study._study_id)
    assert any(key.startswith(f"dashboard:plot_data:{LAW_PLOT}:") for key in stored_plots)


def test_without_a_sweep_there_is_no_law_and_no_plot(tmp_path: Path) -> None:
    assert law_figures({"learning_rate": 0.1}) == {}
    assert law_figures(None) == {}
