"""The adaptive LR sweep past its edge (issue 46; ``docs/guide/lr-law.md``): one rate more a log
step further out, queued here, decided by :func:`tuner.core.adaptive_sweep.extension`.

Asked once every trial at the batch has finished, from the stored trials alone: an added rate is
a trial of rule ``sweep-(N+1)/N`` (or ``sweep-0/N`` …), so a resumed study goes on from the rule
furthest out and never adds one twice. Two workers may queue the same rate: the second is then
the same training (time, never correctness). A new adaptive study's ``lr_rule`` choices hold the
extension rules from its first trial on (Optuna refuses choices that change within a study); a
study stored before keeps its choices and is not extended.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState

from tuner.core.adaptive_sweep import Extension, extension
from tuner.core.budget import Ledger, RunKey
from tuner.core.configurations import grid_point
from tuner.core.recommend import batch_points
from tuner.core.record import decode
from tuner.core.scaling import SWEEP_EXTRA, is_sweep, scaled_learning_rate, sweep_extension_rules
from tuner.core.spec import StudySpec
from tuner.core.trials import has_grid_point
from tuner.driver.observer import SearchObserver
from tuner.driver.trial.prelaunch import adaptive
from tuner.storage.guarded import storage_call

RULE_PARAM = "lr_rule"


def extends(spec: StudySpec) -> bool:
    """Whether the study's sweep goes past its edges: an adaptive sweep over a grid (a joint
    search's sampler would pick the extension rules as any other choice)."""
    return adaptive(spec) and not spec.search.grid.joint


def rule_choices(spec: StudySpec, trials: Sequence[FrozenTrial]) -> list[str]:
    """The ``lr_rule`` parameter's choices: the grid's rules, and for a sweep that goes past its
    edges its extension rules after them, unless the study stored ``lr_rule`` with the grid's
    rules alone (stored before; Optuna keeps a parameter's choices for the study's life)."""
    rules = list(spec.search.grid_rules)
    if not extends(spec):
        return rules
    for trial in trials:
        stored = trial.distributions.get(RULE_PARAM)
        if isinstance(stored, CategoricalDistribution):
            if list(stored.choices) == rules:
                return rules
            break
    return [*rules, *sweep_extension_rules(spec.search.sweep.rates)]


def most_extra(spec: StudySpec) -> int:
    """The most rates the sweep can add in one study: :data:`SWEEP_EXTRA` a side at each batch
    and precision (bounds the trial loop's turns)."""
    if not extends(spec):
        return 0
    grid = spec.search.grid
    return 2 * SWEEP_EXTRA * len(grid.global_batch_sizes) * len(grid.precisions)


class SweepExtension:
    """Queues the rates past a sweep's edge for one worker's trial loop (:meth:`queue`, before
    each trial); ``counted`` is told of each queued run (the progress total)."""

    def __init__(
        self,
        study: optuna.Study,
        spec: StudySpec,
        signature: str,
        replicas: int,
        observer: SearchObserver,
        counted: Callable[[int], None],
        ledger: Ledger | None = None,
    ) -> None:
        self._study, self._spec, self._signature = study, spec, signature
        self._replicas, self._observer, self._counted, self._ledger = (
            replicas, observer, counted, ledger,
        )  # fmt: skip
        self._seen: dict[tuple[Any, ...], int] = {}
        """Each batch's trial count when last decided: unchanged, nothing new to decide."""
        self._told: set[tuple[Any, ...]] = set()
        """Batches (with the side) whose stop was already said or counted out of the budget."""

    def queue(self, trials: Sequence[FrozenTrial], reserve: Sequence[RunKey] = ()) -> bool:
        """Queue the next rate past the edge at each batch whose rates have all finished and
        whose best is at an edge; whether any was queued. ``reserve``: the grid's runs left,
        which a ``--budget`` keeps room for before an extra rate."""
        queued = False
        for key, group in _batches(trials).items():
            if self._seen.get(key) == len(group) or not _finished(group, self._spec):
                continue
            self._seen[key] = len(group)
            mine = [t for t in group if decode(t).configuration.device_signature == self._signature]
            found = self._decide(int(key[0]), mine)
            if found is not None and found.rule is not None:
                queued |= self._enqueue(key, mine, found, reserve)
            elif found is not None and (key, found.side) not in self._told:
                self._told.add((key, found.side))
                self._observer.note(
                    f"lr sweep at batch {key[0]}: the best rate is still its "
                    f"{'largest' if found.side == 'above' else 'smallest'} after {found.extra} "
                    f"rates {found.side} the sweep, the most it adds (SWEEP_EXTRA)"
                )
        return queued

    def _decide(self, batch: int, trials: Sequence[FrozenTrial]) -> Extension | None:
        grid = self._spec.search.grid
        rules = {str(grid_point(t)[1]) for t in trials} | set(self._spec.search.grid_rules)
        rates = {
            rule: scaled_learning_rate(rule, grid.base_lr, batch, grid.base_batch_size)
            for rule in rules
            if is_sweep(rule)
        }
        points, worse, _ = batch_points(trials).get(batch, ([], [], ""))
        return extension(points, worse, rates)

    def _enqueue(
        self,
        key: tuple[Any, ...],
        trials: Sequence[FrozenTrial],
        found: Extension,
        reserve: Sequence[RunKey],
    ) -> bool:
        """Queue ``found.rule`` at the batch as its edge trial's parameters with that rule, or
        count it out of the budget; whether it was queued."""
        rule = str(found.rule)
        template = next(
            (
                t
                for t in trials
                if t.params.get(RULE_PARAM) == found.edge
                and rule in getattr(t.distributions.get(RULE_PARAM), "choices", ())
            ),
            None,
        )
        if template is None:  # a study stored before the sweep could go past its edges
            return False
        run = (int(key[0]), self._replicas)
        ledger = self._ledger
        if ledger is not None and not ledger.fits([run], ledger.total_s(reserve))[0]:
            if (key, found.side) not in self._told:
                self._told.add((key, found.side))
                ledger.leave_out("grid", [run])
            return False
        params = {**template.params, RULE_PARAM: rule}
        added = optuna.trial.create_trial(
            state=TrialState.WAITING,
            params=params,
            distributions=template.distributions,
            system_attrs={"fixed_params": params},
        )
        storage_call(self._study, self._study.add_trial, added)
        self._counted(1)
        self._observer.note(
            f"lr sweep at batch {key[0]}: the best rate so far is its "
            f"{'largest' if found.side == 'above' else 'smallest'} ({found.edge}): one rate "
            f"more {found.side} it, {rule} ({found.extra + 1} of at most {SWEEP_EXTRA})"
        )
        return True


def _batches(trials: Sequence[FrozenTrial]) -> dict[tuple[Any, ...], list[FrozenTrial]]:
    """The grid trials by batch (and precision): a trial's grid point without its rule."""
    groups: dict[tuple[Any, ...], list[FrozenTrial]] = {}
    for trial in trials:
        if has_grid_point(trial):
            batch, _, *rest = grid_point(trial)
            groups.setdefault((int(batch), *rest), []).append(trial)
    return groups


def _finished(group: Sequence[FrozenTrial], spec: StudySpec) -> bool:
    """Whether every trial at the batch has finished and each of the grid's rules has one."""
    if any(not t.state.is_finished() for t in group):
        return False
    return set(spec.search.grid_rules) <= {str(grid_point(t)[1]) for t in group}
