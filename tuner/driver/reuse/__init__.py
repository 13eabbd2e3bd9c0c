"""What one run hands the next instead of measuring it again: the input figure, the
single-device baseline and the compiled programs."""
