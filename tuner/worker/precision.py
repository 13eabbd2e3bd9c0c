"""Inside the child: the run's floating-point precision, a Keras dtype policy, set globally
before any model is built. Under ``mixed_float16`` the optimizer is wrapped in Keras's
``LossScaleOptimizer``: a model built under the global policy keeps a float32 policy of its own,
so ``compile`` alone would not scale the loss and small float16 gradients would flush to zero.
"""

from __future__ import annotations

from typing import Any

import keras

from tuner.core.protocol import RunRequest


def apply(request: RunRequest) -> str:
    """Set the request's precision (``float32`` if none) as Keras's global policy; its name."""
    name = request.precision or "float32"
    keras.mixed_precision.set_global_policy(name)
    return name


def scaled(optimizer: Any, name: str) -> Any:
    """``optimizer`` as it trains under precision ``name``: loss-scaled under mixed_float16."""
    if name != "mixed_float16" or isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer
    return keras.optimizers.LossScaleOptimizer(optimizer)
