"""The LLM judge, in one place: what it asks, what its statistics say, and how a run shows them.

* :mod:`.metric` — :class:`~.metric.LLMJudge`: the prompt, the verdict parsing, the replicates and the
  reference verdicts; it registers ``judge_correct``;
* :mod:`.probes` — answers whose verdict is known, asked of the judge before a run (:func:`~.probes.probe_judge`);
* :mod:`.stats` — the arithmetic on verdicts: self-agreement, agreement with reference verdicts,
  prediction-powered estimates;
* :mod:`.trust` — report.json's ``judge`` section, as models;
* :mod:`.report` — that section built from a run's cases, its terminal lines and the gate on its failures;
* :mod:`.html` — report.html's "LLM judge" section.

Its modules sit in different layers (tests/test_import_layers.py names each one's): the judge itself
with the metrics, its report with the evaluation, its page section with the report.
"""
