"""The names Keras takes for an optimizer and a loss, as data: the driver checks a spec's names
without importing Keras. ``tests/core/test_keras_names.py`` compares them with the installed
Keras. Optimizer names are case-insensitive; loss names are exact.
"""

from __future__ import annotations

from tuner.core.typos import closest

OPTIMIZER_CLASSES = {
    "adadelta": "Adadelta",
    "adafactor": "Adafactor",
    "adagrad": "Adagrad",
    "adam": "Adam",
    "adamax": "Adamax",
    "adamw": "AdamW",
    "ftrl": "Ftrl",
    "lion": "Lion",
    "muon": "Muon",
    "nadam": "Nadam",
    "rmsprop": "RMSprop",
    "schedulefreeadamw": "ScheduleFreeAdamW",
    "sgd": "SGD",
}
"""Each optimizer name's class: a spec may say ``adam``, an export and the answer say ``Adam``."""
OPTIMIZERS = tuple(OPTIMIZER_CLASSES)


def optimizer_class(name: str) -> str:
    """The Keras class of an optimizer name (any case); another name as given (the user's own)."""
    return OPTIMIZER_CLASSES.get(name.lower(), name)


LOSSES = (
    "BCE",
    "BinaryCrossentropy",
    "BinaryFocalCrossentropy",
    "CTC",
    "CategoricalCrossentropy",
    "CategoricalFocalCrossentropy",
    "CategoricalHinge",
    "Circle",
    "CosineSimilarity",
    "Dice",
    "Hinge",
    "Huber",
    "KLD",
    "KLDivergence",
    "LogCosh",
    "Loss",
    "MAE",
    "MAPE",
    "MSE",
    "MSLE",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "MeanSquaredLogarithmicError",
    "Poisson",
    "SparseCategoricalCrossentropy",
    "SquaredHinge",
    "Tversky",
    "bce",
    "binary_crossentropy",
    "binary_focal_crossentropy",
    "categorical_crossentropy",
    "categorical_focal_crossentropy",
    "categorical_hinge",
    "circle",
    "cosine_similarity",
    "ctc",
    "dice",
    "hinge",
    "huber",
    "kl_divergence",
    "kld",
    "log_cosh",
    "mae",
    "mape",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_error",
    "mean_squared_logarithmic_error",
    "mse",
    "msle",
    "poisson",
    "sparse_categorical_crossentropy",
    "squared_hinge",
    "tversky",
)

TYPO_CUTOFF = 0.75
"""How close an unknown name must be to a Keras name to be its typo: a name close to none may be
the user's own, registered when their module is imported, and left to the workload check."""


def nearest(name: str, known: tuple[str, ...], *, ignore_case: bool = False) -> str | None:
    """The Keras name ``name`` is a typo of, or ``None`` (never ``package>Name`` nor dotted)."""
    if ">" in name or "." in name:
        return None
    if ignore_case:
        name = name.lower()
    elif name not in known:
        lowered = {item.lower(): item for item in known}
        if name.lower() in lowered:  # "Mse": only the case is off
            return lowered[name.lower()]
    return None if name in known else closest(name, known, cutoff=TYPO_CUTOFF)
