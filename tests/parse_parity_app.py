"""Users' Pathway RAG apps, run for real, for tests/test_parse_parity.py.

    python tests/parse_parity_app.py '{"APP_YAML": PORT, ...}'

What an llm-app ``app.py`` does, for several apps in one ``pw.run``: each YAML loaded by Pathway's own
loader (every component built as Pathway builds it: its sources read the folder, its parser, splitter,
embedder, index, LLM and question answerer), each question answerer served by Pathway's
``QASummaryRestServer`` on 127.0.0.1:PORT (``/v1/retrieve``, ``/v2/answer``). Nothing of ragsweep runs
here. The environment gives the documents' folder (``$RAGSWEEP_PARITY_DOCS`` in the YAML), the endpoint,
and ``HF_HUB_CACHE``: a local cache holding the all-MiniLM-L6-v2 tokenizer that DoclingParser's chunker
loads (offline, as a user with that model cached runs the app).
"""

from __future__ import annotations

import json
import sys


def main(apps: dict[str, int]) -> None:
    import pathway as pw
    from pathway.xpacks.llm.servers import QASummaryRestServer

    servers = []
    for app_yaml, port in apps.items():
        with open(app_yaml) as f:
            app = pw.load_yaml(f)
        servers.append(QASummaryRestServer("127.0.0.1", int(port), app["question_answerer"]))
    print(f"serving {apps}", flush=True)
    servers[-1].run(threaded=False, with_cache=False)  # one pw.run serves every endpoint of every server


if __name__ == "__main__":
    main({str(k): int(v) for k, v in json.loads(sys.argv[1]).items()})
