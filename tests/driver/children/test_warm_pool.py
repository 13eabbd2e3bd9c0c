"""The warm-child pool's rules with stand-in spares (real ones: tests/e2e/test_warm_child.py)."""

from __future__ import annotations

import threading

import pytest

from tuner.driver.children import _warm as warm
from tuner.driver.children._warm import Pool


class StandIn:
    def __init__(self, alive: bool = True) -> None:
        self.living = alive
        self.discarded = False

    def alive(self) -> bool:
        return self.living

    def discard(self) -> None:
        self.discarded = True
        self.living = False


def started(pool: Pool, key: str, spare: StandIn) -> StandIn:
    """Have ``pool`` start ``spare`` for ``key`` and wait until its thread has."""
    done = threading.Event()

    def spawn() -> StandIn:
        done.set()
        return spare

    pool.start(key, spawn)
    assert done.wait(10)
    for _ in range(1000):  # stored right after spawn returns, under the lock
        if pool.spare() is spare:
            break
        threading.Event().wait(0.001)
    return spare


def test_a_request_takes_the_spare_started_for_its_key() -> None:
    pool = Pool()
    pool.hold(True)  # a search holds it
    spare = started(pool, "a", StandIn())
    assert pool.take("a") is spare and not spare.discarded
    assert pool.take("a") is None  # taken once


def test_another_key_kills_the_spare_and_gets_none() -> None:
    pool = Pool()
    pool.hold(True)  # a search holds it
    spare = started(pool, "a", StandIn())
    assert pool.take("b") is None
    assert spare.discarded and pool.spare() is None


def test_a_spare_that_died_is_not_handed_over() -> None:
    pool = Pool()
    pool.hold(True)  # a search holds it
    spare = started(pool, "a", StandIn())
    spare.living = False
    assert pool.take("a") is None and spare.discarded


def test_a_new_key_replaces_the_spare_and_release_kills_it() -> None:
    pool = Pool()
    pool.hold(True)  # a search holds it
    first = started(pool, "a", StandIn())
    second = started(pool, "b", StandIn())
    assert first.discarded and pool.spare() is second
    pool.release()
    assert second.discarded and pool.spare() is None


def test_an_order_older_than_a_release_starts_nothing() -> None:
    pool = Pool()
    pool.hold(True)  # a search holds it
    late: list[StandIn] = []

    def spawn_late() -> StandIn:
        late.append(StandIn())
        return late[-1]

    pool.release()  # an order given before this (generation 0) is served after it
    pool._serve_one(0, "b", spawn_late)
    assert late == [] and pool.spare() is None


def test_the_expected_environment_is_used_once() -> None:
    pool = Pool()
    pool.hold(True)  # a search holds it
    pool.expect({"A": "1"})
    assert pool.expected() == {"A": "1"}
    assert pool.expected() is None


@pytest.mark.parametrize(
    ("value", "uses"),
    [(None, {"trials", "check"}), ("1", {"trials", "check"}), ("0", set()), ("off", set()),
     ("trials", {"trials"}), ("check", {"check"}),
     # The timing ``late`` chose before issue 43 is the only one now: it counts as ``1``.
     ("late", {"trials", "check"})],
)  # fmt: skip
def test_the_switch(monkeypatch: pytest.MonkeyPatch, value: str | None, uses: set[str]) -> None:
    if value is None:
        monkeypatch.delenv(warm.WARM_ENV, raising=False)
    else:
        monkeypatch.setenv(warm.WARM_ENV, value)
    assert warm.uses() == uses


def test_no_spare_starts_unless_a_search_holds_the_pool() -> None:
    pool = Pool()
    started: list[int] = []
    pool.start("key", lambda: started.append(1))  # type: ignore[arg-type, func-returns-value]
    assert started == [] and pool.spare() is None  # a lone run or a validation: nothing left


def test_no_spare_is_ordered_after_the_searchs_last_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from child_requests import run_request

    from tuner.driver.children import _spares

    monkeypatch.delenv(warm.WARM_ENV, raising=False)  # both uses, as by default
    request = run_request()
    with warm.spares():
        assert _spares.next_spare(request, {}) is not None  # a run may follow: order one
        warm.last_run(True)  # the grid's last point, no seeds or race to come
        assert _spares.next_spare(request, {}) is None
        warm.last_run(False)
        assert _spares.next_spare(request, {}) is not None
        warm.last_run(True)
    assert warm.POOL.wants_next()  # the search's end forgets it: the next search starts afresh
