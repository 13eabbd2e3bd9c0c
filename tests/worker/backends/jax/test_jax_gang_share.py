"""A rank's share of the global batches (:mod:`tuner.worker.backends.jax._gang`): every rank's
rows, fed together, make the global batches one host feeds; a child whose JAX devices started
cannot join a gang. The real gang: tests/e2e/test_jax_gang.py."""

from __future__ import annotations

import numpy as np
import pytest
from child_requests import run_request

from tuner.core.devices import DevicePlan
from tuner.core.protocol._requests import GangSeat
from tuner.worker.backends.jax import _gang


def test_every_ranks_rows_make_the_global_batches() -> None:
    x = np.arange(2 * 258).reshape(258, 2)
    batch = (x, {"y": x[:, 0]})
    global_batch, hosts = 128, 2  # 128, 128 and a last batch of 2
    shares = [_gang.Share(rank, hosts) for rank in range(hosts)]
    parts = [share.rows(batch, global_batch) for share in shares]
    local = shares[0].local_batch(global_batch)
    fed = []
    for start in range(0, 258 // hosts, local):  # what Keras feeds step by step, every rank
        fed.append(np.concatenate([part[0][start : start + local] for part in parts]))
    assert np.array_equal(np.concatenate(fed), x)
    assert np.array_equal(parts[1][1]["y"], parts[1][0][:, 0])
    stream = shares[1].batches(iter([(x,)]))
    assert np.array_equal(next(stream)[0], x[129:])
    assert _gang.Share().rows(batch, global_batch) is batch


def test_a_batch_that_does_not_split_over_the_hosts_is_refused() -> None:
    with pytest.raises(ValueError, match="does not split over 4 hosts"):
        _gang.Share(1, 4).local_batch(130)


def test_a_child_whose_devices_started_refuses_to_join(monkeypatch: pytest.MonkeyPatch) -> None:
    from jax._src import xla_bridge

    monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda: True)
    seat = GangSeat(process_id=1, address="127.0.0.1:1", join_timeout_s=1)
    request = run_request(plan=DevicePlan("cpu", 2, backend="jax").across(2), gang=seat)
    with pytest.raises(RuntimeError, match="needs a fresh child"):
        _gang.join(request)
    assert _gang.share(request) == _gang.Share(1, 2)
    _gang.join(run_request())  # no seat: nothing
