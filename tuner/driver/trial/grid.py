"""The search space and its sampler: the grid of global batch sizes × learning-rate rules (×
precisions, when the spec lists several), or TPE over a hypermodel's space with them (joint).

The global batch is an integer parameter on a log scale, so optuna-dashboard orders and spaces
the sizes as numbers; it stays categorical in a joint search (TPE would sample off the grid) and
in a study that already stores it so (Optuna refuses a second kind for one name)."""

from __future__ import annotations

import contextlib
import copy
import itertools
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.samplers import GridSampler
from optuna.trial import FrozenTrial, Trial, TrialState

from tuner.core.adaptive_sweep import visit_rank
from tuner.core.configurations import PRECISION
from tuner.core.hyperparams import defaults
from tuner.core.spec import StudySpec

BATCH_PARAM = "global_batch_size"


class BatchAscendingGridSampler(GridSampler):
    """``GridSampler`` whose grid is ordered by global batch, so a fresh study tries small sizes
    first and the first out-of-memory prunes every larger size without launching it; within a
    batch the fixed rules come first, then an LR sweep's rates from its middle outwards
    (:func:`tuner.core.adaptive_sweep.visit_rank`: the adaptive sweep brackets the best early).

    Its cost per trial stays flat as the study grows (issue 19), picking the same points: it
    remembers each finished trial's grid id (a finished trial never changes), writes a trial's
    two grid attributes in one transaction, and reads a trial's grid id from what it assigned."""

    def __init__(self, search_space: dict[str, list[Any]], seed: int | None = None) -> None:
        super().__init__(search_space, seed=seed)
        # Params are sorted by name: (global_batch_size, lr_rule[, precision]).
        self._all_grids.sort()
        # The order fresh trials visit the grid ids in (trial n takes the n-th): a permutation,
        # so that a grid id keeps meaning the point it meant when the study was stored.
        batch_at, rule_at = self._param_names.index(BATCH_PARAM), self._param_names.index("lr_rule")
        grids = self._all_grids
        self._visit = sorted(
            range(len(grids)),
            key=lambda g: (grids[g][batch_at], visit_rank(str(grids[g][rule_at])), g),
        )
        self._rank = {grid_id: place for place, grid_id in enumerate(self._visit)}
        self._finished: dict[int, int | None] = {}
        """Finished trials' grid ids by trial id (``None``: another grid or no grid id)."""
        self._assigned: dict[int, int] = {}
        """Grid ids of trials this sampler started, by trial id."""
        self._expected: list[FrozenTrial] | None = None
        """The study's trials as the trial loop just read them, for the next trial only."""

    def expect(self, trials: list[FrozenTrial] | None) -> None:
        """Pick the next trial's grid point, and check at its end whether the grid is done, from
        ``trials`` (the study's trials as the caller just read them) instead of reading them
        again: 7 statements a trial; ``None`` after it. A side channel: Optuna calls a sampler
        inside ``ask`` and ``tell``, which take nothing to hand it."""
        self._expected = trials

    def _same_search_space(self, search_space: Any) -> bool:
        # Optuna compares every stored trial's grid with this one, value by value through numpy,
        # after each trial: quadratic in the trials (0.6 s a trial at 400 trials of a 500-size
        # grid). Equal lists say the same at C speed; only a grid that differs (or holds NaN)
        # takes Optuna's own comparison.
        return search_space == self._search_space or super()._same_search_space(search_space)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        # Optuna's choice (see GridSampler.before_trial), with both attributes in one write.
        if "fixed_params" in trial.system_attrs:
            return
        if "grid_id" in trial.system_attrs:  # a retry: its grid point is already chosen
            self._assigned[trial._trial_id] = int(trial.system_attrs["grid_id"])
            return
        place = trial.number - self._added_before(study, trial.number)
        if 0 <= place < self._n_min_trials:
            grid_id = self._visit[place]
            unvisited = self._get_unvisited_grid_ids(study)
            if unvisited and grid_id not in unvisited:
                # A study stored in another visit order (before the LR sweep's, resumed now):
                # the next point in this order that no trial has taken, not one run twice.
                grid_id = min(unvisited, key=self._rank.__getitem__)
        else:
            target = self._get_unvisited_grid_ids(study)
            if not target:  # Optuna re-runs a visited point then (a race between workers)
                return super().before_trial(study, trial)
            grid_id = int(self._rng.rng.choice(target))
        attrs: dict[str, Any] = {"search_space": self._search_space, "grid_id": grid_id}
        for key, value in attrs.items():  # what Optuna's GridSampler writes: two writes
            study._storage.set_trial_system_attr(trial._trial_id, key, value)
        self._assigned[trial._trial_id] = grid_id

    def _added_before(self, study: optuna.Study, number: int) -> int:
        """How many trials numbered below ``number`` were queued outside the grid (the sweep's
        rates past its edge, :mod:`tuner.driver.trial.extend`: fixed parameters, no grid id):
        each took a trial number, so without them trial n would skip the n-th point ahead (a
        batch's fixed rules after the next batch's)."""
        return sum(
            1
            for t in self._trials(study)
            if t.number < number
            and "fixed_params" in t.system_attrs
            and "grid_id" not in t.system_attrs
        )

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        grid_id = self._assigned.get(trial._trial_id)
        if grid_id is not None:  # Optuna's own lookup, but without reading the trial again
            trial = copy.copy(trial)
            trial.system_attrs = {"grid_id": grid_id}
        return super().sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        grid_id = self._assigned.pop(trial._trial_id, None)
        # As Optuna's: stop ``study.optimize``'s own loop once no grid point is left (a caller
        # that runs it without ``n_trials``), from the remembered finished trials: no rescan.
        left = self._get_unvisited_grid_ids(study)
        if not left or (len(left) == 1 and left[0] == grid_id):
            # Outside ``study.optimize`` (tuner's own loop asks and tells) there is no loop to
            # stop, and ``stop`` says so with a RuntimeError: the caller's loop ends itself.
            with contextlib.suppress(RuntimeError):
                study.stop()

    def _get_unvisited_grid_ids(self, study: optuna.Study) -> list[int]:
        # Optuna's rule (unvisited: neither finished nor running; if none, not finished), over
        # the study's trials, with each finished trial's grid id remembered once seen.
        finished, running = set(), set()
        for t in self._trials(study):
            if t._trial_id in self._finished:
                finished.add(self._finished[t._trial_id])
                continue
            grid_id = self._grid_id(t)
            if t.state.is_finished():
                self._finished[t._trial_id] = grid_id
                finished.add(grid_id)
            elif t.state == TrialState.RUNNING:
                running.add(grid_id)
        grids = set(range(self._n_min_trials))
        return list(grids - finished - running or grids - finished)

    def _trials(self, study: optuna.Study) -> list[FrozenTrial]:
        """The trials :meth:`expect` was handed (one trial's pick and end share them), else read."""
        return self._expected if self._expected is not None else study.get_trials(deepcopy=False)

    def _grid_id(self, trial: FrozenTrial) -> int | None:
        """The trial's grid id when it belongs to this grid, else ``None``."""
        attrs = trial.system_attrs
        if "grid_id" in attrs and self._same_search_space(attrs["search_space"]):
            return int(attrs["grid_id"])
        return None


