"""What one run hands the next instead of measuring again: input figure, baseline, compiles."""
