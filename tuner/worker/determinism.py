"""Inside a validation child: the model's stochastic layers put in a deterministic state, so that
one device and N replicas can be compared step for step (why, and each layer's treatment:
docs/guide/validate.md). Every layer that owns a ``keras.random.SeedGenerator`` is made
deterministic in the narrowest way, else left as it is and said so. The data are replayed from
memory, each batch's digest for the driver to compare.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from tuner.worker.digest import array_bytes

_ZEROED = ("rate", "stddev", "dropout", "recurrent_dropout")
"""The numbers that switch a Keras layer's randomness off when 0 (each ``call`` checks
``> 0``); set only on the classes below, never guessed on a user's layer."""


@dataclass(frozen=True)
class Neutralized:
    """One stochastic layer and what was done to it for the parity pass."""

    layer: str
    """Its class and what made it random, as Keras's examples write it: ``Dropout(0.5)``."""
    how: str
    """``rate 0``, ``inference mode (training=False)``, ``synchronized ...`` or ``left as is``."""


def make_deterministic(model: Any) -> list[Neutralized]:
    """Put every stochastic layer of ``model`` in a deterministic state before it trains; what was
    done, one entry per layer."""
    done = []
    for layer in _layers(model):
        if getattr(layer, "_seed_generators", None):
            done.append(_neutralize(layer))
        elif _synchronize(layer):
            done.append(Neutralized("BatchNormalization", _SYNCHRONIZED))
    return done


_SYNCHRONIZED = (
    "synchronized over the replicas (as trained, each replica normalises by the mean and "
    "variance of its own G/N examples, not of the global batch)"
)


def _neutralize(layer: Any) -> Neutralized:
    zeroed = _zero_rates(layer)
    if zeroed:
        return Neutralized(_label(layer, zeroed), f"{' and '.join(zeroed)} 0")
    if _force_inference(layer):
        return Neutralized(_label(layer, {}), "inference mode (training=False)")
    return Neutralized(_label(layer, {}), "left as is")


def _synchronize(layer: Any) -> bool:
    """Under ``MirroredStrategy`` a BatchNormalization layer normalises each shard by its own
    moments (under JAX by the global batch's): for the comparison they are all-reduced."""
    if keras.backend.backend() != "tensorflow":
        return False
    if not isinstance(layer, keras.layers.BatchNormalization) or layer.synchronized:
        return False
    layer.synchronized = True
    return True


def describe(done: Iterable[Neutralized]) -> list[str]:
    """One line per kind of change, equal layers counted: ``Dropout(0.5) x2: rate 0 for ...``."""
    counted = Counter((entry.layer, entry.how) for entry in done)
    lines = []
    for (layer, how), count in counted.items():
        times = f" x{count}" if count > 1 else ""
        if how == "left as is":
            lines.append(f"{layer}{times}: left as is (no rate or training argument to switch)")
        else:
            lines.append(f"{layer}{times}: {how} for the parity pass")
    return lines


def _layers(model: Any) -> list[Any]:
    """``model`` and every layer nested in it."""
    flatten = getattr(model, "_flatten_layers", None)  # Keras 3's own walk of nested layers
    return list(flatten(include_self=True, recursive=True)) if flatten else [model]


def _zero_rates(layer: Any) -> dict[str, float]:
    """Set the rates of a known stochastic Keras class to 0; the values it had, by name."""
    known = (
        keras.layers.Dropout,  # SpatialDropout1D/2D/3D are Dropouts too
        keras.layers.GaussianDropout,
        keras.layers.AlphaDropout,
        keras.layers.GaussianNoise,
        keras.layers.LSTMCell,
        keras.layers.GRUCell,
        keras.layers.SimpleRNNCell,
    )
    if not isinstance(layer, known):
        return {}
    zeroed = {}
    for name in _ZEROED:
        value = getattr(layer, name, None)
        if isinstance(value, int | float) and value > 0:
            setattr(layer, name, 0.0)
            zeroed[name] = float(value)
    return zeroed


def _force_inference(layer: Any) -> bool:
    """Call ``layer`` with ``training=False`` from now on, if its ``call`` takes ``training``."""
    if not getattr(layer, "_call_has_training_arg", False):
        return False
    original: Callable[..., Any] = layer.call

    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs["training"] = False
        return original(*args, **kwargs)

    # An attribute of this instance only: the class, and every other layer, are untouched.
    object.__setattr__(layer, "call", call)
    return True


def _label(layer: Any, zeroed: dict[str, float]) -> str:
    if not zeroed:
        return type(layer).__name__
    values = ", ".join(
        f"{v:g}" if n in ("rate", "stddev") else f"{n}={v:g}" for n, v in zeroed.items()
    )
    return f"{type(layer).__name__}({values})"


def seed_everything(seed: int) -> None:
    """Seed every generator (``np.random``, an unseeded ``shuffle``) before the data function."""
    keras.utils.set_random_seed(seed)


REORDER_ENV = "TUNER_VALIDATE_REORDER"
"""Set (``1``) for validate's control run: each batch's examples replayed in reverse order."""


def fixed_batches(stream: Any, count: int, reorder: bool = False) -> tuple[Any, list[str] | None]:
    """The first ``count`` batches of ``stream`` read once, in order, and a stream that replays
    exactly them; with each batch's digest (``None`` where they cannot be read back).

    ``reorder`` replays each batch's examples in reverse: mathematically the same training in
    another float32 rounding order, as a right N-replica run is; validate's control run measures
    with it how far rounding order alone moves the model.

    Why: batches replayed from memory hold no random state, where a reshuffling ``shuffle`` races
    (``tuner.worker.backends.tensorflow._inputs.shuffled_passes`` says how)."""
    if hasattr(stream, "element_spec") and hasattr(stream, "take"):  # a tf.data.Dataset
        return _fixed_dataset(stream, count, reorder)
    if hasattr(stream, "__next__"):  # JAX: an endless iterator of NumPy batches
        batches = list(itertools.islice(stream, count))
        replayed = [keras.tree.map_structure(_reversed, b) for b in batches] if reorder else batches
        return itertools.cycle(replayed), [batch_digest(b) for b in batches]
    return stream, None


def _reversed(array: Any) -> Any:
    return np.asarray(array)[::-1]


def _fixed_dataset(dataset: Any, count: int, reorder: bool) -> tuple[Any, list[str] | None]:
    import tensorflow as tf  # only here: the stream is a tf.data dataset, TensorFlow is loaded

    options = tf.data.Options()
    options.deterministic = True  # parallel maps in the user's pipeline keep their order
    try:
        batches = [
            tf.nest.map_structure(np.asarray, batch)
            for batch in dataset.with_options(options).take(count)
        ]
    except (TypeError, ValueError):  # ragged or sparse parts: no NumPy form to replay
        return dataset, None
    replayed = [tf.nest.map_structure(_reversed, b) for b in batches] if reorder else batches
    stacked = tf.nest.map_structure(lambda *parts: np.stack(parts), *replayed)
    replay = tf.data.Dataset.from_tensor_slices(stacked)  # constants: no seed, no state
    return replay.repeat(), [batch_digest(b) for b in batches]


def batch_digest(batch: Any) -> str:
    """A short fingerprint of one batch: every array's dtype, shape and bytes, in order."""
    digest = hashlib.sha256()
    for leaf in keras.tree.flatten(batch):
        array = np.asarray(leaf)
        digest.update(f"{array.dtype}{array.shape}".encode())
        digest.update(array_bytes(array))
    return digest.hexdigest()[:16]
