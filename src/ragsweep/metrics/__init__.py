"""Evaluation metrics, per case; :mod:`ragsweep.evaluation.scoring` aggregates them over a run.

* :mod:`.relevance` — :func:`~.relevance.mark_hits`: a case's retrieved hits judged by the dataset's
  relevance rule, a :class:`~.retrieval.Judgement`;
* :mod:`.retrieval` — :func:`~.retrieval.per_case_value`: one retrieval metric of a judgement
  (ranx-compatible definitions); :mod:`.levels` — each one's chance and oracle functions, which its
  declaration hands to the registry; :mod:`.baselines` — those levels over a run's cases (pooling,
  caching, enumerating and sampling);
* :mod:`.answer`, :mod:`.ragas_bridge`, :mod:`.ragas_llm` — answer metrics (the LLM judge, its
  statistics and its report: :mod:`ragsweep.judge`);
  :mod:`.stats` — intervals and paired tests;
* :mod:`.registry` — the one list of metric names, families and their order, and the names the
  reports, the gate and the sweep pick by role.

This is the path :func:`ragsweep.evaluation.case_scoring.build_case_result` takes; there is no second one.
"""
