"""``tuner dashboard`` on a study made by a real ``tuner search``: the REST API, a real browser,
Ctrl-C, and the errors a user can meet."""

from __future__ import annotations

import json
import math
import re
import shutil
import signal
import socket
import sqlite3
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from browser_checks import assert_titles_clear_of_the_toolbar
from conftest import run_tuner, save_screenshot, sha256
from dashboards import start_dashboard, stop

from tuner.core.record import SCALARS, STORED_KEYS, decode
from tuner.core.scaling import scaled_learning_rate
from tuner.driver.trial.grid import BatchAscendingGridSampler, suggest_global_batch
from tuner.results import current_recommendation
from tuner.views.dashboard import publish

pytestmark = pytest.mark.slow


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def without_views(db: Path) -> None:
    """Delete the study's dashboard note and plots, as a search without the ``dashboard``
    extra leaves it (optuna offers no call that deletes a study system attribute)."""
    with sqlite3.connect(db) as connection:
        connection.execute("DELETE FROM study_system_attributes WHERE key LIKE 'dashboard:%'")
    connection.close()


@pytest.fixture(scope="module")
def dashboard(
    small_study: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``tuner dashboard`` on a copy of the study without its note and plots: it writes them
    before serving (issue 46), so the page the tests browse shows what it wrote."""
    work, _ = small_study
    copy = tmp_path_factory.mktemp("unpublished") / "small.db"
    shutil.copy(work / "small.db", copy)
    without_views(copy)
    proc, address = start_dashboard(work, f"sqlite:///{copy}")
    yield address
    code, stderr = stop(proc)
    assert code == 0, stderr
    assert "wrote the dashboard note and plots of study small" in stderr


def test_rest_api_lists_the_study_with_its_trials_attributes_and_note(small_study, dashboard):
    work, _ = small_study
    api = dashboard.replace("/dashboard/", "/api/")
    summaries = get_json(api + "studies")["study_summaries"]
    (summary,) = [s for s in summaries if s["study_name"] == "small"]
    detail = get_json(api + f"studies/{summary['study_id']}")
    assert detail["objective_names"] == ["final_loss", "throughput"]

    stored = optuna.load_study(study_name="small", storage=f"sqlite:///{work}/small.db")
    by_number = {t.number: t for t in stored.get_trials()}
    assert len(detail["trials"]) == len(by_number) >= 6
    for trial in detail["trials"]:
        attrs = {a["key"]: a["value"] for a in trial["user_attrs"]}
        truth = by_number[trial["number"]]
        assert trial["state"].upper() == truth.state.name
        # The figures a user browses for are scalar attributes, shown as they are stored; the
        # rest are the record's JSON groups (tuner.core.record), shown whole.
        assert set(attrs) <= set(STORED_KEYS) and len(attrs) <= 12
        for key in set(SCALARS) & set(truth.user_attrs):
            assert attrs[key] == str(truth.user_attrs[key]), key
        record = decode(truth)
        assert attrs["status"] == record.status and attrs["learning_rate"] == str(
            record.learning_rate
        )
        if truth.state.name == "COMPLETE":
            assert float(attrs["throughput"]) == record.throughput == truth.values[1]
        shown = json.loads(attrs["configuration"])
        assert shown["global_batch_size"] == record.configuration.global_batch_size
        assert shown["per_replica_batch_size"] == record.configuration.per_replica_batch_size

    rec = json.loads((work / "rec.json").read_text())
    body = detail["note"]["body"]
    assert f"global batch **{rec['global_batch_size']}**" in body
    assert "**Largest feasible global batch:**" in body
    assert "### Devices and versions" in body
    graphs = {g["id"] for g in detail["plotly_graph_objects"]}
    assert graphs == {"throughput-vs-batch", "loss-vs-batch", "pareto"}  # the pick among its equals
    sizes = {t.params["global_batch_size"] for t in by_number.values()}
    (batch,) = [p for p in detail["union_search_space"] if p["name"] == "global_batch_size"]
    assert batch["distribution"] == {  # a number on a log scale: Analytics orders it as such
        "type": "IntDistribution",
        "low": min(sizes),
        "high": max(sizes),
        "step": 1,
        "log": True,
    }


TUNER_PLOTS = "[id^='user-defined-plot:']"
"""optuna-dashboard's element for each plot stored with ``save_plotly_graph_object``."""


def plot_js(graph_id: str) -> str:
    return f"document.getElementById('user-defined-plot:{graph_id}')"


@pytest.mark.browser
def test_a_browser_sees_the_study_note_plots_and_trials(small_study, dashboard, chromium, tmp_path):
    work, _ = small_study
    rec = json.loads((work / "rec.json").read_text())
    stored = optuna.load_study(study_name="small", storage=f"sqlite:///{work}/small.db")
    first = min(stored.get_trials(), key=lambda t: t.number)

    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(dashboard)
        page.get_by_text(re.compile(r"^\d+\. small$")).first.click()
        page.wait_for_url(re.compile(r"/dashboard/studies/\d+$"))
        study_page = page.url
        page.locator(f"{TUNER_PLOTS} .gtitle").nth(1).wait_for()
        shown = page.eval_on_selector_all(TUNER_PLOTS, "els => els.map(e => e.id).sort()")
        assert shown == [
            "user-defined-plot:loss-vs-batch",
            "user-defined-plot:pareto",
            "user-defined-plot:throughput-vs-batch",
        ]
        # Drawn from our stored figures, with our data: the batch as measured in customdata.
        traces = page.evaluate(
            f"{plot_js('throughput-vs-batch')}.data"
            ".map(t => [t.name, t.x, t.y, (t.customdata || []).map(row => row[1])])"
        )
        by_name = {name: (x, y, batches) for name, x, y, batches in traces}
        at_base = set()
        for rule in stored.user_attrs["spec"]["search"]["lr_rules"]:
            x, y, batches = by_name[f"{rule} rule"]
            truth = sorted(
                (t.params["global_batch_size"], t.values[1])
                for t in stored.get_trials()
                if t.params["lr_rule"] == rule and t.values
            )
            assert sorted(zip(batches, y, strict=True)) == truth
            at_base.add(x[batches.index(rec["base_batch_size"])])
        assert len(at_base) == 3  # the rules' equal points at the base batch drawn side by side
        legend = page.evaluate(f"{plot_js('throughput-vs-batch')}.layout.legend.title.text")
        assert "drawn side by side" in legend
        chosen = next(t for t in stored.get_trials() if t.number == rec["trial_number"])
        assert by_name[f"recommended (trial #{chosen.number})"][1] == [chosen.values[1]]
        loss_layout = page.evaluate(f"{plot_js('loss-vs-batch')}.layout")
        (band,) = [s for s in loss_layout["shapes"] if s.get("showlegend")]
        assert band["name"] == "loss tolerance: within 2 % of the best loss"
        # tuner's Pareto plot: the pick among the candidates the tolerance makes equal.
        pareto = page.evaluate(f"{plot_js('pareto')}.data.map(t => [t.name, t.x, t.y])")
        (halo,) = [(x, y) for name, x, y in pareto if name.startswith("counted equal in loss")]
        assert len(halo[0]) == len(rec["candidates"])
        assert [chosen.values[1]] == by_name[f"recommended (trial #{chosen.number})"][1]
        assert chosen.values[1] in halo[1]
        title = page.evaluate(f"{plot_js('pareto')}.layout.title.text")
        assert f"the pick is #{chosen.number}" in title
        assert_titles_clear_of_the_toolbar(page, TUNER_PLOTS)

        page.evaluate(f"{plot_js('throughput-vs-batch')}.scrollIntoView({{block: 'start'}})")
        page.mouse.wheel(0, -60)
        # The toolbar shows (clear of the title) while the mouse is over a plot's top margin.
        page.locator(TUNER_PLOTS).first.hover(position={"x": 300, "y": 10})
        page.wait_for_timeout(500)
        save_screenshot(page, tmp_path, "dashboard-study.png")

        page.locator("a[href$='/note']").first.click()
        page.get_by_text("Largest feasible global batch:").first.wait_for()
        text = page.inner_text("body")
        assert f"global batch {rec['global_batch_size']} (" in text
        assert f"learning rate {rec['learning_rate']:.4g}" in text
        link = page.get_by_role("link", name="throughput and final loss vs global batch size")
        save_screenshot(page, tmp_path, "dashboard-note.png")
        link.click()  # the note's first link leads to the study page with tuner's plots
        page.locator(f"{TUNER_PLOTS} .main-svg").first.wait_for()
        assert page.url == f"{study_page}/#user-defined-plot:throughput-vs-batch"

        page.locator("a[href$='/trials']").first.click()
        page.get_by_text("User Attributes").first.wait_for()
        text = page.inner_text("body")
        save_screenshot(page, tmp_path, "dashboard-trial.png")
        # The key figures as scalar attributes, each on its own line; the groups as JSON.
        record = decode(first)
        assert f"status {record.status}" in text
        assert f"learning_rate {record.learning_rate}" in text
        assert (
            f"throughput {record.throughput}" in text and f"final_loss {record.final_loss}" in text
        )
        per_replica = record.configuration.per_replica_batch_size
        assert f'"per_replica_batch_size": {per_replica}' in text
    finally:
        page.close()


SIZES = [64, 128, 256, 512, 1024]
RULES = ["linear", "none", "sqrt"]


def write_grid_study(db: Path) -> str:
    """Study ``grid`` over global batch 64…1024 × three rules, made by tuner's own sampler and
    batch parameter (as ``tuner search`` stores them) with canned results instead of training,
    its note and plots published; returns its URL."""
    url = f"sqlite:///{db}"
    sampler = BatchAscendingGridSampler({"global_batch_size": SIZES, "lr_rule": RULES})
    study = optuna.create_study(
        study_name="grid", storage=url, directions=["minimize", "maximize"], sampler=sampler
    )
    study.set_user_attr("spec", {"search": {"base_lr": 1e-3, "base_batch_size": 64}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["final_loss", "throughput"])

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        batch = suggest_global_batch(trial, SIZES, categorical=False)
        rule = trial.suggest_categorical("lr_rule", RULES)
        lr = scaled_learning_rate(rule, 1e-3, batch, 64)
        for key, value in {
            "status": "ok",
            "per_replica_batch_size": batch // 2,
            "num_replicas": 2,
            "learning_rate": lr,
            "device_signature": "2x cpu",
        }.items():
            trial.set_user_attr(key, value)
        return 0.2 + 0.05 * abs(math.log2(lr / 4e-3)), 1000 * (batch / 64) ** 0.7

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective)
    publish(study, current_recommendation(study))
    return url


@pytest.mark.browser
def test_analytics_orders_the_global_batch_as_numbers(tmp_path, chromium):
    url = write_grid_study(tmp_path / "grid.db")
    proc, address = start_dashboard(tmp_path, url)
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(address)
        page.get_by_text(re.compile(r"^\d+\. grid$")).first.click()
        page.wait_for_url(re.compile(r"/dashboard/studies/\d+$"))
        page.locator("a[href$='/analytics']").first.click()
        page.locator("#plot-slice .xtick").first.wait_for()
        page.wait_for_timeout(500)
        axis, positions = page.evaluate(
            "(sizes => { const a = document.getElementById('plot-slice')._fullLayout.xaxis;"
            " return [a.type, sizes.map(s => a.d2p(s))]; })",
            SIZES,
        )
        assert axis == "log"  # a category axis would order the labels 128, 256, 512, 64
        assert positions == sorted(positions) and len(set(positions)) == len(SIZES)
        save_screenshot(page, tmp_path, "dashboard-analytics.png")
    finally:
        page.close()
        code, stderr = stop(proc)
    assert code == 0, stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_the_dashboard_cleanly(small_study, sig):
    work, url = small_study
    proc, address = start_dashboard(work, url)
    assert get_json(address.replace("/dashboard/", "/api/studies"))["study_summaries"]
    code, stderr = stop(proc, sig)
    assert code == 0
    assert "dashboard stopped" in stderr and "Traceback" not in stderr


def test_a_port_in_use_is_a_clear_error(small_study):
    work, url = small_study
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        start = time.monotonic()
        result = run_tuner("dashboard", "--storage", url, "--port", str(port), cwd=work)
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "Traceback" not in result.stderr and time.monotonic() - start < 60


def test_a_missing_storage_is_a_clear_error(tmp_path):
    result = run_tuner("dashboard", "--storage", "sqlite:///nothing.db", cwd=tmp_path)
    assert result.returncode == 2
    assert "storage file nothing.db does not exist" in result.stderr
    assert not (tmp_path / "nothing.db").exists()


def test_export_rewrites_the_note_only_when_asked(small_study, tmp_path):
    from optuna_dashboard import get_note, save_note

    work, _ = small_study
    shutil.copy(work / "small.db", tmp_path / "copy.db")
    url = f"sqlite:///{tmp_path}/copy.db"
    study = optuna.load_study(study_name="small", storage=url)
    save_note(study, "stale")
    before = sha256(tmp_path / "copy.db")
    plain = run_tuner("export", "--storage", url, "--study-name", "small", cwd=work)
    assert plain.returncode == 0, plain.stderr
    assert get_note(study) == "stale" and sha256(tmp_path / "copy.db") == before
    result = run_tuner(
        "export", "--storage", url, "--study-name", "small", "--update-note", cwd=work
    )
    assert result.returncode == 0, result.stderr
    rec = json.loads(result.stdout)
    note = get_note(study)
    assert note != "stale" and f"global batch **{rec['global_batch_size']}**" in note


def test_export_of_a_study_without_results_writes_nothing(tmp_path):
    url = f"sqlite:///{tmp_path}/empty.db"
    optuna.create_study(study_name="empty", storage=url, directions=["minimize", "maximize"])
    before = sha256(tmp_path / "empty.db")
    result = run_tuner("export", "--storage", url, "--study-name", "empty", cwd=tmp_path)
    assert result.returncode == 1 and "no COMPLETE trial" in result.stderr
    assert sha256(tmp_path / "empty.db") == before
