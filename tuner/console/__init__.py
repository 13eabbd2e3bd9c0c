"""What tuner prints for people, shared by the command line (``tuner.cli``) and the Python API
(``tuner.api``): the consoles, the tables, the progress of a search, the log lines."""
