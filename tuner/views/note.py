"""The study note shown by optuna-dashboard: Markdown, written from the same rows as the terminal
tables (:mod:`tuner.views.summary`). Pure: trials and attributes in, text out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.recommend import infeasible_batch_sizes, unique_trials
from tuner.views.summary import TRIAL_COLUMNS, environment_rows, recommendation_rows, trial_rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or " "


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [
        "| " + " | ".join(_cell(h) for h in headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def study_note(
    study_name: str,
    trials: Sequence[FrozenTrial],
    study_attrs: dict[str, Any],
    rec: dict[str, Any] | None,
    written_at: str,
) -> str:
    """The note: the recommendation, feasibility, the trials, then devices and versions."""
    unique = unique_trials(trials)
    parts = [f"## tuner study `{study_name}`"]
    if rec is None:
        parts.append("**No trial has completed yet**, so there is no recommendation.")
    else:
        parts.append(
            f"**Recommended:** global batch **{rec['global_batch_size']}** "
            f"({rec['per_replica_batch_size']} per replica × {rec['num_replicas']}), "
            f"learning rate **{rec['learning_rate']:.4g}** ({rec['lr_rule']} rule) — "
            f"{rec['throughput']:,.0f} samples/s at final loss {rec['final_loss']:.5g} "
            f"(trial #{rec['trial_number']})."
        )
        parts.append(markdown_table(["", "recommendation"], recommendation_rows(rec)))
    if rec is not None:  # the recommendation's figures (its device signature), not a recount
        largest, oom = rec["largest_feasible_batch_size"], rec["oom_batch_sizes"]
    else:
        largest, oom = None, infeasible_batch_sizes(unique)
    parts.append(
        f"**Largest feasible global batch:** {largest if largest is not None else 'none yet'}; "
        f"**out of memory:** {', '.join(map(str, oom)) if oom else 'no size in the grid'}."
    )
    parts.append("### Trials (one per grid point)")
    parts.append(markdown_table([h for h, _ in TRIAL_COLUMNS], trial_rows(unique, note_width=80)))
    parts.append("### Devices and versions")
    parts.append(markdown_table(["", ""], environment_rows(study_attrs, unique)))
    parts.append(
        f"*Written by tuner at {written_at}; `tuner export` refreshes it, `tuner report` draws "
        "the same study as an HTML page.*"
    )
    return "\n\n".join(parts) + "\n"
