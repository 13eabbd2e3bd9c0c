"""The two-line answer a search, ``tuner show`` and ``SearchResult.show()`` end with: the
recommendation in plain words, then the verdict, then the table (issue 30 item 4)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from trials import make_trial, run_recommend

from tuner.console.display import print_recommendation
from tuner.core.recommend import export_document
from tuner.views.recommendation import answer_text

ADAM = {"module": "keras.optimizers", "class_name": "Adam", "config": {"learning_rate": 0.002}}


def exported(**attrs: Any) -> dict[str, Any]:
    trial = make_trial(0, 128, "linear", loss=0.5, throughput=1000.0, **attrs)
    return export_document(run_recommend([trial]), trial, {}, None)


def test_the_answer_names_batch_replicas_and_optimizer_in_keras_words() -> None:
    gpus = exported(devices=["/gpu:0", "/gpu:1"], optimizer={"keras": ADAM})
    assert answer_text(gpus) == "Use global batch 128 (64 per GPU) and Adam(learning_rate=0.002)."
    cpus = exported(optimizer={"keras": ADAM})
    assert answer_text(cpus) == (
        "Use global batch 128 (64 per replica) and Adam(learning_rate=0.002)."
    )


def test_the_precision_is_said_only_when_it_is_not_float32() -> None:
    rec = exported(optimizer={"keras": ADAM}, precision="mixed_bfloat16")
    assert answer_text(rec) == (
        "Use global batch 128 (64 per replica), Adam(learning_rate=0.002), and the "
        "mixed_bfloat16 dtype policy."
    )


def test_one_replica_and_a_version_1_file() -> None:
    v1 = {
        "global_batch_size": 64,
        "per_replica_batch_size": 64,
        "num_replicas": 1,
        "learning_rate": 1e-3,
        "optimizer": {**ADAM, "class_name": "SGD"},
    }
    assert answer_text(v1) == "Use global batch 64 and SGD(learning_rate=0.001)."
    assert answer_text({**v1, "optimizer": None}) == "Use global batch 64 and learning rate 0.001."


def test_the_answer_comes_first_the_verdict_second_then_the_table() -> None:
    rec = exported(optimizer={"keras": ADAM})
    console = Console(record=True, width=100)
    print_recommendation(console, rec)
    lines = [line for line in console.export_text().splitlines() if line.strip()]
    assert lines[0] == answer_text(rec)
    assert lines[1].startswith("verdict: The speedup over one device is unknown")
    table = lines[lines.index(next(x for x in lines if x.startswith("Recommendation"))) :]
    assert not any(line.startswith("verdict ") for line in table)  # said once, above it
    assert any(line.startswith("global batch size") for line in table)
