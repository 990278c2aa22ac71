"""Where a run's work is done: in this process (``local``) or as tasks on a Ray cluster (``ray``).

Importing the package registers the built-in executors (:mod:`~ragsweep.execution.registry`); the Ray
executor's module imports Ray only when a run opens it."""

from ragsweep.execution import local, ray_executor  # noqa: F401 - each registers its executor
