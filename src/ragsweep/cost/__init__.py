"""What answering costs, in one place.

* :mod:`.calls` — what an LLM call costs: tokens counted offline (tiktoken), priced, estimated before
  it is sent (:class:`~.calls.CallEstimate`);
* :mod:`.configuration` — what a configuration's answers cost per 1,000 questions, and the
  cost-quality Pareto sets of a sweep;
* :mod:`.records` — those costs as sweep.json holds them;
* :mod:`.html` — the sweep page's quality-versus-cost section.

Its modules sit in different layers (tests/test_import_layers.py names each one's): :mod:`.calls` with
the LLM client that counts every call, the rest with the evaluation and the report that use them.
"""