def grid_points(spec: StudySpec) -> list[tuple[Any, ...]]:
    """Every point of the spec's grid: ``(global_batch_size, lr_rule)``, with the precision
    third when the grid crosses several (as :func:`tuner.core.configurations.grid_point`)."""
    return list(itertools.product(*_axes(spec).values()))


def _axes(spec: StudySpec) -> dict[str, list[Any]]:
    """The grid's parameters (sorted by name, as Optuna orders them) and their values."""
    grid = spec.search.grid
    axes: dict[str, list[Any]] = {BATCH_PARAM: list(grid.global_batch_sizes)}
    axes["lr_rule"] = list(spec.search.grid_rules)
    if len(grid.precisions) > 1:  # with one, a study keeps the parameters it always had
        axes[PRECISION] = list(grid.precisions)
    return axes


def make_sampler(spec: StudySpec, hypermodel: dict[str, Any] | None) -> optuna.samplers.BaseSampler:
    """The grid (batch ascending, a hypermodel's defaults as one-value axes), or for a joint
    search multivariate TPE: it handles mixed and conditional spaces (``group=True``) and two
    objectives, and needs far fewer trials than NSGA-II; ``constant_liar`` keeps concurrent
    workers from sampling the same point."""
    search = spec.search
    if search.grid.joint:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(
                multivariate=True,
                group=True,
                constant_liar=True,
                seed=search.run.seed,
                n_startup_trials=max(2, min(10, search.grid.trials // 3)),
            )
    space = _axes(spec)
    if hypermodel:
        space.update({name: [value] for name, value in defaults(hypermodel["space"]).items()})
    return BatchAscendingGridSampler(space)


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
