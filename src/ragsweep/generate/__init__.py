"""Test sets from the user's own documents, with every case checked against its evidence.

``ragsweep generate --docs DIR --out datasets/NAME --n 200`` (see :mod:`.generator`):

- :mod:`.sampling`  the pipeline's own chunks, drawn stratified over documents (seeded)
- :mod:`.propose`   the LLM proposes question, answer and verbatim quotes (prompts beside it)
- :mod:`.verify`    quotes located, near-duplicates removed, answer checked against the
                    evidence alone, unanswerable ones checked against the corpus (prompts beside it)
- :mod:`.failures`  ``--from-failures RUN_DIR``: seeds from a run's failed cases
- :mod:`.estimate`  ``--dry-run``: calls and tokens, nothing sent
- :mod:`.writer`    the dataset folder: cases.jsonl, docs/, dataset.yaml, README (provenance)
- :mod:`.cli`       the ``generate`` subcommand's options

Why not ragas' ``TestsetGenerator``: see ``README.md`` ("Generated test sets") and
:data:`RAGAS_NOTE`.
"""

RAGAS_NOTE = """ragas 0.4.3's TestsetGenerator can be pointed at an OpenAI-compatible endpoint and a local
embedder, but it was not used: (1) before the first question it builds a knowledge graph with
LLM transforms on every chunk (summary, themes, named entities, a quality filter: 4 calls per
chunk, plus headlines and summaries per long document), then personas and scenarios: thousands of
calls for the 40 CUAD contracts, hours on a local model; (2) its reference contexts are whole
chunks, not quotes with offsets, so nothing is located in the parsed text; (3) it has no check
that the reference answer follows from the evidence, no near-duplicate removal and no
unanswerable questions; (4) its sampling uses the global `random` module (no seed parameter);
(5) its prompts require pydantic-schema JSON that small models often break, and a failed
transform aborts the run."""

__all__ = ["GenerateError", "GenerateOptions", "generate", "RAGAS_NOTE"]


def __getattr__(name):  # lazy: `ragsweep --help` builds the generate subparser without loading the generator
    if name in ("GenerateError", "GenerateOptions", "generate"):
        from ragsweep.generate import generator

        return getattr(generator, name)
    raise AttributeError(name)
