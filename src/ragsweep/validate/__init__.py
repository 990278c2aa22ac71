"""A dataset's checks, in one place; each collects every problem, never stopping at the first.

* :mod:`.dataset` — the dataset's own checks: its files, cases and document ids;
* :mod:`.parsed` — the dataset checked against its documents as the eval parses them (evidence offsets
  and spans), on top of its own checks;
* :mod:`.command` — ``ragsweep validate``: those checks printed one problem a line.

Its modules sit in different layers (tests/test_import_layers.py names each one's): :mod:`.dataset`
with the datasets, :mod:`.parsed` with the evaluation, :mod:`.command` with the interfaces.
"""
