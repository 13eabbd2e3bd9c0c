"""One trial from request to stored outcome: the grid's sampler, the loop that runs the trials
(``loop``), what each one measures and decides (``objective``), the rules that end one without a
child (``prelaunch``: same training, the adaptive sweep's ``bracketed``, ``oom-implied``), the
micro-steps that reach a batch past out-of-memory, the resume of unfinished trials and the
spool that keeps a result the storage could not take."""
