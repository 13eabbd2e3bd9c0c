"""The study note shown by optuna-dashboard: Markdown, from the same rows as the terminal tables
(pure). Every text from the study is escaped (:func:`literal`): ``[x](y)`` is not a link."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import infeasible_batch_sizes, unique_trials
from tuner.views.law_figure import LAW_PLOT, law_text
from tuner.views.recommendation import tie_text
from tuner.views.runs import representatives, run_numbers
from tuner.views.summary import (
    TRIAL_COLUMNS,
    environment_rows,
    recommendation_rows,
    run_rows,
    trial_rows,
)
from tuner.views.target_data import has_target

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]<>|~$&])")
"""The characters Markdown (GFM, and math) can read as syntax inside a line; a backslash shows
them as themselves (``#``, ``+``, ``-`` act only at a line's start, which user text never is)."""


def literal(text: str) -> str:
    """``text`` as Markdown that renders exactly as ``text``, on one line."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", " ".join(text.splitlines()))


def code(text: str) -> str:
    """``text`` as an inline code span, which Markdown shows literally: fenced by one backtick
    more than the longest run inside it, padded where it starts or ends with a backtick (or
    with a space at both ends, which Markdown would strip)."""
    text = " ".join(text.splitlines())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    spaced = text[:1] == text[-1:] == " " and bool(text.strip())  # Markdown strips one each
    pad = " " if "`" in (text[:1], text[-1:]) or spaced else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(literal(c) or " " for c in row) + " |" for row in [headers, *rows]]
    lines.insert(1, "|" + "|".join("---" for _ in headers) + "|")
    return "\n".join(lines)


PARETO_LINK = "./#user-defined-plot:pareto"
"""tuner's Pareto plot on the History page, with the loss tolerance and the pick."""
PLOTS_LINK = "./#user-defined-plot:throughput-vs-batch"
"""Where the note links for tuner's plots: the study's History page, at the first plot's element
(optuna-dashboard places stored plots after its own, and tuner cannot move them up)."""


def trials_markdown(unique: Sequence[FrozenTrial], trials: Sequence[FrozenTrial]) -> str:
    """The trials table, each representative followed by its runs."""
    ordered = sorted(unique, key=lambda t: t.number)  # trial_rows' order
    rows = []
    for trial, row in zip(ordered, trial_rows(ordered, note_width=80, every=trials), strict=True):
        rows += [row, *run_rows(trial, trials)]  # its runs listed under the representative
    return markdown_table([header for header, _ in TRIAL_COLUMNS], rows)


def best_trials_text(rec: dict[str, Any], runs: Sequence[int] = ()) -> str:
    """Why optuna-dashboard's "Best Trials" need not hold the pick, in one sentence with the
    tolerance and the candidates it makes equal; ``runs``: the trials the pick's configuration
    ran as, each of which Optuna ranks on its own."""
    pick = rec["trial_number"]
    tolerance = rec.get("loss_tolerance")
    within = "" if tolerance is None else f" within {tolerance * 100:.2g} % of the best"
    candidates = ", ".join(f"#{n}" for n in rec.get("candidates") or ())
    equal = f" ({candidates})" if candidates else ""
    listed = ", ".join(f"#{n}" for n in runs)
    each = f" (#{pick}'s are {listed})" if len(runs) > 1 else ""
    return (
        f"**Why #{pick} may not be in optuna-dashboard's Best Trials:** those are the Pareto "
        f"front of every stored run's final loss and throughput, earlier runs too{each}, "
        "which knows no tolerance; "
        f"tuner counts final losses{within} as equal{equal} and chooses among them by "
        f"throughput, as [tuner's Pareto plot]({PARETO_LINK}) draws."
    )


def law_paragraph(rec: dict[str, Any]) -> str:
    """The measured learning-rate law in words, linking to its plot."""
    text = f"**Learning-rate law** ([lr* against the batch](./#user-defined-plot:{LAW_PLOT})): "
    text += literal(law_text(rec["lr_law"])) + "."
    if rec.get("learning_rate_source") == "lr_law":
        text += (
            f" The recommended rate {rec['learning_rate']:.4g} is the measured lr* at batch "
            f"{rec['global_batch_size']} (trial #{rec['trial_number']} trained at "
            f"{rec.get('trained_learning_rate', float('nan')):.4g})."
        )
    return text


def study_note(
    study_name: str,
    trials: Sequence[FrozenTrial],
    study_attrs: dict[str, Any],
    rec: dict[str, Any] | None,
    written_at: str,
) -> str:
    """The note: the recommendation, feasibility, the trials, then devices and versions."""
    unique = representatives(unique_trials(trials), trials)
    shown = "throughput, final loss and time to target" if has_target(trials, rec) else ""
    shown = shown or "throughput and final loss"
    parts = [
        f"## tuner study {code(study_name)}",
        f"**tuner's plots:** [{shown} vs global batch size]({PLOTS_LINK}), "
        "on this study's History page below optuna-dashboard's own Pareto front (final loss vs "
        "throughput), history, importance and timeline.",
    ]
    if rec is None:
        parts.append("**No trial has completed yet**, so there is no recommendation.")
        largest, oom = None, infeasible_batch_sizes(unique)
    else:  # the recommendation's figures (its device signature), not a recount
        largest, oom = rec["largest_feasible_batch_size"], rec["oom_batch_sizes"]
        parts.append(
            f"**Recommended:** global batch **{rec['global_batch_size']}** "
            f"({rec['per_replica_batch_size']} per replica × {rec['num_replicas']}), "
            f"learning rate **{rec['learning_rate']:.4g}** ({literal(rec['lr_rule'])} rule) — "
            f"{rec['throughput']:,.0f} samples/s at final loss {rec['final_loss']:.5g} "
            f"(trial #{rec['trial_number']})."
        )
        picked = [t for t in trials if t.number == rec["trial_number"]]
        parts.append(best_trials_text(rec, run_numbers(picked[0], trials) if picked else ()))
        if tie_text(rec):
            parts.append(f"**Tie:** {literal(tie_text(rec))}")
        if rec.get("verdict"):
            parts.append(f"**Verdict:** {literal(str(rec['verdict']))}")
        if rec.get("lr_law"):
            parts.append(law_paragraph(rec))
        parts.append(markdown_table(["", "recommendation"], recommendation_rows(rec)))
    parts += [
        f"**Largest feasible global batch:** {largest if largest is not None else 'none yet'}; "
        f"**out of memory:** {', '.join(map(str, oom)) if oom else 'no size in the grid'}.",
        "### Trials (one per grid point; a configuration that ran several times: its runs)",
        trials_markdown(unique, trials),
        "### Devices and versions",
        markdown_table(["", ""], environment_rows(study_attrs, unique)),
        f"*Written by tuner at {written_at}; `tuner export` refreshes it, `tuner report` draws "
        "the same study as an HTML page.*",
    ]
    return "\n\n".join(parts) + "\n"
