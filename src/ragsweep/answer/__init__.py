"""Answering a question, in one place; each module's name says which part of it it is.

* the answerers, from retrieved chunks: :mod:`.extractive` (offline), :mod:`.llm` (ragsweep's LLM
  answerer, its template in :mod:`.prompt`), with :mod:`.base` (the ``Answer``), :mod:`.refusal` and
  :mod:`.stored_answers` (extractive answers kept on disk);
* :mod:`.app` — the app's own question answerer, built from its YAML and asked in-process;
* :mod:`.served` — which of them answers for a pipeline, and the answer served for each case (or the
  dataset's own response, scored as given);
* :mod:`.run_setup` — what a run asks for, built once: the answerer, the judge with its probes,
  ragas' LLM scorer, and each LLM part's calls afterwards.

Its modules sit in different layers (tests/test_import_layers.py names each one's): the answerers
below the pipeline, :mod:`.app` and :mod:`.served` with the pipeline, :mod:`.run_setup` with the evaluation.
"""
