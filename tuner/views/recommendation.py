"""The recommendation as (label, text) rows for every view (pure); a key the recommendation does
not hold (an older tuner's study) shows nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tuner.core.accumulation import cost_text
from tuner.core.devices import hosts_in


def compact(value: float, digits: int = 3) -> str:
    """A number in a few characters: ``16.1k``, ``1.23M``, ``812``, ``0.0123``."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g}{suffix}"
    text = f"{value:.{digits}g}"
    return f"{value:,.0f}" if "e+" in text else text  # 999.9 at 3 digits: not 1e+03


def span_text(span: Sequence[float] | None) -> str:
    """An interval as ``16.1k–17.9k`` (digits enough to tell the ends apart), or ``-``."""
    if span is None:
        return "-"
    low, high = span
    for digits in (3, 4, 5, 6):
        ends = (compact(low, digits), compact(high, digits))
        if ends[0] != ends[1]:
            break
    return f"{ends[0]}–{ends[1]}"


def seconds_text(seconds: float) -> str:
    """A duration in seconds: ``12.3 s``, ``1,234 s``."""
    return f"{seconds:.1f} s" if abs(seconds) < 100 else f"{seconds:,.0f} s"


def percent(fraction: float) -> str:
    """``0.23`` as ``23 %``, ``0.005`` as ``0.5 %``."""
    return f"{fraction * 100:.2g} %" if fraction < 0.1 else f"{fraction * 100:.0f} %"


def _pair(value: Any) -> tuple[float, float] | None:
    """A stored ``[low, high]`` as two numbers, else ``None``."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    if not all(isinstance(v, int | float) for v in value):
        return None
    return float(value[0]), float(value[1])


def answer_text(rec: dict[str, Any]) -> str:
    """The answer in plain words, as a Keras user would write it: ``Use global batch 128 (64 per
    GPU) and Adam(learning_rate=0.002).``"""
    replicas = int(rec.get("num_replicas") or 1)
    batch = f"global batch {rec['global_batch_size']}"
    if replicas > 1:
        devices = [str(d).lower() for d in rec.get("devices") or []]
        unit = "GPU" if devices and all("gpu" in d for d in devices) else "replica"
        hosts = hosts_in(str(rec.get("device_signature") or ""))
        across = f" on {hosts} hosts × {replicas // hosts} {unit}s" if hosts > 1 else ""
        batch += f" ({rec['per_replica_batch_size']} per {unit}{across})"
    optimizer, rate = _optimizer_class(rec), f"{rec['learning_rate']:.6g}"
    steps = (rec.get("accumulation") or {}).get("steps")
    if steps:  # reached only by accumulation: what fit and the optimizer are given
        batch += f" by accumulation (fit's batch_size {rec['global_batch_size'] // steps})"
        rate += f", gradient_accumulation_steps={steps}"
    parts = [batch, f"{optimizer}(learning_rate={rate})" if optimizer else f"learning rate {rate}"]
    precision = str(rec.get("precision") or "float32")
    if precision != "float32":
        parts.append(f"the {precision} dtype policy")
    listed = ", ".join(parts[:-1]) + f"{',' if len(parts) > 2 else ''} and {parts[-1]}"
    return f"Use {listed}."


def _optimizer_class(rec: dict[str, Any]) -> str:
    """The optimizer's class: the exported config's, else the trial's compiled one, or ``""``."""
    block = rec.get("recommended")
    optimizer = (block if isinstance(block, dict) else {}).get("optimizer") or rec.get("optimizer")
    if isinstance(optimizer, dict) and optimizer.get("class_name"):
        return str(optimizer["class_name"])
    named = (rec.get("compile") or {}).get("optimizer_class")
    return named if isinstance(named, str) else ""


