"""What the measurements decide: seeds and repeats raced with intervals, early stops of
dominated points, the time budget, and which runs are the same training."""
