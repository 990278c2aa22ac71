"""What a run would cost at its endpoints, without a single call (``--dry-run``), in one place.

* :mod:`.llm_calls` — the LLM part of a run: the answerer's, the judge's and ragas' calls, estimated
  and added up;
* :mod:`.run` — ``ragsweep eval --dry-run``: the app embedder's texts its cache lacks, and the LLM part
  over the chunks each case would be served;
* :mod:`.sweep` — ``ragsweep sweep --dry-run``: the same per configuration of an answer sweep.

Its modules sit in different layers (tests/test_import_layers.py names each one's): :mod:`.llm_calls`
with the metrics whose calls it sums, the others with the evaluation.
"""
