"""tuner.search in Jupyter (issue 30): a notebook whose cells define the model and the data,
executed by ``jupyter nbconvert --execute`` in a real kernel. The cells' functions are shipped
to the trial processes, the progress shows as lines in the cell's output while it runs, and the
result reads back in the next cell. The same name over an edited model is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow

DEFINE = """import keras
import numpy as np
import tuner

rng = np.random.default_rng(0)
x = rng.random((640, 8), dtype=np.float32)
y = x.sum(axis=1, keepdims=True)

def build_model():
    return keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(1)])

def load_data():
    return x[:512], y[:512], x[512:], y[512:]"""

SEARCH = """result = tuner.search(model=build_model, data=load_data, loss="mse", optimizer="adam",
    batch_multipliers=[1], lr_rules=["none"], epochs=2, baseline=False, seeds=1,
    max_repeats=1, noise_scale=False)"""

READ = """rec = result.recommendation
print("READ", result.shipped, result.trials["state"].tolist(), rec.batch_size)"""


CHANGE = (
    """def build_model():
    return keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
try:
"""
    + "\n".join("    " + line for line in SEARCH.splitlines())
    + """
except tuner.ConfigError as refused:
    print("REFUSED", refused)
print("STORED", len(tuner.load_study("sqlite:///studies/tuner.db", "build_model").trials))"""
)


def texts(cell: nbformat.NotebookNode) -> str:
    parts = [o.get("text") or o.get("data", {}).get("text/plain", "") for o in cell.outputs]
    return "\n".join(parts)


def test_a_notebooks_cells_search_and_read_the_result(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(src) for src in (DEFINE, SEARCH, READ, CHANGE)]
    nbformat.write(notebook, tmp_path / "api.ipynb")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "api.ipynb",
            "--output",
            "done.ipynb",
            "--ExecutePreprocessor.timeout=600",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    done = nbformat.read(tmp_path / "done.ipynb", as_version=4)
    progress = texts(done.cells[1])
    assert "checking the workload" in progress and "trial 0 ok: batch 64" in progress, progress
    assert "Recommendation" in progress
    assert "READ ['build_model', 'load_data'] ['COMPLETE'] 64" in texts(done.cells[2])
    # The same study name over an edited model (issue 44, case 1): refused, naming what changed
    # and a free name, never the old model's answer; nothing stored.
    refused = texts(done.cells[3])
    assert "REFUSED study 'build_model'" in refused, refused
    assert "model function, model configuration changed" in refused
    assert "study_name= (e.g. 'build_model-2')" in refused
    assert "STORED 1" in refused
