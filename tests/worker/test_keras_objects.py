"""The spec's loss and optimizer in Keras's serialized form, inside the child (issue 45, item 6):
deserialized by Keras (the optimizer at the rule's rate, whatever its config says), a bad one one
line at the workload check naming the key and what Keras said; and the check's warning when a
crossentropy that expects probabilities is given logits — KerasTuner's custom-training guide's
model, whose last Dense has no softmax, with the plain name."""

from __future__ import annotations

from typing import Any

import keras
import pytest
from child_requests import inspect_request

from tuner.core.errors import WorkloadError
from tuner.worker.check import check_workload
from tuner.worker.workload import make_loss, make_optimizer

LOGITS = "workloads.custom_training_logits"
FROM_LOGITS = {"class_name": "SparseCategoricalCrossentropy", "config": {"from_logits": True}}
PLAIN = "sparse_categorical_crossentropy"


def logits_check(loss: Any, optimizer: Any = "adam") -> dict[str, Any]:
    return check_workload(
        inspect_request(
            model=f"{LOGITS}:build_model", data=f"{LOGITS}:load_data", loss=loss,
            optimizer=optimizer,
        )
    )  # fmt: skip


def test_a_serialized_optimizer_keeps_its_settings_at_the_rules_learning_rate() -> None:
    optimizer = make_optimizer(
        {"class_name": "Adam", "config": {"beta_1": 0.8, "learning_rate": 5}}, 2e-3
    )
    assert type(optimizer) is keras.optimizers.Adam
    assert float(optimizer.beta_1) == pytest.approx(0.8)
    assert float(optimizer.learning_rate) == pytest.approx(2e-3)


def test_a_serialized_loss_is_the_object_keras_deserializes_and_a_name_stays_a_name() -> None:
    loss = make_loss(FROM_LOGITS)
    assert isinstance(loss, keras.losses.SparseCategoricalCrossentropy)
    assert loss.get_config()["from_logits"] is True
    assert make_loss(PLAIN) == PLAIN


@pytest.mark.parametrize(
    ("role", "value", "line"),
    [
        (
            "loss",
            {"class_name": "SparseCategoricalCrossentropie", "config": {"from_logits": True}},
            '[workload] loss {class_name = "SparseCategoricalCrossentropie", config = '
            "{from_logits = true}}: Keras has no loss class 'SparseCategoricalCrossentropie'; "
            "did you mean 'SparseCategoricalCrossentropy'?",
        ),
        (
            "loss",
            {"class_name": "SparseCategoricalCrossentropy", "config": {"from_logit": True}},
            '[workload] loss {class_name = "SparseCategoricalCrossentropy", config = '
            "{from_logit = true}}: Keras says: SparseCategoricalCrossentropy.__init__() got an "
            "unexpected keyword argument 'from_logit'",
        ),
        (
            "optimizer",
            {"class_name": "Adam", "config": {"beta1": 0.8}},
            '[workload] optimizer {class_name = "Adam", config = {beta1 = 0.8}}: Keras says: '
            "Argument(s) not recognized: {'beta1': 0.8}",
        ),
    ],
)
def test_a_bad_serialized_object_is_one_line_at_the_check(role: str, value: Any, line: str) -> None:
    given = {"loss": FROM_LOGITS, role: value}
    with pytest.raises(WorkloadError) as raised:
        logits_check(**given)
    assert str(raised.value) == line


def test_logits_under_the_plain_name_are_warned_of_once_with_the_fix() -> None:
    warning = logits_check(PLAIN)["loss_warning"]
    assert warning.startswith(
        "the loss 'sparse_categorical_crossentropy' expects probabilities, but the model's "
        "outputs on a sample batch are not (values from "
    )
    assert warning.endswith(
        'say from_logits = true: [workload] loss = {class_name = "SparseCategoricalCrossentropy",'
        " config = {from_logits = true}}"
    )


def test_logits_with_from_logits_are_not_warned_of_and_the_check_describes_the_loss_as_given() -> (
    None
):
    result = logits_check(FROM_LOGITS)
    assert "loss_warning" not in result
    assert result["compile"]["loss"] == FROM_LOGITS  # what the export's compile.loss says
