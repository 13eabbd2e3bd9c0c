"""The verdict on replicas: the speedup over one device with its 95 % interval, and one plain
sentence that says what it means.

Every "is A faster than B" in the sentence (the replicas over one device, the pick over a close
call) is read one way, from the ratio's interval (:func:`compared`). The baseline is compared
like with like, at the chosen configuration's precision (:func:`baseline_at`): a mixed-precision
pick's speedup is the replicas' gain, not the 16-bit one's too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tuner.core.configurations import DEFAULT_PRECISION, PRECISION, throughput_ci
from tuner.core.options import named
from tuner.core.recommend import DEFAULT_TIE_MARGIN, GOODPUT, POLICY, TIME_TO_TARGET
from tuner.core.recommend._ties import CloseCall
from tuner.core.stats import Interval, ratio_interval


@dataclass(frozen=True)
class Speedup:
    """The speedup over one device and the scaling efficiency, with their intervals, or why
    they are unknown (``why``) or have no interval (``why_no_interval``)."""

    replicas: int
    baseline_throughput: float | None
    speedup: float | None = None
    interval: Interval | None = None
    why: str = ""
    why_no_interval: str = ""
    unit: str = "device"
    """What the baseline ran on and ``replicas`` counts: ``device``, or ``host`` for a gang."""

    @property
    def efficiency(self) -> float | None:
        """Speedup per replica (1.0 is ideal)."""
        return None if self.speedup is None else self.speedup / self.replicas

    def fields(self) -> dict[str, Any]:
        ci = self.interval
        return {
            "baseline_throughput": self.baseline_throughput,
            "speedup_vs_single_device": self.speedup,  # a gang's: over one host (said)
            **({"speedup_over": "one host"} if self.unit == "host" else {}),
            "scaling_efficiency": self.efficiency,
            "speedup_ci": None if ci is None else ci.as_list(),
            "scaling_efficiency_ci": (
                None if ci is None else [ci.low / self.replicas, ci.high / self.replicas]
            ),
        }


def baseline_key(
    baselines: dict[str, dict[str, Any]] | None, signature: str, precision: str, first: str
) -> str:
    """Where the baseline at ``precision`` goes in the study attr ``baselines``: under the device
    signature for the spec's ``first`` precision (as a study of one precision always stored it),
    else under ``"<signature>, <precision>"``, the first too when the signature's key holds
    another precision's: one precision's record never replaces another's."""
    held = (baselines or {}).get(signature)
    if precision == first and (held is None or baseline_precision(held) == precision):
        return signature
    return _precision_key(signature, precision)


def _precision_key(signature: str, precision: str) -> str:
    return f"{signature}, {precision}"


def baseline_precision(record: dict[str, Any]) -> str:
    """The precision a stored baseline ran at (a record stored before baselines named theirs
    ran at :data:`~tuner.core.configurations.DEFAULT_PRECISION`)."""
    return str(record.get(PRECISION) or DEFAULT_PRECISION)


def baseline_at(
    baselines: dict[str, dict[str, Any]] | None, signature: str, precision: str
) -> dict[str, Any] | None:
    """The study's single-device baseline on ``signature``'s devices at ``precision``, or
    ``None``."""
    stored = baselines or {}
    for key in (signature, _precision_key(signature, precision)):
        record = stored.get(key)
        if isinstance(record, dict) and baseline_precision(record) == precision:
            return record
    return None


def measure_speedup(
    throughput: float,
    chosen_ci: Interval | None,
    replicas: int,
    baseline: dict[str, Any] | None,
    *,
    other_model: bool = False,
    precision: str = DEFAULT_PRECISION,
) -> Speedup:
    """The chosen configuration's speedup over ``baseline`` (``None``: none at its precision).
    ``other_model``: the baseline trained another model configuration (a hypermodel's
    defaults): the throughputs are not comparable."""
    base = (baseline or {}).get("throughput")
    hosts = int((baseline or {}).get("hosts") or 1)
    if hosts > 1:  # a gang's baseline is one host, at the gang's batch per device
        one_host = {**(baseline or {}), "hosts": 1}
        speedup = measure_speedup(
            throughput, chosen_ci, hosts, one_host, other_model=other_model, precision=precision
        )
        return replace(speedup, unit="host")
    if replicas < 2:
        return Speedup(replicas, None, why="it trains on one device, so there is no speedup")
    if other_model:
        return Speedup(replicas, None, why="the baseline trained another model configuration")
    if not isinstance(base, int | float) or base <= 0:
        why = "the study has no single-device baseline (--no-baseline, or it failed)"
        if precision != DEFAULT_PRECISION:  # e.g. a study from before baselines per precision
            why = (
                f"the study has no single-device baseline at {precision} (--no-baseline, it "
                "failed, or the study predates baselines per precision)"
            )
        return Speedup(replicas, None, why=why)
    base_ci = throughput_ci(baseline or {})
    interval = ratio_interval(throughput, chosen_ci, float(base), base_ci)
    sides = {"the chosen configuration": chosen_ci, "the baseline": base_ci}
    missing = " and ".join(name for name, ci in sides.items() if ci is None)
    why_no = f"{missing} ran once without window rates" if missing else "an interval reaches 0"
    return Speedup(replicas, float(base), throughput / base, interval, why_no_interval=why_no)


