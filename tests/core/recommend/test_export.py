"""The recommended-config JSON's sections, built purely from a recommendation and its trial:
every rule's optimizer, integers that stay integers, precision, the masked password."""

from __future__ import annotations

import json
import math
from typing import Any

import optuna
import pytest
from optuna.distributions import CategoricalDistribution
from trials import make_trial, measured_trial, run_recommend, target_trial

from tuner.core.optimizers import from_description, trained_config, warmup_schedule
from tuner.core.recommend._export import (
    MEASURED_KEYS,
    SCHEMA_VERSION,
    SECTIONS,
    export_document,
    rounded,
    tidy_document,
)
from tuner.core.scaling import LR_RULES, batch_ratio, scaled_learning_rate
from tuner.core.stats import log_t_interval
from tuner.results import recommendation

# Keras 3.15's Adam().get_config(), as a trial's optimizer starts before its rule.
ADAM = {
    "name": "adam",
    "learning_rate": 0.001,
    "weight_decay": None,
    "clipnorm": None,
    "global_clipnorm": None,
    "clipvalue": None,
    "use_ema": False,
    "ema_momentum": 0.99,
    "ema_overwrite_frequency": None,
    "loss_scale_factor": None,
    "gradient_accumulation_steps": None,
    "beta_1": 0.9,
    "beta_2": 0.999,
    "epsilon": 1e-07,
    "amsgrad": False,
}
SPEC = {
    "workload": {"model": "m:build", "data": "m:data", "loss": "mse", "optimizer": "adam"},
    "search": {"base_batch_size": 64, "base_lr": 1e-3, "epochs": 3},
}
BASE_LR, BASE_BATCH, BATCH, WARMUP_STEPS = 1e-3, 64, 128, 512


def rule_request(name: str) -> dict[str, Any]:
    """The resolved rule a trial request carries at global batch ``BATCH``."""
    return {
        "name": name,
        "ratio": batch_ratio(BATCH, BASE_BATCH),
        "base_lr": BASE_LR,
        "learning_rate": scaled_learning_rate(name, BASE_LR, BATCH, BASE_BATCH),
        "warmup_steps": WARMUP_STEPS,
    }


def worker_description(name: str) -> dict[str, Any]:
    """The ``optimizer`` attribute the worker stores for rule ``name`` (see worker/optim.py)."""
    rule = rule_request(name)
    config = trained_config({**ADAM, "learning_rate": rule["learning_rate"]}, rule)
    scalars = {k: v for k, v in config.items() if k != "name" and isinstance(v, int | float)}
    described: dict[str, Any] = {"class": "Adam", "from_build": False, **scalars}
    if name == "linear-warmup":
        described["learning_rate"] = rule["learning_rate"]
        described["warmup"] = {"from": BASE_LR, "to": rule["learning_rate"], "steps": WARMUP_STEPS}
    keras_config = {"module": "keras.optimizers", "class_name": "Adam", "config": config}
    return {**described, "keras": {**keras_config, "registered_name": None}}


def document(rule: str = "linear", spec: dict[str, Any] = SPEC, **attrs: Any) -> dict[str, Any]:
    trial = make_trial(
        0,
        BATCH,
        loss=0.004024312345678,
        throughput=21687.312345678,
        learning_rate=scaled_learning_rate(rule, BASE_LR, BATCH, BASE_BATCH),
        **attrs,
    )
    trial.params["lr_rule"] = rule  # beyond the helper's grid of rules
    trial.distributions["lr_rule"] = CategoricalDistribution(LR_RULES)
    rec = run_recommend([trial])
    return export_document(rec, trial, spec, "sqlite:///s.db")


