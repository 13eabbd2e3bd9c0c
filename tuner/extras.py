"""The optional parts of tuner (pip extras) and the modules each one brings: a worker or a CI job
need not carry a web server, plotly and a headless-browser renderer it never uses."""

from __future__ import annotations

import importlib.util

from tuner.core.errors import MissingExtraError

DISTRIBUTION = "mirrortuner"
"""tuner's name on PyPI (PyPI's ``tuner`` is another project); the import name stays ``tuner``."""

EXTRAS: dict[str, tuple[str, ...]] = {
    "dashboard": ("optuna_dashboard", "plotly"),
    "report": ("plotly",),
    "png": ("kaleido",),
}
"""Extra -> the modules that must import for it. ``png`` is part of the ``report`` extra."""


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (none: the extra is installed)."""
    return [module for module in EXTRAS[extra] if not importable(module)]


def require_extra(extra: str, purpose: str) -> None:
    """Raise :class:`MissingExtraError` with the one install line to run when ``extra`` is not
    installed; ``purpose`` says what needed it (``"tuner dashboard"``)."""
    missing = missing_modules(extra)
    if missing:
        name = "report" if extra == "png" else extra  # png is installed with report
        these = " and ".join(missing)
        verb = "is" if len(missing) == 1 else "are"
        raise MissingExtraError(
            f"{purpose} needs {these}, which {verb} not installed: "
            f"pip install '{DISTRIBUTION}[{name}]' (or '{DISTRIBUTION}[all]')"
        )


def importable(module: str) -> bool:
    """Whether ``module`` can be imported here; looks, never imports."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module blocked with sys.modules[name] = None
        return False
