"""The pure core: decisions over plain data, tested without TensorFlow (its modules:
docs/design/architecture.md, "core/").

Never imports TensorFlow, Keras, JAX, plotly, SQLAlchemy, ``tuner.storage`` or any other part of
tuner, and does no I/O: callers read files and storage and pass the data in.
"""