@pytest.mark.parametrize("rule", ["none", "linear", "sqrt", "linear-warmup", "sqrt-adam"])
@pytest.mark.parametrize("stored", ["trained", "described"])
def test_every_rules_optimizer_is_the_one_the_trial_trained_with(rule: str, stored: str) -> None:
    described = worker_description(rule)
    if stored == "described":  # a trial stored before the Keras config was
        del described["keras"]
    doc = document(rule, optimizer=described, windows=3)
    section = doc["recommended"]["optimizer"]
    assert doc["provenance"]["optimizer_config_source"] == stored
    assert section["class_name"] == "Adam" and section["module"] == "keras.optimizers"
    config, lr = section["config"], scaled_learning_rate(rule, BASE_LR, BATCH, BASE_BATCH)
    k = BATCH / BASE_BATCH
    if rule == "linear-warmup":
        assert config["learning_rate"] == warmup_schedule(BASE_LR, lr, WARMUP_STEPS)
        assert config["learning_rate"]["config"]["warmup_target"] == pytest.approx(2e-3)
    else:
        assert config["learning_rate"] == pytest.approx(lr, rel=1e-14)
    if rule == "sqrt-adam":  # Malladi et al.: beta -> 1 - k(1 - beta), epsilon / sqrt(k)
        assert config["beta_1"] == 0.8 and config["beta_2"] == 0.998  # float noise dropped
        assert config["epsilon"] == pytest.approx(1e-7 / math.sqrt(k), rel=1e-14)
    else:
        assert (config["beta_1"], config["beta_2"], config["epsilon"]) == (0.9, 0.999, 1e-7)


def test_without_a_stored_optimizer_the_specs_class_at_the_trials_rate() -> None:
    doc = document("sqrt")
    assert doc["recommended"]["optimizer"] == {
        "module": "keras.optimizers",
        "class_name": "Adam",
        "config": {"learning_rate": pytest.approx(1e-3 * math.sqrt(2), rel=1e-14)},
        "registered_name": None,
    }
    assert doc["provenance"]["optimizer_config_source"] == "spec"


def test_sqrt_adam_on_an_optimizer_without_moments_is_refused() -> None:
    with pytest.raises(ValueError, match="beta_1, beta_2 and epsilon"):
        trained_config({"learning_rate": 0.1, "momentum": 0.9}, rule_request("sqrt-adam"))
    assert trained_config({"learning_rate": 0.1}, rule_request("sqrt")) == {"learning_rate": 0.1}


def test_a_description_keeps_the_settings_and_drops_the_bookkeeping() -> None:
    rebuilt = from_description({"class": "SGD", "from_build": True, "momentum": 0.7}, "adam", 0.1)
    assert rebuilt["class_name"] == "SGD" and rebuilt["config"] == {
        "momentum": 0.7,
        "learning_rate": 0.1,
    }


def test_the_document_has_the_version_the_sections_and_every_flat_key() -> None:
    trial = make_trial(0, BATCH, "linear", loss=0.5, throughput=1000.0)
    rec = run_recommend([trial])
    doc = export_document(rec, trial, SPEC, None)
    assert doc["schema_version"] == SCHEMA_VERSION == 3
    assert list(doc)[: 1 + len(SECTIONS)] == ["schema_version", *SECTIONS]
    assert set(rec) < set(doc)  # backward compatible: the flat keys stay
    assert "optimizer" not in doc  # version 2: only in the recommended block
    assert doc["provenance"]["storage"] is None


def test_the_recommended_block_is_what_plain_keras_reads() -> None:
    trial = make_trial(0, BATCH, "linear", loss=0.5, throughput=1000.0, precision="mixed_bfloat16")
    doc = export_document(run_recommend([trial]), trial, SPEC, None)
    block = doc["recommended"]
    assert list(block) == [
        "global_batch_size", "per_replica_batch_size", "learning_rate", "optimizer", "precision"
    ]  # fmt: skip
    assert (block["global_batch_size"], block["per_replica_batch_size"]) == (128, 64)
    assert block["learning_rate"] == doc["learning_rate"] == pytest.approx(2e-3)
    assert block["optimizer"]["class_name"] == "Adam" and block["precision"] == "mixed_bfloat16"
    assert type(block["global_batch_size"]) is int


def test_no_section_restates_a_flat_key() -> None:
    doc = document("linear", windows=3)
    for section in ("distribution", "evidence", "provenance"):
        assert not set(doc[section]) & set(doc), section
    assert doc["distribution"] == {
        "strategy": "MirroredStrategy",
        "loop": "fit",
        "update_on": "replicas",
    }


