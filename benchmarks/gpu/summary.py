"""Summarise the GPU check's study (benchmarks/gpu/run.sh) as Markdown.

Reads the trials from the study's storage and the exported recommendation, and writes: the
throughput per global batch and precision with its knee, the out-of-memory boundary per
precision, the bfloat16 speedup per batch, where each trial's time went (the stored ``timings``
attribute), and the recommendation. Works on a partial study (a search cut short by the time
budget): whatever finished is summarised, and the summary says the search was interrupted.

    python3 benchmarks/gpu/summary.py --storage sqlite:///gpu-out/study.db \
        --study-name convnet-gpu --recommendation gpu-out/recommendation.json \
        --output gpu-out/summary.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.core.record import decode

KNEE_FRACTION = 0.9
"""The knee: the smallest global batch reaching this fraction of the precision's best throughput."""
OOM_STATUSES = ("oom", "oom-implied")
PHASES = (
    ("import_s", "import"),
    ("device_init_s", "devices"),
    ("build_s", "build"),
    ("tracing_s", "compile + first window"),
    ("training_s", "training"),
    ("evaluate_s", "evaluate"),
    ("wall_s", "trial total"),
)
"""The ``timings`` keys shown per trial: ``tracing_s`` is the first window's excess over a
steady one (tracing, XLA compilation and autotuning); ``wall_s`` runs from spawn to result."""


@dataclass(frozen=True)
class Run:
    """One trial as the summary needs it."""

    number: int
    batch: int
    rule: str
    precision: str
    status: str
    throughput: float | None
    peak_bytes: int | None
    timings: dict[str, float] = field(default_factory=dict)
    device_kind: str | None = None
    error: str | None = None
    throughput_ci: tuple[float, float] | None = None


def load_runs(storage: str, study_name: str) -> tuple[list[Run], dict[str, Any]]:
    """The study's finished trials (RUNNING ones left out) and its user attributes."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=study_name, storage=storage)
    runs = [_run(trial) for trial in study.get_trials(deepcopy=False)]
    return [run for run in runs if run is not None], dict(study.user_attrs)


def _run(trial: Any) -> Run | None:
    attrs = decode(trial).flat
    status = attrs.get("status")
    batch = attrs.get("global_batch_size", trial.params.get("global_batch_size"))
    if status is None or batch is None:
        return None
    precision = attrs.get("precision") or trial.params.get("precision") or "float32"
    return Run(
        number=trial.number,
        batch=int(batch),
        rule=str(attrs.get("lr_rule", trial.params.get("lr_rule", "?"))),
        precision=str(precision),
        status=str(status),
        throughput=attrs.get("throughput") if status == "ok" else None,
        peak_bytes=attrs.get("peak_memory_bytes"),
        timings={k: float(v) for k, v in (attrs.get("timings") or {}).items()},
        device_kind=attrs.get("device_kind"),
        error=attrs.get("error"),
        throughput_ci=_interval(attrs.get("throughput_ci")) if status == "ok" else None,
    )


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2 and None not in value:
        return float(value[0]), float(value[1])
    return None


def throughput_table(runs: Sequence[Run]) -> dict[str, dict[int, float]]:
    """Median throughput (samples/s) of the completed runs per precision and global batch."""
    found: dict[str, dict[int, list[float]]] = {}
    for run in runs:
        if run.throughput is not None:
            found.setdefault(run.precision, {}).setdefault(run.batch, []).append(run.throughput)
    return {
        precision: {batch: statistics.median(values) for batch, values in sorted(rows.items())}
        for precision, rows in found.items()
    }


def knee(curve: dict[int, float], fraction: float = KNEE_FRACTION) -> int | None:
    """The smallest batch whose throughput reaches ``fraction`` of the curve's best."""
    if not curve:
        return None
    best = max(curve.values())
    return min(batch for batch, value in curve.items() if value >= fraction * best)


def oom_boundary(runs: Sequence[Run], precision: str) -> tuple[int | None, int | None]:
    """(largest batch that trained, smallest batch that ran out of memory) for ``precision``."""
    mine = [run for run in runs if run.precision == precision]
    trained = [run.batch for run in mine if run.status == "ok"]
    oom = [run.batch for run in mine if run.status in OOM_STATUSES]
    return (max(trained) if trained else None, min(oom) if oom else None)


