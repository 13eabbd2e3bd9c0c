"""The recommended-config samples of the docs: docs/reference/json.md holds a real run's file
(see there how it was made), README.md an excerpt of it. Both have what the tables document,
the code's schema version, and load back into a Keras optimizer."""

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
    text = path.read_text(encoding="utf-8")
    return [json.loads(block) for block in re.findall(r"^```json\n(.*?)^```", text, re.S | re.M)]


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
    for section in ("distribution", "evidence", "provenance"):
        assert set(sample[section]) == set(documented(f"`{section}` key")), section
    fit = set(sample["fit"])
    assert fit <= set(documented("`fit` key")) and "batch_size" in fit
    assert len(fit & {"epochs", "steps"}) == 1
    assert sample["provenance"]["optimizer_config_source"] == "trained"  # a current worker's
    assert type(sample["fit"]["batch_size"]) is int and type(sample["trial_number"]) is int


def test_the_section_tables_are_what_the_export_produces() -> None:
    trial = make_trial(0, 128, "linear", loss=0.5, throughput=1000.0, windows=3)
    produced = export_document(run_recommend([trial]), trial, {}, None)
    for section in ("distribution", "evidence", "provenance"):
        assert set(produced[section]) == set(documented(f"`{section}` key")), section
    assert set(produced["fit"]) < set(documented("`fit` key"))


def test_the_readme_shows_an_excerpt_of_the_same_file(sample: dict[str, Any]) -> None:
    (excerpt,) = json_blocks(README)
    assert excerpt["schema_version"] == SCHEMA_VERSION
    assert {"fit", "optimizer"} <= set(excerpt)
    assert excerpt == {key: sample[key] for key in excerpt}


@pytest.mark.parametrize("where", ["json.md", "README.md"])
def test_a_sample_loads_back_as_the_trials_adam(
    where: str, sample: dict[str, Any], tmp_path: Path
) -> None:
    doc = sample if where == "json.md" else json_blocks(README)[0]
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(doc))
    rec = tuner.load_recommendation(path)
    config = rec.optimizer.get_config()
    expected = doc["optimizer"]["config"]
    assert type(rec.optimizer).__name__ == doc["optimizer"]["class_name"] == "Adam"
    assert float(rec.optimizer.learning_rate) == pytest.approx(expected["learning_rate"], rel=1e-7)
    for key in ("beta_1", "beta_2", "epsilon", "amsgrad"):
        assert config[key] == expected[key], key
    assert rec.fit_kwargs == {"batch_size": doc["fit"]["batch_size"], "epochs": 3}