def test_integers_stay_integers_and_floats_get_their_precision() -> None:
    doc = document("linear-warmup", optimizer=worker_description("linear-warmup"), windows=3)
    text = json.dumps(doc)
    assert doc["fit"] == {"batch_size": 128}
    assert doc["evidence"]["trial_budget"] == {"epochs": 3}
    assert '"fit": {"batch_size": 128}' in text and '"trial_budget": {"epochs": 3}' in text
    assert doc["num_replicas"] == 2 and doc["per_replica_batch_size"] == 64
    assert all(type(doc[k]) is int for k in ("num_replicas", "per_replica_batch_size"))
    schedule = doc["recommended"]["optimizer"]["config"]["learning_rate"]["config"]
    assert type(schedule["warmup_steps"]) is int and type(schedule["decay_steps"]) is int
    assert type(doc["trial_number"]) is int and type(doc["global_batch_size"]) is int
    # Measurements: 6 significant digits.
    assert doc["throughput"] == 21687.3
    assert doc["final_loss"] == 0.00402431
    assert doc["per_device_signature"]["2x cpu"]["throughput"] == 21687.3


def test_rounding_keeps_ints_and_bools_and_drops_non_finite() -> None:
    value = {"a": [1, True, 0.1 + 0.2, float("nan")], "b": {"c": float("inf"), "d": 7}}
    assert rounded(value, 15) == {"a": [1, True, 0.3, None], "b": {"c": None, "d": 7}}
    assert rounded(123456.789, 6) == 123457.0 and rounded(False, 6) is False
    assert {"throughput", "final_loss"} <= MEASURED_KEYS


def test_a_sample_budget_is_evidence_not_an_argument_of_fit() -> None:
    # 46: fit held {"epochs": 1, "steps_per_epoch": 32} of a 2,048-sample search, and a user who
    # pasted it into model.fit trained 32 steps. fit is the batch; the budget is evidence.
    spec = {**SPEC, "search": {**SPEC["search"], "epochs": None, "train_samples": 100_000}}
    doc = document("none", spec=spec, train_samples_used=98_304)
    assert doc["fit"] == {"batch_size": 128}
    assert doc["evidence"]["trial_budget"] == {"train_samples": 100_000, "steps": 768}


def test_evidence_and_distribution_carry_units_in_their_names() -> None:
    doc = document(
        "linear",
        throughput_spread=0.1134151,
        epoch_losses=[0.5, 0.25],
        gradient_noise_scale=39.3950001,
        peak_memory_bytes=123_456_789,
        loop="fit",
    )
    evidence = doc["evidence"]
    assert evidence["throughput_spread_fraction"] == 0.113415
    assert doc["gradient_noise_scale"] == 39.395
    assert evidence["epoch_train_losses"] == [0.5, 0.25]
    assert evidence["peak_memory_bytes"] == 123_456_789 and evidence["loss"] == "mse"
    assert doc["devices"] == ["/cpu:0", "/cpu:1"]
    assert doc["provenance"]["model"] == "m:build" and doc["provenance"]["data"] == "m:data"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://tuner:s3cr3t@db.example:5432/studies",
        "postgresql+psycopg://:p@ss@host/db",
    ],
)
def test_provenance_masks_the_storage_password(url: str) -> None:
    study = optuna.create_study(directions=["minimize", "maximize"], study_name="masked")
    study.set_user_attr("spec", SPEC)
    study.add_trial(make_trial(0, BATCH, "linear", loss=0.5, throughput=1000.0))
    doc = recommendation(study, storage_url=url)
    storage = doc["provenance"]["storage"]
    assert "***@" in storage and "s3cr3t" not in json.dumps(doc) and "p@ss" not in storage
    assert doc["study_name"] == "masked" and doc["trial_number"] == 0


def test_model_hyperparameters_are_kept_exactly_while_settings_lose_float_noise() -> None:
    # Found by the hypermodel e2e test: 15 digits turned l2 9.528111325087635e-06 into
    # 9.52811132508763e-06, and the model rebuilt from the JSON was not the one trained.
    l2 = 9.528111325087635e-06
    tidied = tidy_document(
        {
            "model_hyperparameters": {"l2": l2, "units": 16},
            "per_device_signature": {"2x cpu": {"model_hyperparameters": {"l2": l2}}},
            "learning_rate": 0.7999999999999999,
        }
    )
    assert tidied["model_hyperparameters"] == {"l2": l2, "units": 16}
    assert tidied["per_device_signature"]["2x cpu"]["model_hyperparameters"]["l2"] == l2
    assert tidied["learning_rate"] == 0.8


