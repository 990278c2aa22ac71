"""Where a run's work is done: in this process (``local``) or as tasks on a Ray cluster (``ray``)."""
