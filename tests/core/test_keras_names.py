"""The Keras names tuner ships as data (tuner.core.keras_names) are the installed Keras's: every
name Keras's own ``get`` takes, and no other. On a Keras upgrade that adds or drops one this
fails with the lists to paste."""

from __future__ import annotations

import keras
import pytest
from keras.src import losses as keras_losses
from keras.src import optimizers as keras_optimizers

from tuner.core.keras_names import LOSSES, OPTIMIZER_CLASSES, OPTIMIZERS, nearest


def takes(get, name: str) -> bool:  # type: ignore[no-untyped-def]
    try:
        return get(name) is not None
    except (ValueError, TypeError, KeyError):
        return False


def test_the_optimizer_names_are_keras_own() -> None:
    found = sorted(k for k in keras_optimizers.ALL_OBJECTS_DICT if takes(keras.optimizers.get, k))
    assert list(OPTIMIZERS) == found, f"paste into OPTIMIZER_CLASSES: {found}"


def test_every_optimizer_name_has_its_keras_class() -> None:
    assert sorted(OPTIMIZER_CLASSES) == list(OPTIMIZERS)
    for name, class_name in OPTIMIZER_CLASSES.items():
        assert isinstance(keras.optimizers.get(name), getattr(keras.optimizers, class_name))


def test_the_loss_names_are_keras_own() -> None:
    found = sorted(k for k in keras_losses.ALL_OBJECTS_DICT if takes(keras.losses.get, k))
    assert list(LOSSES) == found, f"paste into LOSSES: {found}"


@pytest.mark.parametrize(
    ("name", "known", "ignore_case", "typo_of"),
    [
        ("adam", OPTIMIZERS, True, None),
        ("Adam", OPTIMIZERS, True, None),  # Keras lowercases an optimizer's class name
        ("adamm", OPTIMIZERS, True, "adam"),
        ("rmsporp", OPTIMIZERS, True, "rmsprop"),
        ("MyOptimizer", OPTIMIZERS, True, None),  # close to none: maybe the user's own
        ("mse", LOSSES, False, None),
        ("Mse", LOSSES, False, "mse"),  # losses are exact
        ("mean_squared_eror", LOSSES, False, "mean_squared_error"),
        ("sparse_categorical_crossentropi", LOSSES, False, "sparse_categorical_crossentropy"),
        ("my_package>focal", LOSSES, False, None),  # a registered custom loss
        ("contrastive_margin", LOSSES, False, None),
    ],
)
def test_a_typo_is_told_from_a_name_of_ones_own(
    name: str, known: tuple[str, ...], ignore_case: bool, typo_of: str | None
) -> None:
    assert nearest(name, known, ignore_case=ignore_case) == typo_of