def test_evidence_carries_the_runs_and_the_flat_keys_the_intervals_and_the_verdict() -> None:
    trials = [
        measured_trial(0, 64, runs=[980.0, 1000.0, 1020.0]),
        measured_trial(1, 128, runs=[990.0, 1030.0, 1050.0]),
    ]
    rec = run_recommend(
        trials, baselines={"2x cpu": {"throughput": 600.0, "throughput_ci": [590, 610]}}
    )
    doc = export_document(rec, trials[0], SPEC, None)
    evidence = doc["evidence"]
    assert "verdict" not in evidence and doc["verdict"] == rec["verdict"]
    assert doc["tied_with"] == rec["tied_with"] and doc["tie_rule"] == rec["tie_rule"]
    assert doc["runs"] == 3 and evidence["run_throughputs_samples_per_s"] == [980, 1000, 1020]
    assert doc["throughput_ci_method"] == "t over 3 runs"
    runs_ci = log_t_interval([980.0, 1000.0, 1020.0])
    assert runs_ci is not None
    assert doc["throughput_ci"] == rounded(runs_ci.as_list(), 6)
    assert doc["speedup_ci"] == rounded(rec["speedup_ci"], 6)
    assert doc["loss_tolerance_source"] == "--tolerance"
    assert "target_curve" not in evidence  # no target, no time-to-target evidence


def test_evidence_of_a_time_to_target_study() -> None:
    trial = target_trial(
        0, 64, times=[10.0, 12.0], samples=4096, compile_s=1.5, eval_s=0.25,
        target_curve=[[2048, 0.3], [4096, 0.09]],
    )  # fmt: skip
    rec = run_recommend([trial], target_loss=0.1)
    doc = export_document(rec, trial, SPEC, None)
    evidence = doc["evidence"]
    assert doc["target_loss"] == 0.1 and doc["reached_target"] is True
    assert doc["samples_to_target"] == 4096 and doc["time_to_target_s"] == 11.0
    assert doc["time_to_target_ci"] == rounded(rec["time_to_target_ci"], 6)
    assert (evidence["compile_s"], evidence["eval_s"]) == (1.5, 0.25)
    assert evidence["target_curve"] == [[2048, 0.3], [4096, 0.09]]


def stored_study(search: dict[str, Any], **attrs: Any) -> optuna.Study:
    study = optuna.create_study(directions=["minimize", "maximize"], study_name="stored")
    study.set_user_attr("spec", {**SPEC, "search": {**SPEC["search"], **search}})
    for key, value in attrs.items():
        study.set_user_attr(key, value)
    study.add_trial(target_trial(0, 64, times=[20.0], samples=4096, loss=1.0, throughput=100.0))
    study.add_trial(target_trial(1, 128, times=[10.0], samples=8192, loss=1.1, throughput=90.0))
    study.add_trial(target_trial(2, 256, times=None, loss=1.0, throughput=5000.0))
    return study


def test_a_stored_study_defaults_to_its_own_target_and_tolerance() -> None:
    with_target = recommendation(stored_study({"target_loss": 0.1, "tolerance": 0.05}))
    assert with_target["policy"] == "time-to-target" and with_target["trial_number"] == 1
    assert with_target["target_loss"] == 0.1 and with_target["loss_tolerance"] == 0.05
    assert with_target["prediction"]["trust"].startswith("No prediction")
    plain = recommendation(stored_study({"tolerance": 0.2}))
    assert plain["policy"] == "loss-then-throughput" and plain["trial_number"] == 2
    assert plain["loss_tolerance"] == 0.2 and "prediction" not in plain
    study = stored_study({"target_loss": 0.1, "tolerance": 0.2})
    given = recommendation(study, tolerance=0.01, policy="loss-then-throughput")
    assert given["loss_tolerance"] == 0.01 and given["policy"] == "loss-then-throughput"
    assert given["trial_number"] == 2 and given["candidates"] == [0, 2]


def test_a_stored_study_passes_its_seed_noise() -> None:
    seeds = {"2x cpu": {"seeds": [1, 2, 3], "final_losses": [1.0, 1.3, 0.9], "spread": 0.2}}
    rec = recommendation(stored_study({}, seed_noise=seeds))
    assert (
        rec["loss_tolerance"] == pytest.approx(0.4) and rec["loss_tolerance_source"] == "seed noise"
    )
    assert rec["seed_final_losses"] == [1.0, 1.3, 0.9]
    assert rec["candidates"] == [0, 1, 2]
