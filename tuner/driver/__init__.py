"""The study driver: runs a search in the parent process.

A search is a short walk (:func:`tuner.driver.study.run_search`):

1. ``workload_check.check`` — the grid and the workload (in a child), before anything is stored;
2. ``opening.open_study`` — create or resume the study (``grid`` makes its sampler);
3. ``probing.probe_grid`` and ``baseline.prepare_baseline`` — the probe and the single-device
   baseline, stored on the study;
4. ``trial_loop.run_trials`` — one trial at a time (``resume`` re-queues unfinished ones), each
   run by ``objective.Objective`` in a child and recorded there;
5. ``tuner.views.refresh`` — the dashboard note and plots.

Every step that starts a child is handed one :class:`~tuner.driver.children.ChildRunner`, chosen
by the entry (``study``, ``validate``) with :func:`~tuner.driver.children.child_runner`; a test
passes its fake the same way. ``children`` builds what a child is asked to run and runs it;
``observer`` is what the driver reports;
``validate`` runs ``tuner validate``; ``devices`` finds the GPUs. It talks to the trial process only
through ``tuner.core.protocol`` (a typed, versioned request written as JSON, typed events on
stdout, one typed result).

Never imports ``tuner.worker`` (that code runs in another process) or ``tuner.cli``; it asks the
views for a refresh only through ``tuner.views.refresh``.
"""
