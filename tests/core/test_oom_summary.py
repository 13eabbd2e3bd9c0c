"""``oom.summary`` on TensorFlow's real messages: the line that names the op and the shapes.

The texts are ``str(exc)`` captured from TensorFlow 2.21 / Keras 3 (stack frames shortened): a
model whose training-time output has twice the rows of its labels, fitted on two CPU replicas
under MirroredStrategy (each replica's error, then TensorFlow's counts) and evaluated on one
device, and a hidden output width that does not broadcast against the labels.
"""

from __future__ import annotations

import pytest

from tuner.core.oom import summary

_FRAMES = (
    '  File "/usr/lib/python3.11/threading.py", line 1002, in _bootstrap\n\n'
    '  File "/site-packages/keras/src/trainers/trainer.py", line 419, in _compute_loss\n\n'
    '  File "/site-packages/keras/src/backend/tensorflow/nn.py", line 1438, in '
    "sparse_categorical_crossentropy\n\n"
)
_SPARSE_NODE = "compile_loss/sparse_categorical_crossentropy/SparseSoftmaxCrossEntropyWithLogits"

TWO_REPLICAS = (
    "Graph execution error:\n\n"
    f"Detected at node replica_1/{_SPARSE_NODE}/SparseSoftmaxCrossEntropyWithLogits defined at "
    "(most recent call last):\n"
    f"{_FRAMES}"
    f"Detected at node replica_1/{_SPARSE_NODE}/SparseSoftmaxCrossEntropyWithLogits defined at "
    "(most recent call last):\n"
    f"{_FRAMES}"
    "2 root error(s) found.\n"
    "  (0) INVALID_ARGUMENT:  logits and labels must have the same first dimension, got logits "
    "shape [64,10] and labels shape [32]\n"
    f"\t [[{{{{node replica_1/{_SPARSE_NODE}/SparseSoftmaxCrossEntropyWithLogits}}}}]]\n"
    "\t [[StatefulPartitionedCall/replica_1/div_no_nan/_4]]\n"
    "  (1) INVALID_ARGUMENT:  logits and labels must have the same first dimension, got logits "
    "shape [64,10] and labels shape [32]\n"
    f"\t [[{{{{node replica_1/{_SPARSE_NODE}/SparseSoftmaxCrossEntropyWithLogits}}}}]]\n"
    "0 successful operations.\n"
    "0 derived errors ignored. [Op:__inference_multi_step_on_iterator_897]"
)

ONE_DEVICE = (
    "Graph execution error:\n\n"
    f"Detected at node {_SPARSE_NODE}/SparseSoftmaxCrossEntropyWithLogits defined at (most "
    "recent call last):\n"
    f"{_FRAMES}"
    "logits and labels must have the same first dimension, got logits shape [16,10] and labels "
    "shape [8]\n"
    f"\t [[{{{{node {_SPARSE_NODE}/SparseSoftmaxCrossEntropyWithLogits}}}}]] "
    "[Op:__inference_multi_step_on_iterator_1212]"
)

BROADCAST = (
    "Graph execution error:\n\n"
    "Detected at node compile_loss/mse/sub defined at (most recent call last):\n"
    f"{_FRAMES}"
    "Incompatible shapes: [32,3] vs. [32,10]\n"
    "\t [[{{node compile_loss/mse/sub}}]] [Op:__inference_multi_step_on_iterator_1512]"
)


@pytest.mark.parametrize(
    ("message", "line"),
    [
        (
            TWO_REPLICAS,
            "logits and labels must have the same first dimension, got logits shape [64,10] and "
            "labels shape [32]",
        ),
        (
            ONE_DEVICE,
            "logits and labels must have the same first dimension, got logits shape [16,10] and "
            "labels shape [8]",
        ),
        (BROADCAST, "Incompatible shapes: [32,3] vs. [32,10]"),
    ],
    ids=["two-replicas", "one-device", "broadcast"],
)
def test_summary_keeps_the_line_that_names_the_op_and_the_shapes(message: str, line: str) -> None:
    assert summary(message) == line


def test_a_replica_cancelled_by_another_does_not_hide_the_real_error() -> None:
    message = (
        "Graph execution error:\n\n2 root error(s) found.\n"
        "  (0) CANCELLED:  Function was cancelled before it was started\n"
        "  (1) INVALID_ARGUMENT:  Incompatible shapes: [32,1] vs. [32,10]\n"
        "\t [[{{node compile_loss/mse/sub}}]]\n"
        "0 successful operations.\n1 derived errors ignored."
    )
    assert summary(message) == "Incompatible shapes: [32,1] vs. [32,10]"


def test_an_out_of_memory_replica_error_is_still_the_summary() -> None:
    message = (
        "Graph execution error:\n\n2 root error(s) found.\n"
        "  (0) RESOURCE_EXHAUSTED:  OOM when allocating tensor with shape[4096,8192] and type "
        "float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator mklcpu\n"
        "0 successful operations.\n0 derived errors ignored."
    )
    assert summary(message).startswith("OOM when allocating tensor with shape[4096,8192]")
