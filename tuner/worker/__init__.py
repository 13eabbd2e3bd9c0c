"""Everything that runs inside one trial process (``python -m tuner.worker``).

Owns devices -> strategy, the workload's data and model, training loops, meters, the noise scale,
optimizers and hypermodel building. TensorFlow and Keras are imported here and nowhere above.

Where to start reading: ``__main__`` answers one request by its mode — ``check`` (``inspect``),
``trial``, ``probe``, ``validate`` — and the three training modes share the steps in
``session`` (strategy, data, model in its loop, timing).

Never imports ``tuner.driver``, ``tuner.views``, ``tuner.cli`` or ``tuner.storage``: the worker
never touches the study; it answers one request with one result.
"""
