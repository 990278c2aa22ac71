"""Documents the app's parser raised on, under the CI rule the LLM metrics' failures follow.

The app's own server stops on such a document (Pathway's default ``terminate_on_error``); ragsweep skips
it, names it and its cases, and scores the rest. Those numbers are of a corpus the app never serves
whole, so the run fails its gate unless ``--max-failure-rate`` allows that share of the documents: one
rule for failed LLM calls and failed documents.
"""

from __future__ import annotations

from ragsweep.evaluation.manifest import CorpusManifest
from ragsweep.pipeline.parser_spec import SERVED_APP_ENDS


def parser_failures(corpus: CorpusManifest | None) -> list[str]:
    """The documents of a run that the app's parser raised on."""
    skipped = corpus.skipped if corpus is not None else None
    return [s.doc_id for s in skipped or [] if SERVED_APP_ENDS in s.reason]


def parser_failure_gate(corpus: CorpusManifest | None, max_failure_rate: float | None) -> list[str]:
    """One line when the app's parser raised on more than ``max_failure_rate`` of the documents (none
    allowed without it)."""
    failed = parser_failures(corpus)
    if corpus is None or not failed:
        return []
    total = (corpus.documents or 0) + len(failed)
    rate, allowed = len(failed) / total, max_failure_rate or 0.0
    if rate <= allowed:
        return []
    named = ", ".join(failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
    return [
        f"the app's parser: raised on {len(failed)} of {total} documents ({named}; {rate:.1%}) "
        f"> --max-failure-rate {allowed:g} (the app's own server stops on such a document)"
    ]
