"""The pure core: decisions over plain data, tested without TensorFlow.

Owns the study spec and its validation, learning-rate rules, out-of-memory predicates, the
classification of a trial's outcome, the probe search, efficiency formulas, trial predicates, the
recommendation, the typed and versioned protocol between the driver and the trial process
(:mod:`tuner.core.protocol`) and the one errors module.

Never imports TensorFlow, Keras, JAX, plotly, SQLAlchemy, ``tuner.storage`` or any other part of
tuner, and does no I/O: callers read files and storage and pass the data in.
"""
