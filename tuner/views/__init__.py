"""Ways to look at a study. Decides nothing (every number comes from ``tuner.core``), never
imports the driver, worker or CLI; the driver calls only :func:`tuner.views.refresh.refresh`."""

DASHBOARD_HOST = "127.0.0.1"
"""``tuner dashboard`` listens here unless told otherwise: this machine only."""
DASHBOARD_PORT = 8080
