"""``tuner report``: one self-contained HTML page (plotly.js inlined: it works offline); with
``--format png`` each plot also rendered by Kaleido, which needs Chrome or Chromium."""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna

from tuner.core.configurations import unique_trials
from tuner.core.errors import ConfigError, PngExportError
from tuner.core.record import decode_study
from tuner.files import atomic_write_text
from tuner.views.batch_figures import study_figures
from tuner.views.law_figure import law_figures
from tuner.views.recommendation import tie_text
from tuner.views.runs import representatives
from tuner.views.summary import (
    STATUS_COLUMN,
    TRIAL_COLUMNS,
    TRIAL_WRAPPING,
    environment_rows,
    recommendation_rows,
    run_rows,
    trial_layout,
    trial_rows,
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.2rem; font-size: 1.25rem; }
table { border-collapse: collapse; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; text-align: left; }
td.right, th.right { text-align: right; }
table.trials { font-size: 0.8rem; }
table.trials th { vertical-align: bottom; }
table.trials th, table.trials td { padding: 0.25rem 0.35rem; }
table.trials td { white-space: nowrap; }
table.trials td.wrap { white-space: normal; min-width: 7em; max-width: 16em; }
table.trials tr.run td { color: #666; font-size: 0.75rem; border-bottom-color: #f0f0f0; }
.status-ok { color: #1b7f3b; } .status-oom, .status-oom-implied { color: #b36b00; }
.status-timeout, .status-crashed, .status-error, .status-interrupted { color: #b00020; }
.status-diverged { color: #8e24aa; } .status-running { color: #00838f; }
.status-dominated, .status-bracketed { color: #3949ab; }
.lead { font-size: 1.1rem; background: #f4f7fb; padding: 0.8rem 1rem; border-radius: 6px; }
.plot { margin: 1rem 0; }
"""


def _table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    aligns: Sequence[str],
    status_column: int | None = None,
    css_class: str = "",
    row_classes: Sequence[str] = (),
) -> str:
    def cell(tag: str, text: str, align: str, extra: str = "") -> str:
        classes = " ".join(c for c in ("right" if align == "right" else "", extra) if c)
        cls = f' class="{classes}"' if classes else ""
        return f"<{tag}{cls}>{html.escape(text)}</{tag}>"

    head = "".join(cell("th", h, a) for h, a in zip(headers, aligns, strict=True))
    body = []
    for number, row in enumerate(rows):
        cells = []
        for i, (text, align) in enumerate(zip(row, aligns, strict=True)):
            extra = f"status-{text}" if i == status_column and text else ""
            extra += " wrap" if css_class and headers[i] in TRIAL_WRAPPING else ""
            cells.append(cell("td", text, align, extra.strip()))
        kind = row_classes[number] if number < len(row_classes) else ""
        body.append(f"<tr{f' class={kind!r}' if kind else ''}>{''.join(cells)}</tr>")
    table = f' class="{css_class}"' if css_class else ""
    return f"<table{table}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def trials_table(
    trials: Sequence[optuna.trial.FrozenTrial], every: Sequence[optuna.trial.FrozenTrial]
) -> str:
    """The trials table as an unlimited terminal shows it, the free text wrapped."""
    ordered = sorted(trials, key=lambda t: t.number)
    rows = trial_rows(ordered, note_width=80, every=every)
    shown = trial_layout(rows, width=10**6).columns
    headers, aligns = zip(*(TRIAL_COLUMNS[i] for i in shown), strict=True)
    table_rows, classes = [], []
    for trial, row in zip(ordered, rows, strict=True):
        runs = run_rows(trial, every)  # its runs listed under the representative
        table_rows += [row, *runs]
        classes += ["", *["run"] * len(runs)]
    cut = [[row[i] for i in shown] for row in table_rows]
    status = shown.index(STATUS_COLUMN) if STATUS_COLUMN in shown else None
    return _table(headers, cut, aligns, status, css_class="trials", row_classes=classes)


def render_html(
    study_name: str,
    trials: Sequence[optuna.trial.FrozenTrial],
    study_attrs: dict[str, Any],
    rec: dict[str, Any] | None,
    figures: dict[str, Any],
    written_at: str,
) -> str:
    """The report page (plotly.js inlined once, before the first plot)."""
    unique = representatives(unique_trials(trials), trials)
    rec_table = verdict = ""
    if rec is None:
        lead = "No trial has completed yet, so there is no recommendation."
    else:
        lead = (
            f"Use global batch <b>{rec['global_batch_size']}</b> "
            f"({rec['per_replica_batch_size']} per replica × {rec['num_replicas']}) with learning "
            f"rate <b>{rec['learning_rate']:.4g}</b> ({html.escape(rec['lr_rule'])} rule): "
            f"{rec['throughput']:,.0f} samples/s at final loss {rec['final_loss']:.5g}."
        )
        tie = tie_text(rec)
        if tie:
            lead += f"<br>{html.escape(tie[:1].upper() + tie[1:])}."
        rec_table = _table(["", "recommendation"], recommendation_rows(rec), ["left", "left"])
        if rec.get("verdict"):
            sentence = html.escape(str(rec["verdict"]))
            verdict = f'<h2>Verdict</h2>\n<p class="lead" id="verdict">{sentence}</p>'
    plots = [
        f'<div class="plot">{figure.to_html(full_html=False, include_plotlyjs=i == 0, div_id=key)}'
        "</div>"
        for i, (key, figure) in enumerate(figures.items())
    ]
    trial_table = trials_table(unique, trials)
    env_table = _table(["", ""], environment_rows(study_attrs, unique), ["left", "left"])
    title = f"tuner report: {html.escape(study_name)}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{_STYLE}</style></head>
<body>
<h1>{title}</h1>
<p class="lead" id="recommendation">{lead}</p>
{rec_table}
<h2>Throughput, loss and batch size</h2>
{"".join(plots)}
<h2>Trials (one per grid point)</h2>
{trial_table}
<h2>Devices and versions</h2>
{env_table}
{verdict}
<p><small>Written by tuner at {html.escape(written_at)}.</small></p>
</body></html>
"""


def write_report(
    study: optuna.Study, rec: dict[str, Any] | None, output: Path, *, png: bool = False
) -> list[Path]:
    """Write the HTML report to ``output`` (with ``png``, also ``<stem>-<plot>.png``); the files
    written. :class:`PngExportError` after writing the HTML when the PNGs cannot be rendered."""
    trials = study.get_trials(deepcopy=False)
    figures = study_figures(trials, rec) | law_figures(rec)
    written_at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    page = render_html(study.study_name, trials, decode_study(study).flat, rec, figures, written_at)
    try:
        atomic_write_text(output, page)
    except OSError as exc:
        raise ConfigError(f"cannot write {output}: {exc.strerror or exc}") from None
    written = [output]
    if png:
        paths = [output.with_name(f"{output.stem}-{graph_id}.png") for graph_id in figures]
        try:
            import plotly.io as pio

            pio.write_images(list(figures.values()), paths, width=1000, height=560)
        except Exception as exc:  # the HTML is written: say why the PNGs are not
            if is_missing_renderer(exc):
                reason = "PNG export needs Chrome or Chromium for Kaleido (apt install chromium, "
                reason += "or set BROWSER_PATH to a Chrome binary)"
            else:
                reason = f"PNG export failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
            raise PngExportError(f"the HTML report is at {output}, but {reason[:300]}") from exc
        written += paths
    return written


def is_missing_renderer(exc: BaseException) -> bool:
    """Whether plotly's image export failed for want of Kaleido or of a browser for it."""
    text = str(exc)
    return "requires Google Chrome" in text or "requires the Kaleido package" in text
