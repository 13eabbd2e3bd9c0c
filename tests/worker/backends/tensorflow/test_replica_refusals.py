"""What Keras 3's fit under MirroredStrategy cannot take on several replicas (measured with plain
Keras: ragged tensors) is refused with one line saying what to do; one replica, dense numbers and
strings (which tuner builds from one local batch: backends/tensorflow/_symbolic.py) pass
(issue 28)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tuner.core.errors import WorkloadError
from tuner.worker.backends.tensorflow._inputs import refuse_across_replicas
from tuner.worker.sources import DATASETS, Source


def source(x: object) -> Source:
    y = np.ones((4, 1), np.float32)
    return Source(DATASETS, "m:data", train=tf.data.Dataset.from_tensor_slices((x, y)))


def test_strings_on_two_replicas_pass() -> None:
    text = source(np.array(["a good film", "a bad plot", "fine", "awful"]))
    assert refuse_across_replicas(text, 2) is None


def test_ragged_tensors_on_two_replicas_are_refused() -> None:
    ragged = source(tf.ragged.constant([[1, 2], [3], [4, 5, 6], [7]]))
    with pytest.raises(WorkloadError, match=r"ragged tensors, .* pad them in the data"):
        refuse_across_replicas(ragged, 2)


def test_dense_numbers_pass() -> None:
    assert refuse_across_replicas(source(np.zeros((4, 3), np.float32)), 2) is None
