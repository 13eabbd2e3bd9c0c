"""Before the first trial: the spec file and names, the devices, the workload check (in a
child), the study opened or resumed, the probe of the grid and the single-device baseline."""
