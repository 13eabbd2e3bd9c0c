"""Everything that runs inside one trial process (``python -m tuner.worker``): devices, data,
model, training loops, meters; TensorFlow and Keras are imported here and nowhere above.

``__main__`` answers one request by its mode; the training modes share ``session``. Never imports
``tuner.driver``, ``tuner.views``, ``tuner.cli`` or ``tuner.storage``: the worker never touches
the study; it answers one request with one result.
"""
