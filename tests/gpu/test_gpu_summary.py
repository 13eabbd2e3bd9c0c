"""benchmarks/gpu/summary.py's arithmetic on hand-made trials: the knee, the out-of-memory
boundary per precision, the bfloat16 speedup, the overhead table; and a summary of no study."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from conftest import TESTS

PATH = TESTS.parent / "benchmarks" / "gpu" / "summary.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_summary", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_summary"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


summary = _load()
Run = summary.Run
CURVE = {64: 35_000.0, 256: 106_000.0, 1024: 139_000.0, 4096: 146_000.0}


def _runs() -> list:
    runs = []
    for n, (batch, value) in enumerate(CURVE.items()):
        timings = {"import_s": 4.0, "tracing_s": 20.0 + n, "training_s": 1.0, "wall_s": 30.0}
        runs.append(Run(n, batch, "none", "float32", "ok", value, batch * 10**6, timings))
        runs.append(Run(10 + n, batch, "none", "mixed_bfloat16", "ok", value * 1.5, None))
    runs.append(Run(20, 8192, "none", "float32", "oom", None, None, error="RESOURCE_EXHAUSTED"))
    runs.append(Run(21, 8192, "sqrt", "float32", "oom-implied", None, None))
    runs.append(Run(22, 8192, "none", "mixed_bfloat16", "ok", 230_000.0, None))
    return runs


def test_the_knee_is_the_smallest_batch_near_the_best_throughput() -> None:
    assert summary.knee(CURVE) == 1024  # 139k >= 0.9 x 146k; 106k is not
    assert summary.knee({}) is None


def test_the_out_of_memory_boundary_is_per_precision() -> None:
    runs = _runs()
    assert summary.oom_boundary(runs, "float32") == (4096, 8192)
    assert summary.oom_boundary(runs, "mixed_bfloat16") == (8192, None)


def test_the_throughput_section_shows_the_speedup_and_the_statuses() -> None:
    text = "\n".join(summary.throughput_section(_runs()))
    assert "| 1,024 | 139,000 | 208,500 | 1.50× |" in text
    assert "| 8,192 | oom | 230,000 | – |" in text
    assert "float32: knee at global batch 1,024" in text


def test_the_overhead_section_lists_each_timed_trial_and_the_medians() -> None:
    text = "\n".join(summary.overhead_section(_runs()))
    assert "| 0 | 64 | none | float32 | ok | 4.0 | – | – | 20.0 | 1.0 | – | 30.0 |" in text
    assert "compile + first window 21.5" in text


def test_a_missing_study_still_gets_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "summary.md"
    code = summary.main(
        ["--storage", f"sqlite:///{tmp_path}/none.db", "--study-name", "x", "--output", str(out)]
    )
    assert code == 0
    text = out.read_text()
    assert "- trials: 0 ()" in text and "No recommendation was exported." in text
    assert "The sweep did not run." in text and "--accumulation 2: no report" in text


def test_a_throughput_interval_spans_every_run_of_the_point() -> None:
    """Two runs of one program may differ by more than either's own interval: both show."""
    timed = {"tracing_s": 5.0}
    runs = [
        Run(0, 256, "none", "float32", "ok", 170_000.0, None, timed, throughput_ci=(168e3, 178e3)),
        Run(1, 256, "sqrt", "float32", "ok", 138_000.0, None, {"tracing_s": 1.0},
            throughput_ci=(131e3, 140e3)),
    ]  # fmt: skip
    text = "\n".join(summary.throughput_section(runs))
    assert "| 256 | 154,000 (131,000–178,000, 2 runs) |" in text
    cache = "\n".join(summary.cache_section(runs, []))
    assert "| 256 | float32 | 5.0 | 1.0 | 5.0× |" in cache
