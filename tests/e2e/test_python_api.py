"""tuner.search from a notebook-like script (issue 30): the README's example, run as
``python -c`` so that its functions live in ``__main__`` (which no trial child can import, as
in a notebook), on a tiny budget. The functions are shipped by value, the trials train, the
result reads back; a second call resumes the study instead of training again."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

TINY = {  # the README's grid and budget -> one batch, two rules, no baseline, seeds or repeats
    "batch_multipliers=[1, 2, 4]": "batch_multipliers=[1, 2]",
    'lr_rules=["none", "linear", "sqrt"]': 'lr_rules=["none", "linear"]',
    "epochs=3,": "epochs=2, baseline=False, seeds=1, max_repeats=1, noise_scale=False,",
    "x = rng.random((20_480, 20)": "x = rng.random((1_280, 20)",
    "x[:16_384], y[:16_384], x[16_384:], y[16_384:]": "x[:1_024], y[:1_024], x[1_024:], y[1_024:]",
}

AFTER = """
import json
again = tuner.search(model=build_model, data=load_data, loss="mse", optimizer="adam",
    study_name="my-model-py", base_batch_size=64, batch_multipliers=[1, 2],
    lr_rules=["none", "linear"], base_lr=1e-3, epochs=2, baseline=False, seeds=1,
    max_repeats=1, noise_scale=False, progress=False)
rec = result.recommendation
print("RESULT " + json.dumps({
    "shipped": result.shipped,
    "states": result.trials["state"].tolist(),
    "batches": result.trials["global_batch_size"].tolist(),
    "batch_size": rec.batch_size, "learning_rate": rec.learning_rate,
    "optimizer": type(rec.optimizer).__name__,
    "trials_after_resume": len(again.trials),
    "report": str(result.report("report.html")),
}))
"""


def readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Your own model", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block and "tuner.search(" in block[1], (
        "the README's own-model section has no API example"
    )
    code = block[1]
    for old, new in TINY.items():
        assert old in code, f"the README's example no longer has {old!r}"
        code = code.replace(old, new)
    return code


def test_the_readmes_example_runs_with_functions_in_main(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", readme_example() + AFTER],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["shipped"] == ["build_model", "load_data"]
    assert result["states"] == ["COMPLETE"] * 4 and sorted(set(result["batches"])) == [64, 128]
    assert result["batch_size"] in (64, 128) and result["optimizer"] == "Adam"
    assert result["trials_after_resume"] == 4  # resumed: nothing trained again
    assert (tmp_path / "report.html").stat().st_size > 10_000
    # One folder for this storage's study, one inside it for this call's functions.
    (study_folder,) = (tmp_path / "studies" / "shipped").glob("my-model-py-*")
    (shipped,) = study_folder.iterdir()
    assert sorted(p.name for p in shipped.iterdir()) == [
        "build_model.pkl",
        "load_data.pkl",
        "tuner_shipped.py",
    ]
    assert "Recommendation" in run.stdout  # progress=True ends as `tuner search` does
