"""The search space and its sampler: the grid of global batch sizes × learning-rate rules, or a
TPE search over a hypermodel's space with them (a joint search)."""

from __future__ import annotations

import warnings
from typing import Any

import optuna
from optuna.samplers import GridSampler

from tuner.core.hyperparams import defaults
from tuner.core.spec import StudySpec


class BatchAscendingGridSampler(GridSampler):
    """``GridSampler`` whose grid is ordered by global batch, so a fresh study tries small sizes
    first and the first out-of-memory prunes every larger size without launching it."""

    def __init__(self, search_space: dict[str, list[Any]], seed: int | None = None) -> None:
        super().__init__(search_space, seed=seed)
        self._all_grids.sort()  # params are sorted by name: (global_batch_size, lr_rule)


def grid_points(spec: StudySpec) -> list[tuple[int, str]]:
    """Every ``(global_batch_size, lr_rule)`` of the spec's grid."""
    return [(b, r) for b in spec.search.global_batch_sizes for r in spec.search.lr_rules]


def make_sampler(spec: StudySpec, hypermodel: dict[str, Any] | None) -> optuna.samplers.BaseSampler:
    """The grid (batch ascending, a hypermodel's defaults as one-value axes), or for a joint
    search multivariate TPE: it handles mixed and conditional spaces (``group=True``) and two
    objectives, and needs far fewer trials than NSGA-II; ``constant_liar`` keeps concurrent
    workers from sampling the same point."""
    search = spec.search
    if search.joint:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(
                multivariate=True,
                group=True,
                constant_liar=True,
                seed=search.seed,
                n_startup_trials=max(2, min(10, search.trials // 3)),
            )
    space: dict[str, list[Any]] = {
        "global_batch_size": list(search.global_batch_sizes),
        "lr_rule": list(search.lr_rules),
    }
    if hypermodel:
        space.update({name: [value] for name, value in defaults(hypermodel["space"]).items()})
    return BatchAscendingGridSampler(space)
