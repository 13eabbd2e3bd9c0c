"""The recommended-config sample of the docs: docs/reference/json.md holds a real run's file (see
there how it was made) with what the tables document and the code's schema version; it loads
back into a Keras optimizer, and the plain-Keras snippets of README.md and json.md read it
without tuner."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from trials import make_trial, run_recommend

import tuner
from tuner.core.recommend._export import SCHEMA_VERSION, SECTIONS, export_document

ROOT = Path(__file__).resolve().parent.parent
JSON_MD = ROOT / "docs" / "reference" / "json.md"
README = ROOT / "README.md"
SOMETIMES = "*sometimes*"


def json_blocks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(block) for block in blocks(path, "json")]


def blocks(path: Path, language: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.S | re.M)


def documented(header: str) -> dict[str, bool]:
    """The keys of json.md's first table headed ``| header |`` (``key``: the flat keys; the
    second such table is the per-signature entry's) -> whether only *sometimes* there."""
    lines = JSON_MD.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    keys = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        key_cell, what = line.strip("|").split("|", 1)
        keys[re.findall(r"`([^`]+)`", key_cell)[0]] = SOMETIMES in what
    return keys


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    (full,) = json_blocks(JSON_MD)
    return full


def test_the_sample_has_every_documented_key_and_section(sample: dict[str, Any]) -> None:
    assert sample["schema_version"] == SCHEMA_VERSION
    always = {key for key, sometimes in documented("key").items() if not sometimes}
    assert always <= set(sample), sorted(always - set(sample))
    assert set(sample) <= set(documented("key")), sorted(set(sample) - set(documented("key")))
    assert set(documented("section")) == set(SECTIONS) <= set(sample)
    assert "optimizer" not in sample  # version 2: it is recommended.optimizer
    for section in ("recommended", "distribution", "evidence", "provenance"):
        assert_section(sample[section], section)
    # What a user pastes into fit: the batch, nothing that cuts their training to the budget.
    assert set(sample["fit"]) == set(documented("`fit` key")) == {"batch_size"}
    assert sample["evidence"]["trial_budget"] == {"epochs": 3}
    assert sample["provenance"]["optimizer_config_source"] == "trained"  # a current worker's
    assert type(sample["fit"]["batch_size"]) is int and type(sample["trial_number"]) is int


def test_the_section_tables_are_what_the_export_produces() -> None:
    trial = make_trial(0, 128, "linear", loss=0.5, throughput=1000.0, windows=3)
    produced = export_document(run_recommend([trial]), trial, {}, None)
    for section in ("recommended", "distribution", "evidence", "provenance"):
        assert_section(produced[section], section)
    assert set(produced["fit"]) == set(documented("`fit` key"))
    # A batch reached only by gradient accumulation: the *sometimes* key is there too.
    extra = {"accumulation_steps": 2, "micro_batch_per_replica": 32}
    accumulated = make_trial(0, 128, "linear", loss=0.5, throughput=1000.0, windows=3, **extra)
    produced = export_document(run_recommend([accumulated]), accumulated, {}, None)
    assert set(documented("`recommended` key")) == set(produced["recommended"])


def assert_section(produced: dict[str, Any], section: str) -> None:
    """The section holds every key its table lists as always there, and only listed keys."""
    table = documented(f"`{section}` key")
    always = {key for key, sometimes in table.items() if not sometimes}
    assert always <= set(produced) <= set(table), (section, sorted(set(produced) ^ set(table)))


@pytest.mark.parametrize("where", [README, JSON_MD], ids=["README.md", "json.md"])
def test_the_plain_keras_snippet_reads_the_sample_without_tuner(
    where: Path, sample: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (snippet,) = [code for code in blocks(where, "python") if '["recommended"]' in code]
    assert "tuner" not in snippet.replace("no tuner import", "")
    name = re.findall(r'open\("([^"]+)"\)', snippet)[0]
    (tmp_path / name).write_text(json.dumps(sample), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    import keras
    import numpy as np

    def build_model() -> keras.Model:
        return keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])

    rows = 2 * sample["recommended"]["global_batch_size"]
    x, y = np.zeros((rows, 4), "float32"), np.zeros((rows, 1), "float32")
    scope: dict[str, Any] = {"build_model": build_model, "x": x, "y": y}
    policy = keras.mixed_precision.global_policy().name
    try:
        exec(compile(snippet, str(where), "exec"), scope)  # the docs' own code
    finally:
        keras.mixed_precision.set_global_policy(policy)
    optimizer = scope["model"].optimizer
    assert type(optimizer).__name__ == sample["recommended"]["optimizer"]["class_name"] == "Adam"
    assert float(optimizer.learning_rate) == pytest.approx(sample["recommended"]["learning_rate"])
    assert int(optimizer.iterations) == 3 * 2  # 3 epochs of 2 batches: the recommended batch


def test_the_sample_loads_back_as_the_trials_adam(sample: dict[str, Any], tmp_path: Path) -> None:
    doc = sample
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(doc))
    rec = tuner.load_recommendation(path)
    config = rec.optimizer.get_config()
    expected = doc["recommended"]["optimizer"]["config"]
    assert type(rec.optimizer).__name__ == doc["recommended"]["optimizer"]["class_name"] == "Adam"
    assert float(rec.optimizer.learning_rate) == pytest.approx(expected["learning_rate"], rel=1e-7)
    for key in ("beta_1", "beta_2", "epsilon", "amsgrad"):
        assert config[key] == expected[key], key
    assert rec.fit_kwargs == {"batch_size": doc["fit"]["batch_size"]}
    assert rec.trial_budget == {"epochs": 3}
