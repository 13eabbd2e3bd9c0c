"""One trial from request to stored outcome: the sampler, the loop, the objective and its
pre-launch rules, accumulation, the resume of unfinished trials and the spool."""