def precisions_of(runs: Iterable[Run]) -> list[str]:
    """The precisions in the study, float32 first."""
    return sorted({run.precision for run in runs}, key=lambda p: (p != "float32", p))


def _fmt(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _mib(value: int | None) -> str:
    return "–" if value is None else f"{value / 2**20:,.0f}"


def throughput_section(runs: Sequence[Run]) -> list[str]:
    """The throughput curve per precision, its knee, and the bfloat16 speedup per batch."""
    table = throughput_table(runs)
    precisions = precisions_of(runs)
    batches = sorted({run.batch for run in runs})
    status: dict[tuple[str, int], str] = {}
    for run in sorted(runs, key=lambda r: r.number):  # the first run's status: oom, not implied
        if run.status != "ok":
            status.setdefault((run.precision, run.batch), run.status)
    head = "| global batch | " + " | ".join(f"{p} (samples/s)" for p in precisions)
    speedup = "mixed_bfloat16" in precisions and "float32" in precisions
    lines = ["## Throughput", "", head + (" | bf16 speedup |" if speedup else " |")]
    lines.append("|" + " --- |" * (len(precisions) + 1 + speedup))
    for batch in batches:
        cells = []
        for precision in precisions:
            value = table.get(precision, {}).get(batch)
            shown = _fmt(value) if value is not None else status.get((precision, batch), "–")
            cells.append(shown + _ci_of(runs, precision, batch))
        if speedup:
            fp32 = table.get("float32", {}).get(batch)
            bf16 = table.get("mixed_bfloat16", {}).get(batch)
            cells.append(f"{bf16 / fp32:.2f}×" if fp32 and bf16 else "–")
        lines.append(f"| {batch:,} | " + " | ".join(cells) + " |")
    lines.append("")
    for precision in precisions:
        curve = table.get(precision, {})
        at = knee(curve)
        if at is not None:
            lines.append(
                f"- {precision}: knee at global batch {at:,} (the smallest reaching "
                f"{KNEE_FRACTION:.0%} of the best, {max(curve.values()):,.0f} samples/s); "
                "median over rules and repeats."
            )
    return [*lines, ""]


def _ci_of(runs: Sequence[Run], precision: str, batch: int) -> str:
    """The span of the completed runs' 95 % intervals there (each over one run's timed
    windows), as ' (lo–hi)', with the runs' count where there are several: two runs of one
    program can differ by more than either's interval (a small batch on a GPU waits on the host)."""
    found = [
        run.throughput_ci
        for run in runs
        if run.precision == precision and run.batch == batch and run.throughput_ci
    ]
    if not found:
        return ""
    low, high = min(ci[0] for ci in found), max(ci[1] for ci in found)
    runs_text = f", {len(found)} runs" if len(found) > 1 else ""
    return f" ({low:,.0f}–{high:,.0f}{runs_text})"


def memory_section(runs: Sequence[Run], memory_limit: str | None) -> list[str]:
    """The out-of-memory boundary and the peak device memory per precision and batch."""
    cap = f" under a cap of {memory_limit} per device" if memory_limit else ""
    lines = [f"## Out-of-memory boundary{cap}", ""]
    for precision in precisions_of(runs):
        trained, oom = oom_boundary(runs, precision)
        first = next((r for r in runs if r.precision == precision and r.status == "oom"), None)
        why = f" ({first.error})" if first is not None and first.error else ""
        lines.append(
            f"- {precision}: largest batch trained {_fmt(trained)}, smallest out of memory "
            f"{_fmt(oom)}{why}"
        )
    lines += ["", "Peak device memory (MiB, `peak_memory_bytes`, largest over rules):", ""]
    lines += ["| global batch | " + " | ".join(precisions_of(runs)) + " |"]
    lines.append("|" + " --- |" * (len(precisions_of(runs)) + 1))
    for batch in sorted({run.batch for run in runs}):
        cells = []
        for precision in precisions_of(runs):
            peaks = [
                r.peak_bytes
                for r in runs
                if r.batch == batch and r.precision == precision and r.peak_bytes
            ]
            cells.append(_mib(max(peaks)) if peaks else "–")
        lines.append(f"| {batch:,} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def overhead_section(runs: Sequence[Run]) -> list[str]:
    """Each trial's phases (seconds) from the stored ``timings``, and their medians."""
    timed = [run for run in runs if run.timings]
    lines = ["## Trial overhead (seconds, from each trial's `timings`)", ""]
    lines.append(
        "| trial | batch | rule | precision | status | " + " | ".join(n for _, n in PHASES)
    )
    lines[-1] += " |"
    lines.append("|" + " --- |" * (5 + len(PHASES)))
    for run in sorted(timed, key=lambda r: r.number):
        cells = [_fmt(run.timings.get(key), 1) for key, _ in PHASES]
        lines.append(
            f"| {run.number} | {run.batch:,} | {run.rule} | {run.precision} | {run.status} | "
            + " | ".join(cells)
            + " |"
        )
    medians = []
    for key, name in PHASES:
        values = [run.timings[key] for run in timed if key in run.timings]
        if values:
            medians.append(f"{name} {statistics.median(values):.1f}")
    lines += ["", "Medians: " + (", ".join(medians) if medians else "none recorded") + "."]
    lines.append(
        "A trial's first one at a batch and precision compiles (XLA autotuning included); "
        "later ones there read the persistent compilation cache."
    )
    return [*lines, ""]


def cache_section(runs: Sequence[Run], cache_off: Sequence[Run]) -> list[str]:
    """Compile time of a repeat: the same program (the learning rate is a variable, not a
    constant of it) compiled again with the cache off, against a later trial at the same batch
    and precision that reads the cache the first one wrote."""
    lines = ["## Compile time of a repeat (`timings.tracing_s`, seconds)", ""]

    def firsts(found: Sequence[Run]) -> dict[tuple[int, str], list[float]]:
        by_point: dict[tuple[int, str], list[float]] = {}
        for run in sorted(found, key=lambda r: r.number):
            if run.status == "ok" and "tracing_s" in run.timings:
                by_point.setdefault((run.batch, run.precision), []).append(run.timings["tracing_s"])
        return by_point

    off = firsts(cache_off)
    for (batch, precision), values in sorted(off.items()):
        shown = ", ".join(f"{v:.1f}" for v in values)
        lines.append(f"- cache off, batch {batch:,} {precision}: trials compile in {shown}")
    lines += ["", "| batch | precision | first trial (compiles) | later trials (cache) | ratio |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for (batch, precision), values in sorted(firsts(runs).items()):
        if len(values) < 2:
            continue
        later = statistics.median(values[1:])
        ratio = f"{values[0] / later:.1f}×" if later > 0 else "–"
        lines.append(f"| {batch:,} | {precision} | {values[0]:.1f} | {later:.1f} | {ratio} |")
    return [*lines, ""]


def sweep_section(runs: Sequence[Run], exported: dict[str, Any] | None) -> list[str]:
    """The --lr-sweep study: final loss per rate and batch, and the law it exported."""
    lines = ["## The learning-rate sweep (`--lr-sweep 5`)", ""]
    law = (exported or {}).get("lr_law")
    if not runs and not law:
        return [*lines, "The sweep did not run.", ""]
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    lines.append("- trials: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if law:
        for key in ("alpha", "alpha_ci", "regime", "critical_batch", "lr_star_by_batch"):
            if key in law:
                lines.append(f"- {key}: {law[key]}")
    else:
        lines.append("- no law was exported")
    return [*lines, ""]


def validate_section(report: dict[str, Any] | None, one_device: str | None) -> list[str]:
    """What `tuner validate` said on one device, and its accumulation proof."""
    lines = ["## `tuner validate` on one device", ""]
    if one_device:
        lines.append(f"- without --accumulation: {one_device}")
    if report is None:
        return [*lines, "- --accumulation 2: no report", ""]
    for name, check in (report.get("checks") or {}).items():
        verdict = "pass" if check.get("passed") else "FAIL"
        lines.append(f"- --accumulation 2, {name}: {verdict}: {check.get('summary')}")
    return [*lines, ""]


def recommendation_section(recommendation: dict[str, Any] | None) -> list[str]:
    """The exported recommendation's headline fields."""
    lines = ["## Recommendation (`tuner export`)", ""]
    if not recommendation:
        return [*lines, "No recommendation was exported.", ""]
    fit = recommendation.get("fit") or {}
    keys = ("global_batch_size", "lr_rule", "learning_rate", "throughput", "final_loss")
    for key in keys:
        if key in recommendation:
            lines.append(f"- {key}: {recommendation[key]}")
    precision = recommendation.get("precision", fit.get("precision"))
    if precision is not None:
        lines.append(f"- precision: {precision}")
    for key in ("largest_feasible_batch_size", "oom_batch_sizes", "verdict"):
        if key in recommendation:
            lines.append(f"- {key}: {recommendation[key]}")
    return [*lines, ""]


def header(runs: Sequence[Run], attrs: dict[str, Any], facts: argparse.Namespace) -> list[str]:
    """What ran where, when, and how the steps ended."""
    kinds = sorted({run.device_kind for run in runs if run.device_kind})
    versions = attrs.get("versions") or {}
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    interrupted = facts.search_exit not in (None, 0)
    lines = [
        f"# GPU check: {facts.study_name}",
        "",
        f"- date (UTC): {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}",
        f"- device: {', '.join(kinds) or 'unknown'}",
        "- versions: " + (", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or "–"),
        f"- trials: {len(runs)} (" + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ")",
    ]
    if facts.search_seconds is not None:
        lines.append(f"- search: {facts.search_seconds} s, exit code {facts.search_exit}")
    if interrupted:
        lines.append("- the search did not finish (time budget or failure): partial figures")
    if facts.tests_exit is not None:
        lines.append(f"- gpu tests (`pytest -m gpu tests/gpu`): exit code {facts.tests_exit}")
    if facts.total_seconds is not None:
        lines.append(f"- whole check: {facts.total_seconds} s")
    return [*lines, ""]


def summary(
    runs: Sequence[Run],
    attrs: dict[str, Any],
    recommendation: dict[str, Any] | None,
    facts: argparse.Namespace,
) -> str:
    """The whole Markdown summary."""
    sections = [
        header(runs, attrs, facts),
        throughput_section(runs),
        memory_section(runs, facts.memory_limit),
        overhead_section(runs),
        recommendation_section(recommendation),
        cache_section(runs, _runs_of(facts, facts.cache_off_study)),
        sweep_section(_runs_of(facts, facts.sweep_study), _json(facts.sweep_recommendation)),
        validate_section(_json(facts.validate), facts.validate_one_device),
    ]
    return "\n".join(line for section in sections for line in section)


def _runs_of(facts: argparse.Namespace, study_name: str | None) -> list[Run]:
    if not study_name:
        return []
    try:
        return load_runs(facts.storage, study_name)[0]
    except KeyError:  # that stage did not run
        return []


def _json(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Write the summary; exit code 0 (an empty study still gets a summary saying so)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", required=True)
    parser.add_argument("--study-name", required=True)
    parser.add_argument("--recommendation", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--memory-limit", help="the search's --memory-limit, as given")
    parser.add_argument("--search-seconds", type=int)
    parser.add_argument("--search-exit", type=int)
    parser.add_argument("--tests-exit", type=int)
    parser.add_argument("--total-seconds", type=int)
    parser.add_argument("--cache-off-study", help="the study run with the compile cache off")
    parser.add_argument("--sweep-study", help="the --lr-sweep study")
    parser.add_argument("--sweep-recommendation", type=Path, help="its export")
    parser.add_argument("--validate", type=Path, help="tuner validate --accumulation's report")
    parser.add_argument("--validate-one-device", help="what tuner validate said on one device")
    facts = parser.parse_args(argv)
    try:
        runs, attrs = load_runs(facts.storage, facts.study_name)
    except KeyError:  # the search stopped before it created the study
        runs, attrs = [], {}
    recommendation = _json(facts.recommendation)
    facts.output.write_text(summary(runs, attrs, recommendation, facts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
