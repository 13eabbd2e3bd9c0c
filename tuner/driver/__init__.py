"""The study driver: runs a search in the parent process (:func:`tuner.driver.study.run_search`),
one room per step: ``setup`` (workload check, study, probe, baseline), ``trial`` (one trial at a
time, each in a child), ``decide`` (seeds, racing, early stops, budget) and ``reuse`` (what one
run hands the next); then ``tuner.views.refresh``. docs/design/architecture.md walks it module by
module.

Every step that starts a child is handed one :class:`~tuner.driver.children.ChildRunner`, chosen
by the entry (:func:`~tuner.driver.children.child_runner`); a test passes its fake the same way.
The driver talks to the trial process only through ``tuner.core.protocol``, never imports
``tuner.worker`` (that code runs in another process) or ``tuner.cli``, and asks the views for a
refresh only through ``tuner.views.refresh``.
"""