def recommendation_rows(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """The recommendation as (label, text) pairs; the ``verdict``, if any, is the last row."""
    rows = [
        (
            "global batch size",
            f"{rec['global_batch_size']} ({rec['per_replica_batch_size']} per "
            f"replica × {rec['num_replicas']})",
        ),
        (
            "learning rate",
            f"{rec['learning_rate']:.4g} (rule {rec['lr_rule']}, base "
            f"{rec['base_lr']:.4g} at batch {rec['base_batch_size']})",
        ),
        *([("precision", precision_text(rec))] if rec.get("precision") else []),
        ("throughput", throughput_text(rec)),
        ("final loss", f"{rec['final_loss']:.5g}"),
        ("largest feasible batch", feasible_text(rec)),
        ("out-of-memory sizes", oom_text(rec)),
        ("trial", f"#{rec['trial_number']} ({rec['policy']})"),
    ]
    optional = [
        ("loss tolerance", tolerance_text(rec)),
        ("tie", tie_text(rec)),
        ("time to target", target_text(rec)),
        ("samples to target", samples_text(rec)),
        ("prediction", prediction_text(rec)),
        ("statistical efficiency", efficiency_text(rec)),
        ("input pipeline", input_text(rec)),
        (f"vs {rec.get('speedup_over') or 'one device'}", speedup_text(rec)),
        ("probe", probe_text(rec)),
        ("accumulation", cost_text(rec)),
        ("note", rec.get("note") or ""),
        ("verdict", str(rec.get("verdict") or "")),
    ]
    return rows + [(label, text) for label, text in optional if text]


def precision_text(rec: dict[str, Any]) -> str:
    """``mixed_bfloat16 (keras.mixed_precision.set_global_policy("mixed_bfloat16") before
    building the model)``; under ``mixed_float16`` also the loss scaling."""
    name = str(rec["precision"])
    text = f'{name} (keras.mixed_precision.set_global_policy("{name}") before building the model'
    if name == "mixed_float16":
        text += "; wrap the optimizer in keras.optimizers.LossScaleOptimizer"
    return text + ")"


def _per_precision(rec: dict[str, Any], key: str, text: str, shown: Callable[[Any], str]) -> str:
    """``text``, and where the by-precision map ``key`` holds other precisions than the
    recommendation's, ``text at float32; <shown(value)> at mixed_bfloat16``."""
    by = rec.get(key)
    if not isinstance(by, dict) or len(by) < 2:
        return text
    rest = "; ".join(f"{shown(v)} at {name}" for name, v in by.items() if name != rec["precision"])
    return f"{text} at {rec['precision']}; {rest}"


def feasible_text(rec: dict[str, Any]) -> str:
    """``1024``, or with several precisions ``1024 at float32; 2048 at mixed_bfloat16``."""
    largest = rec["largest_feasible_batch_size"]
    text = "none in one step" if largest is None else str(largest)
    key = "largest_feasible_batch_size_by_precision"
    return _per_precision(rec, key, text, lambda v: "none" if v is None else str(v))


def oom_text(rec: dict[str, Any]) -> str:
    """The sizes that did not fit (``none``), per precision in a study of several."""
    text = ", ".join(map(str, rec["oom_batch_sizes"])) or "none"
    return _per_precision(
        rec, "oom_batch_sizes_by_precision", text, lambda v: ", ".join(map(str, v)) or "none"
    )


def throughput_text(rec: dict[str, Any]) -> str:
    """``17,216 samples/s, median of 3 runs; 95 % CI 16.1k–17.9k (t over 3 runs)``."""
    text = f"{rec['throughput']:,.0f} samples/s"
    runs = rec.get("runs")
    if isinstance(runs, int):
        text += f", median of {runs} runs" if runs > 1 else ", 1 run"
    span = _pair(rec.get("throughput_ci"))
    if span is not None:
        method = rec.get("throughput_ci_method")
        text += f"; 95 % CI {span_text(span)}" + (f" ({method})" if method else "")
    return text


def tolerance_text(rec: dict[str, Any]) -> str:
    """The loss tolerance applied and whence: ``--tolerance`` or twice the seed spread."""
    tolerance = rec.get("loss_tolerance")
    if not isinstance(tolerance, int | float):
        return ""
    text = f"{percent(tolerance)} above the best final loss"
    source, spread = rec.get("loss_tolerance_source"), rec.get("seed_loss_spread")
    noise = f"2 × {percent(spread)} seed-to-seed spread" if isinstance(spread, float) else ""
    if source == "seed noise":
        return f"{text} (seed noise: {noise or 'measured'}, wider than --tolerance)"
    if source == "--tolerance" and noise:
        return f"{text} (--tolerance; seed noise {noise} is smaller)"
    return f"{text} ({source})" if source else text


def tie_text(rec: dict[str, Any]) -> str:
    """``tied with #5; …``: the candidates within the tie margin, and the rule that picked."""
    tied = rec.get("tied_with") or []
    if not tied:
        return ""
    names = ", ".join(f"#{n}" for n in tied)
    rule = rec.get("tie_rule") or ""
    return f"tied with {names}; {rule}" if rule else f"tied with {names} (practically equal)"


def target_text(rec: dict[str, Any]) -> str:
    """Time to the target loss with its interval."""
    target, seconds = rec.get("target_loss"), rec.get("time_to_target_s")
    if not isinstance(seconds, int | float):
        return ""
    text = seconds_text(seconds) + " of training"
    if isinstance(target, int | float):
        text += f" to validation loss ≤ {target:.4g}"
    span = _pair(rec.get("time_to_target_ci"))
    if span is not None:
        text += f"; 95 % CI {seconds_text(span[0])}–{seconds_text(span[1])}"
    return text + " (compilation and evaluation not counted)"


def samples_text(rec: dict[str, Any]) -> str:
    """Samples to target of the recommendation, then measured vs predicted at each batch."""
    samples = rec.get("samples_to_target")
    text = f"{samples:,}" if isinstance(samples, int) else ""
    per_batch = (rec.get("prediction") or {}).get("per_batch") or []
    pairs = []
    for entry in per_batch:
        batch = entry.get("global_batch_size")
        measured, predicted = entry.get("measured_samples"), entry.get("predicted_samples")
        shown = f"{measured:,.0f}" if isinstance(measured, int | float) else "not reached"
        if isinstance(predicted, int | float):
            shown += f" vs {predicted:,.0f} predicted"
        pairs.append(f"batch {batch}: {shown}")
    if pairs:
        text = (text + "; " if text else "") + "measured at " + ", ".join(pairs)
    return text


def prediction_text(rec: dict[str, Any]) -> str:
    """The batch-size model's fit (McCandlish et al. 2018) and when to trust it."""
    prediction = rec.get("prediction") or {}
    parts = []
    noise = prediction.get("noise_scale")
    if isinstance(noise, int | float):
        parts.append(f"McCandlish et al. 2018 fit with B_noise {noise:,.0f}")
    agreement = prediction.get("agreement")
    if isinstance(agreement, int | float):
        parts.append(f"measured / predicted samples to target, median {agreement:.2f}")
    fastest = prediction.get("fastest_predicted_batch")
    if fastest is not None:
        parts.append(f"fastest predicted global batch {fastest}")
    text = "; ".join(parts)
    trust = prediction.get("trust")
    if trust:
        text = f"{text}. {trust}" if text else str(trust)
    return text


def speedup_text(rec: dict[str, Any]) -> str:
    """The speedup over one device and the scaling efficiency, each with its interval."""
    speedup = rec.get("speedup_vs_single_device")
    if not speedup:
        return ""
    span = _pair(rec.get("speedup_ci"))
    ci = f" (95 % CI {span[0]:.2f}–{span[1]:.2f})" if span else ""
    over = str(rec.get("speedup_over") or "one device")
    base = "single-device" if over == "one device" else over.replace(" ", "-")
    hosts = hosts_in(str(rec.get("device_signature") or ""))
    text = (
        f"{speedup:.2f}×{ci} the {base} baseline ({rec['baseline_throughput']:,.0f} "
        f"samples/s at batch {rec['base_batch_size'] // hosts}); scaling efficiency "
        f"{rec['scaling_efficiency']:.2f}"
    )
    span = _pair(rec.get("scaling_efficiency_ci"))
    return text + (f" ({span[0]:.2f}–{span[1]:.2f})" if span else "")


def probe_text(rec: dict[str, Any]) -> str:
    """What the memory probe found."""
    probe = rec.get("probe")
    if not probe:
        return ""
    return (
        f"largest fitting batch {probe['largest_fitting_batch']}, out of memory at "
        f"{probe['smallest_oom_batch'] or 'none up to the training set'} "
        f"({probe['launches']} launches)"
    )


def input_text(rec: dict[str, Any]) -> str:
    """What the input pipeline delivers alone, and what it means when training keeps up with it."""
    if not rec.get("input_throughput"):
        return ""
    share = rec["throughput"] / rec["input_throughput"]
    alone = f"{rec['input_throughput']:,.0f} samples/s alone; training runs at {share:.0%} of it"
    if not rec.get("input_bound"):
        return f"{alone}: not input-bound"
    return (
        f"{alone}: INPUT-BOUND — a faster pipeline (more parallel reads, cache, prefetch, fewer "
        "Python ops) would raise the throughput, not a different batch"
    )


def efficiency_text(rec: dict[str, Any]) -> str:
    """The noise scale, the critical batch it estimates, efficiency and goodput, in one line."""
    if rec.get("statistical_efficiency") is None:
        return ""
    noise = rec["gradient_noise_scale"]
    return (
        f"gradient noise scale B_noise {noise:,.0f} (critical batch ≈ B_noise = {noise:,.0f}: "
        "the simple noise scale of McCandlish et al. 2018); efficiency "
        f"{rec['statistical_efficiency']:.2f} vs batch {rec['base_batch_size']}, goodput "
        f"{rec['goodput']:,.0f} samples/s"
    )
