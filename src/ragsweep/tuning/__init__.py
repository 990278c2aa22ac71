"""``ragsweep tune``: an Optuna search over a pipeline's knobs, each trial evaluated as sweep evaluates a
configuration (same records, same numbers), optionally pruned on paired cases."""
