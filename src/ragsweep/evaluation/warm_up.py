"""What a long-lived evaluation loads once, before the change that would need it.

A warm evaluation is served from the caches: it never loads the parser's models, the embedding model
or ragas' metrics. The first evaluation after a document changes needs all three for that one
document (its parse, its chunks' vectors, its cases' answer metrics): 10-20 s of imports and model
loading on this project's 2-core machine, paid inside the update the user waits for. ``ragsweep watch``
loads them while it waits for the first change instead (:func:`warm_up`, in a thread).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import iter_files, layout_models_available, read_document


def warm_up(config: PipelineConfig, docs_dir: str, answer_metrics: bool) -> list[str]:
    """Parse one document of the folder with the configuration's parser (not cached: its imports and
    models stay loaded), load the embedder's model, ragas' metrics when ``answer_metrics``, and scipy;
    what was loaded, by name. A failure is left to the evaluation that needs the part to report."""
    loaded = []
    for name, step in (
        ("parser", lambda: _parse_one(config, docs_dir)),
        ("embedder", lambda: _load_embedder(config)),
        ("ragas", _load_ragas if answer_metrics else None),
        ("scipy", _load_stats),
    ):
        if step is None:
            continue
        try:
            if step():
                loaded.append(name)
        except Exception as err:  # noqa: BLE001 - the evaluation that needs it says what is wrong
            print(f"watch: could not load the {name} ahead of a change ({err})", file=sys.stderr)
    return loaded


def _parse_one(config: PipelineConfig, docs_dir: str) -> bool:
    # deferred: parsing imports pathway (~1 s)
    from ragsweep.pipeline.parsing import check_parser

    spec = check_parser(config, docs_dir)
    files = [p for p in iter_files(Path(docs_dir)) if p.suffix.lower() != ".txt" and p.is_file()]  # no FIFO, no loop
    if not files:
        return False
    smallest = min(files, key=lambda p: p.stat().st_size)
    check = read_document(smallest)
    if check.fmt is None or check.data is None:
        return False
    spec.parse_fn()(check.data, check.fmt, smallest.name, layout_models_available())
    return True


def _load_embedder(config: PipelineConfig) -> bool:
    warm = getattr(config.build().embedder, "load_model", None)
    if warm is None:
        return False
    warm()
    return True


def _load_ragas() -> bool:
    # deferred: ragas (~5 s to import); only a watch that scores answers loads it ahead
    from ragsweep.metrics.ragas_bridge import load_metrics

    load_metrics()
    return True


def _load_stats() -> bool:
    # deferred: scipy (~0.7 s to import); an update's before -> after intervals need it
    import ragsweep.metrics.stats  # noqa: F401

    return True
