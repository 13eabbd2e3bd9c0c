"""The study driver: runs a search in the parent process.

Owns opening the study, the grid and sampler, preflight (workload check, probe, baseline), the
objective, the child-process runner and validation runs. It talks to the trial process only
through ``tuner.core.protocol`` (a JSON request, events on stdout, a JSON result).

Never imports ``tuner.worker`` (that code runs in another process) or ``tuner.cli``; it asks the
views for a refresh only through ``tuner.views.refresh``.
"""
