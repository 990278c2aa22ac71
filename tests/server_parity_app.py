"""A real Pathway ``DocumentStoreServer`` per retriever mode, for tests/test_server_parity.py.

    python tests/server_parity_app.py TEXTS_DIR PIPELINE_YAML '{"bm25": 8001, "hybrid:title": 8002}' [OUTLINES_JSON]

One process, one ``pw.run``: for each variant (``MODE``, ``MODE:CHUNK_HEADER``, either with
``@ROUTE_DOCS``; ``as-written``: the file's own values) the pipeline file is loaded with ``PipelineConfig.load(path, {"retriever_mode":
MODE, "chunk_header": CHUNK_HEADER, "route_docs": ROUTE_DOCS})`` and built, and ragsweep's
``DocumentStore`` (:mod:`ragsweep.pipeline.serving`: Pathway's, with Tantivy-safe questions; Pathway's default ``Utf8Parser``, the config's splitter and
retriever factory; with ``route_docs``, :mod:`ragsweep.pipeline.routing`'s store, whose
``retrieve_query`` ranks the documents first) is served by Pathway's own ``DocumentStoreServer`` on
127.0.0.1:PORT (``/v1/retrieve``, ``/v1/statistics``, ``/v1/inputs``).

Documents are read from TEXTS_DIR with ``pw.io.fs.read(format="binary",
with_metadata=True, mode="streaming")``: the test writes each parsed document's
text there as UTF-8 bytes under a file named by its doc id, so the server gets
the bytes the in-process store feeds. Pathway's file metadata is kept and
``doc_id`` (the path relative to TEXTS_DIR) is added, as the in-process store's
``_metadata`` carries it, with each document's outline from OUTLINES_JSON (doc id ->
``{"title": ..., "headings": [[offset, text], ...]}``, what a Pathway app's parser would put in the
metadata; ``ragsweep.pipeline.store.outline_metadata``), which the chunk header is made of.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

AS_WRITTEN = "as-written"  # the variant that serves the pipeline file with no override


def overrides_of(variant: str) -> dict[str, str | int]:
    """``"hybrid:title@2"`` -> ``{"retriever_mode": "hybrid", "chunk_header": "title", "route_docs": 2}``;
    :data:`AS_WRITTEN` -> ``{}``."""
    if variant == AS_WRITTEN:
        return {}
    variant, _, route = variant.partition("@")
    mode, _, header = variant.partition(":")
    return {
        "retriever_mode": mode,
        **({"chunk_header": header} if header else {}),
        **({"route_docs": int(route)} if route else {}),
    }


def main(texts_dir: str, pipeline: str, ports: dict[str, int], outlines: dict[str, dict]) -> None:
    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    import pathway as pw
    from pathway.xpacks.llm.servers import DocumentStoreServer

    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.routing import serving_store  # what ragsweep evaluates: ragsweep.pipeline.serving's store

    root = os.path.abspath(texts_dir)
    docs = pw.io.fs.read(root, format="binary", mode="streaming", with_metadata=True)

    def with_doc_id(meta):  # no annotations: Pathway evaluates them in this module's globals
        d = meta.as_dict()
        d["doc_id"] = Path(os.path.relpath(str(d["path"]), root)).as_posix()
        d.update(outlines.get(d["doc_id"], {}))
        return pw.Json(d)

    docs = docs.select(data=pw.this.data, _metadata=pw.apply_with_type(with_doc_id, pw.Json, pw.this._metadata))

    servers = []
    for variant, port in ports.items():
        built = PipelineConfig.load(pipeline, overrides_of(variant)).build()
        store = serving_store(docs, built)
        servers.append(DocumentStoreServer("127.0.0.1", int(port), store))
    print(f"serving {sorted(ports.items(), key=lambda kv: kv[1])} from {root}", flush=True)
    # one pw.run serves every endpoint of every server (BaseRestServer.run is pw.run)
    servers[-1].run(threaded=False, with_cache=False)


if __name__ == "__main__":
    outlines = json.loads(Path(sys.argv[4]).read_text()) if len(sys.argv) > 4 else {}
    main(sys.argv[1], sys.argv[2], {str(k): int(v) for k, v in json.loads(sys.argv[3]).items()}, outlines)
