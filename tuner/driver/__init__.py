"""The study driver: runs a search in the parent process.

A search is a short walk (:func:`tuner.driver.study.run_search`):

1. ``preflight.check`` — the grid and the workload (in a child), before anything is stored;
2. ``opening.open_study`` — create or resume the study (``grid`` makes its sampler);
3. ``preflight.prepare`` — the probe and the single-device baseline, stored on the study;
4. ``trial_loop.run_trials`` — one trial at a time (``resume`` re-queues unfinished ones), each
   run by ``objective.Objective`` in a child (``runner``) and recorded there;
5. ``tuner.views.refresh`` — the dashboard note and plots.

``requests`` builds what a child is asked to run; ``observer`` is what the driver reports;
``validate`` runs ``tuner validate``; ``devices`` finds the GPUs. It talks to the trial process only
through ``tuner.core.protocol`` (a JSON request, events on stdout, a JSON result).

Never imports ``tuner.worker`` (that code runs in another process) or ``tuner.cli``; it asks the
views for a refresh only through ``tuner.views.refresh``.
"""
