"""The search space and its sampler: the grid of global batch sizes × learning-rate rules (×
precisions, when the spec lists several), or a TPE search over a hypermodel's space with them (a
joint search).

The global batch is stored as an integer parameter on a log scale, so optuna-dashboard's
Analytics orders and spaces the sizes as numbers (64 < 128), not as category labels.
:func:`suggest_global_batch` keeps the categorical kind where it must: in a joint search (TPE would
sample sizes off the grid) and in a study whose trials already store it so (Optuna refuses a second
kind for one parameter name)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.samplers import GridSampler
from optuna.trial import FrozenTrial, Trial

from tuner.core.configurations import PRECISION
from tuner.core.hyperparams import defaults
from tuner.core.spec import StudySpec


class BatchAscendingGridSampler(GridSampler):
    """``GridSampler`` whose grid is ordered by global batch, so a fresh study tries small sizes
    first and the first out-of-memory prunes every larger size without launching it."""

    def __init__(self, search_space: dict[str, list[Any]], seed: int | None = None) -> None:
        super().__init__(search_space, seed=seed)
        # Params are sorted by name: (global_batch_size, lr_rule[, precision]).
        self._all_grids.sort()


def searches_precisions(spec: StudySpec) -> bool:
    """Whether precision is an axis of the grid (the spec lists more than one): a study with
    one precision keeps the parameters it always had, ``global_batch_size`` and ``lr_rule``."""
    return len(spec.search.precisions) > 1


def grid_points(spec: StudySpec) -> list[tuple[Any, ...]]:
    """Every point of the spec's grid: ``(global_batch_size, lr_rule)``, with the precision
    third when the grid crosses several (as :func:`tuner.core.configurations.grid_point`)."""
    search = spec.search
    if searches_precisions(spec):
        return [
            (b, r, p)
            for b in search.global_batch_sizes
            for r in search.lr_rules
            for p in search.precisions
        ]
    return [(b, r) for b in search.global_batch_sizes for r in search.lr_rules]


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
    if searches_precisions(spec):
        space[PRECISION] = list(search.precisions)
    if hypermodel:
        space.update({name: [value] for name, value in defaults(hypermodel["space"]).items()})
    return BatchAscendingGridSampler(space)


BATCH_PARAM = "global_batch_size"


def stores_batch_as_category(trials: Iterable[FrozenTrial]) -> bool:
    """Whether a trial of the study stores the global batch as a categorical parameter (tuner
    before issue 16, or a joint search): the study must keep that kind."""
    return any(
        isinstance(trial.distributions.get(BATCH_PARAM), CategoricalDistribution)
        for trial in trials
    )


def suggest_global_batch(trial: Trial, sizes: Sequence[int], *, categorical: bool) -> int:
    """The trial's global batch among ``sizes`` (the sampler picks it): an integer on a log scale
    spanning the sizes, or one of them as a category when ``categorical``."""
    if categorical:
        return int(trial.suggest_categorical(BATCH_PARAM, list(sizes)))
    return trial.suggest_int(BATCH_PARAM, min(sizes), max(sizes), log=True)


def suggest_precision(trial: Trial, precisions: Sequence[str]) -> str:
    """The trial's precision: sampled as the ``precision`` parameter when the grid crosses
    several, else the one precision (no parameter: the study keeps its old parameters)."""
    if len(precisions) > 1:
        return str(trial.suggest_categorical(PRECISION, list(precisions)))
    return precisions[0]
