"""``tuner lr-find``: the range test, and the ``base_lr`` it suggests."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from tuner.cli.errors import guard
from tuner.cli.options import parsed, takes, write_json
from tuner.console.logs import say_info
from tuner.console.pages import LineView, out
from tuner.core.errors import TunerError
from tuner.driver.lr_find import LrFindOptions


@takes("lr-find")
def lr_find(**flags: Any) -> None:
    """Find a base learning rate: train at a rate growing from --min-lr to --max-lr and suggest
    the one where the loss falls fastest (a range test)."""
    guard(lambda: _lr_find(parsed(LrFindOptions, flags)))


def _lr_find(options: LrFindOptions) -> None:
    """Run the test; print the suggestion and the line for the spec; write what was asked."""
    from tuner.driver.lr_find import find_lr

    report = find_lr(options, LineView())
    if options.output is not None:
        write_json(options.output, report, "report")
    if options.plot is not None:
        _plot(report, options.plot)
    print_finding(report)
    if report["suggestion"] is None:
        raise TunerError(f"no learning rate to suggest: {report['reason']}")


def print_finding(report: dict[str, Any]) -> None:
    """The suggestion, what it rests on, and how to use it."""
    say = partial(out.print, highlight=False, markup=False)
    run = f"{report['steps_run']} of {report['planned_steps']} steps"
    diverged = report["diverged_lr"]
    end = f"diverged at lr {diverged:.3g}" if diverged is not None else "did not diverge"
    say(
        f"Range test at global batch {report['global_batch_size']} on "
        f"{report['num_replicas']} replicas ({report['backend']}): {run}, {end}; "
        f"lowest smoothed loss at lr {_rate(report['min_loss_lr'])}."
    )
    suggestion = report["suggestion"]
    if suggestion is None:
        return
    say(
        f"Suggested base_lr: {suggestion:.2g} (the smoothed loss falls fastest there: "
        f"{report['slope_per_decade']:.3g} per decade of rate)."
    )
    say(
        f"Put it under [search] in your spec:  {report['spec_line']}\n"
        f"or pass it to the search:            tuner search --base-lr {suggestion:.2g}"
    )


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _plot(report: dict[str, Any], path: Path) -> None:
    from tuner.views.lr_find_figure import lr_find_figure, write_figure
    from tuner.views.report import is_missing_renderer

    try:
        write_figure(lr_find_figure(report), path)
    except Exception as exc:
        if isinstance(exc, TunerError) or not is_missing_renderer(exc):
            raise
        raise TunerError(
            f"--plot {path}: PNG export needs Chrome or Chromium for Kaleido (apt install "
            "chromium, or set BROWSER_PATH); an .html figure needs neither"
        ) from None
    say_info(f"figure written to {path}")
