"""Everything that runs inside one trial process (``python -m tuner.worker``); TensorFlow and
Keras are imported here and nowhere above. The worker never touches the study: it answers one
request with one result.
"""