FASTER, SLOWER, NOT_DISTINGUISHABLE = "faster", "slower", "not distinguishable"


def compared(interval: Interval | None) -> str:
    """ "Is A faster than B" from the 95 % interval of A's value over B's: :data:`FASTER` when
    it lies above 1, :data:`SLOWER` below, else (or without one) :data:`NOT_DISTINGUISHABLE`."""
    if interval is not None and interval.low > 1:
        return FASTER
    if interval is not None and interval.high < 1:
        return SLOWER
    return NOT_DISTINGUISHABLE


def verdict(
    speedup: Speedup,
    tied_with: Sequence[int] = (),
    batch: int | None = None,
    *,
    same_batch: Sequence[int] = (),
    margin: float = DEFAULT_TIE_MARGIN,
    close: Sequence[CloseCall] = (),
    policy: str = POLICY,
) -> str:
    """One plain sentence: what the replicas are worth, the tie if any (``same_batch``: those at
    the pick's computation, which the loss decided), and each close call."""
    clause = _replicas_clause(speedup)
    sentence = clause[:1].upper() + clause[1:]
    others = [n for n in tied_with if n not in same_batch]
    if others:
        names = _numbers(others)
        picked = "the smallest global batch" + (f" ({batch})" if batch is not None else "")
        sentence += (
            f"; {names} {'is' if len(others) == 1 else 'are'} within {margin * 100:g} % of the "
            f"best {_measure(policy)} (practically equal), so {picked} was picked"
        )
    if same_batch:
        at = f" at batch {batch}" if batch is not None else ""
        sentence += (
            f"; {_numbers(same_batch)} {'runs' if len(same_batch) == 1 else 'run'} the same "
            f"computation{at} with another learning rate (a throughput difference is noise), "
            "so the lower final loss was picked"
        )
    for call in close:
        sentence += "; " + close_call_clause(call, batch, policy)
    return sentence


def _measure(policy: str) -> str:
    return {GOODPUT: "goodput", TIME_TO_TARGET: "time to target"}.get(policy, "throughput")


def close_call_clause(call: CloseCall, batch: int | None, policy: str = POLICY) -> str:
    """``batch 128 and batch 64 (trial 3) are not distinguishable in throughput (1.98×, 95 % CI
    0.93–4.22); more repeats would settle it (--max-repeats above 3)``, in :func:`compared`'s
    words."""
    pick = f"batch {batch}" if batch is not None else "the pick"
    rival = f"batch {call.batch} (trial {call.number})"
    if call.batch == batch:
        pick, rival = "the pick", f"trial {call.number}"
    ratio = f"{call.ratio:.2f}×"
    if call.interval is None:
        ratio += ", no interval: one of them ran once with too few windows"
    else:
        ratio += f", 95 % CI {call.interval.low:.2f}–{call.interval.high:.2f}"
    word = compared(call.interval)
    if word == NOT_DISTINGUISHABLE:
        text = f"{pick} and {rival} are {word} in {_measure(policy)} ({ratio})"
        more = f"{named('max_repeats')} above {call.runs}"
        return f"{text}; more repeats would settle it ({more})"
    better = "has the higher goodput" if policy == GOODPUT else f"is {word}"
    if policy == TIME_TO_TARGET:
        better = "reaches the target sooner" if word == FASTER else "reaches the target later"
    elif policy == GOODPUT and word == SLOWER:
        better = "has the lower goodput"
    return f"{pick} {better} than {rival} ({ratio})"


def _replicas_clause(s: Speedup) -> str:
    """What the replicas (a gang: the hosts) are worth over one device (one host)."""
    if s.speedup is None:
        return f"the speedup over one {s.unit} is unknown: {s.why}"
    hosts = s.unit == "host"
    who, one = f"{s.replicas} {'hosts' if hosts else 'replicas'}", f"one {s.unit}"
    single = "one" if hosts else "1"
    ratio, percent = f"{s.speedup:.2f}×", f"{100 * (s.efficiency or 0):.0f} %"
    efficiency = f"{percent} efficiency" if hosts else f"scaling efficiency {percent}"
    ci = s.interval
    if ci is None:
        return (
            f"{who} measured {ratio} {one}, {efficiency}, with no interval "
            f"({s.why_no_interval}): one measurement can rest on noise"
        )
    band = f"95 % CI {ci.low:.2f}–{ci.high:.2f}"
    word = compared(ci)
    if word == SLOWER:
        return f"{who} are slower than {single} here ({ratio}, {band}): train on {one}"
    if word == FASTER:
        return f"{who} give {ratio} {one} ({band}), {efficiency}"
    return f"{who} are no faster than {single} within the noise ({ratio}, {band})"


def _numbers(numbers: Sequence[int]) -> str:
    """``trial 3`` / ``trials 3 and 5`` / ``trials 3, 5 and 7``."""
    shown = [str(n) for n in sorted(numbers)]
    if len(shown) == 1:
        return f"trial {shown[0]}"
    return f"trials {', '.join(shown[:-1])} and {shown[-1]}"
