"""The study driver: runs a search in the parent process (:func:`tuner.driver.study.run_search`),
one room per step (``setup``, ``trial``, ``decide``, ``reuse``; docs/design/architecture.md walks
them). Every step that starts a child is handed one :class:`~tuner.driver.children.ChildRunner`
(a test passes its fake the same way); the trial process is reached only through
``tuner.core.protocol``, never by importing ``tuner.worker``.
"""
