"""Everything that runs inside one trial process (``python -m tuner.worker``).

Owns devices -> strategy, the workload's data and model, training loops, meters, the noise scale,
optimizers and hypermodel building. TensorFlow and Keras are imported here and nowhere above.

Never imports ``tuner.driver``, ``tuner.views``, ``tuner.cli`` or ``tuner.storage``: the worker
never touches the study; it answers one request with one result.
"""
