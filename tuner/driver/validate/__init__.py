"""``tuner validate``: the multi-device run against its single-device control (``run``), the
checks that judge them, and the gradient-accumulation proof."""
