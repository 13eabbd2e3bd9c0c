"""Trials across hosts, from the driver's side: rank 0's :class:`Leader` and
:class:`GangRunner`, a follower's :func:`follow` (who is in the gang: :mod:`tuner.core.gang`;
the modules: docs/design/architecture.md, ``driver/gang/``)."""

from __future__ import annotations

from tuner.driver.gang._follower import follow, own_copy
from tuner.driver.gang._hello import hello
from tuner.driver.gang._leader import Leader
from tuner.driver.gang._runner import GangRunner

__all__ = ["GangRunner", "Leader", "follow", "hello", "own_copy"]
