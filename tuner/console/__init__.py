"""What tuner prints for people, shared by the command line and the Python API."""
