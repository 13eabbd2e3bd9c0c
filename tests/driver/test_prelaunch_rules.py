"""The pre-launch rules (:mod:`tuner.driver.trial.prelaunch`): one ordered list, walked in one
place, in the order docs/design/architecture.md draws ("One trial, in order"). What each rule
decides is pinned by the driver tests with a fake child (same training, the adaptive sweep,
out-of-memory implied, accumulation)."""

from __future__ import annotations

import re
from pathlib import Path

from tuner.core.outcome import TrialOutcome
from tuner.driver.trial.prelaunch import RULES, Point, Rule, before_launch

PAGE = Path(__file__).resolve().parents[2] / "docs" / "design" / "architecture.md"
ORDER = ("same-training", "bracketed", "oom-implied", "batch-failed")
"""The documented order: a trial trained alike is never pruned; ``bracketed`` before
``oom-implied`` (a batch reached only by accumulation skips its sweep rates too)."""


def test_the_rules_are_asked_in_the_documented_order() -> None:
    assert tuple(rule.name for rule in RULES) == ORDER


def test_the_architecture_page_draws_the_same_order() -> None:
    section = PAGE.read_text().split("## One trial, in order", 1)[1].split("\n## ", 1)[0]
    drawn = re.findall(r"^\s+\d\. ([\w-]+)", section, flags=re.M)
    assert tuple(drawn) == ORDER


def test_only_same_training_is_final() -> None:
    # A final outcome skips the start line, accumulation and racing's runs: only a same_as trial.
    assert [rule.name for rule in RULES if rule.final] == ["same-training"]
    assert all(rule.question.endswith("?") and rule.gives for rule in RULES)


def _rule(name: str, answer: TrialOutcome | None, asked: list[str]) -> Rule:
    def decide(point: Point) -> TrialOutcome | None:
        asked.append(name)
        return answer

    return Rule(name, f"{name}?", "-", decide)


def test_the_first_rule_that_answers_decides_and_the_rest_are_not_asked() -> None:
    asked: list[str] = []
    pruned = TrialOutcome("bracketed", error="why")
    rules = [
        _rule("a", None, asked),
        _rule("b", pruned, asked),
        _rule("c", TrialOutcome("oom-implied"), asked),
    ]
    decided = before_launch(None, rules)  # type: ignore[arg-type]  # the fakes read no point
    assert decided is not None and decided.rule is rules[1] and decided.outcome is pruned
    assert asked == ["a", "b"]


def test_no_rule_answering_means_the_trial_is_trained() -> None:
    asked: list[str] = []
    rules = [_rule("a", None, asked), _rule("b", None, asked)]
    assert before_launch(None, rules) is None  # type: ignore[arg-type]
    assert asked == ["a", "b"]
