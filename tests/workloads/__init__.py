"""The zoo (issue 28): setups written the way Keras's own examples and guides write them, each a
``build_model`` (or hypermodel) and ``load_data`` pair on small synthetic data of the right shapes.

Importable as ``workloads.<module>:<function>`` from ``tests/`` (``tests/conftest.py``'s
``tuner_env`` puts ``tests/`` on ``PYTHONPATH``); not to be confused with ``tuner.workloads``, the
built-in ones. :mod:`workloads.setups` lists them with the spec each is searched with, and
``tests/workloads/test_zoo.py`` searches every one on two CPU replicas. The modules import Keras
inside their functions, so importing the table stays cheap.
"""
