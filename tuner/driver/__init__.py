"""The study driver: runs a search in the parent process.

A search is a short walk (:func:`tuner.driver.study.run_search`), one room per step:

1. ``setup`` — the workload check (in a child) before anything is stored, the study opened or
   resumed, the probe and the single-device baseline stored on the study;
2. ``trial`` — one trial at a time (``trial.loop``; ``trial.resume`` re-queues unfinished ones),
   each run by ``trial.objective.Objective`` in a child and recorded there;
3. ``decide`` — what the measurements decide between trials: seeds, racing, early stops, budget;
   ``reuse`` — what one run hands the next instead of measuring it again;
4. ``tuner.views.refresh`` — the dashboard note and plots.

``search`` holds the library calls (search, probe, validate), ``options`` their options,
``validate`` runs ``tuner validate``. Every step that starts a child is handed one
:class:`~tuner.driver.children.ChildRunner`, chosen by the entry with
:func:`~tuner.driver.children.child_runner`; a test passes its fake the same way. ``children``
builds what a child is asked to run and runs it; ``observer`` is what the driver reports. It talks
to the trial process only through ``tuner.core.protocol`` (a typed, versioned request written as
JSON, typed events on stdout, one typed result).

Never imports ``tuner.worker`` (that code runs in another process) or ``tuner.cli``; it asks the
views for a refresh only through ``tuner.views.refresh``.
"""
