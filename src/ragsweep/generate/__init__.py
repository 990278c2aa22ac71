"""Test sets from the user's own documents, with every case checked against its evidence.

``ragsweep generate --docs DIR --out datasets/NAME --n 200`` (see :mod:`.generator`):

- :mod:`.sampling`  the pipeline's own chunks, drawn stratified over documents (seeded)
- :mod:`.propose`   the LLM proposes question, answer and verbatim quotes (prompts beside it)
- :mod:`.verify`    quotes located, near-duplicates removed, answer checked against the
                    evidence alone, unanswerable ones checked against the corpus (prompts beside it)
- :mod:`.failures`  ``--from-failures RUN_DIR``: seeds from a run's failed cases
- :mod:`.estimate`  ``--dry-run``: calls and tokens, nothing sent
- :mod:`.writer`    the dataset folder: cases.jsonl, docs/, dataset.yaml, README (provenance)

Why not ragas' ``TestsetGenerator``: see ``README.md`` ("Generated test sets") and
:data:`ragsweep.generate.writer.RAGAS_NOTE`.
"""

__all__ = ["GenerateError", "GenerateSettings", "generate"]


def __getattr__(name):  # lazy: `ragsweep --help` builds the generate subparser without loading the generator
    if name == "GenerateSettings":
        # deferred: the settings load the dataset schema; importing one module of the package must not
        from ragsweep.generate import settings

        return settings.GenerateSettings
    if name in ("GenerateError", "generate"):
        # deferred: the generator loads the pipeline's corpus and the run records; the subparser must not
        from ragsweep.generate import generator

        return getattr(generator, name)
    raise AttributeError(name)
