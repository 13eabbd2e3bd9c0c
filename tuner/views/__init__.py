"""Ways to look at a study: summary rows, the dashboard note, figures, the HTML report and the
optuna-dashboard server. Decides nothing (every number comes from ``tuner.core``) and never
imports ``tuner.driver``, ``tuner.worker`` or ``tuner.cli``; the driver calls only
:func:`tuner.views.refresh.refresh`.
"""

DASHBOARD_HOST = "127.0.0.1"
"""``tuner dashboard`` listens here unless told otherwise: this machine only."""
DASHBOARD_PORT = 8080
