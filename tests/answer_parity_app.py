"""A user's Pathway RAG app, run for real, for tests/test_answer_parity.py.

    RAGSWEEP_PARITY_DOCS=DOCS python tests/answer_parity_app.py APP_YAML PORT

What an llm-app ``app.py`` does: the YAML loaded by Pathway's own loader (every component built as
Pathway builds it: its sources read the folder, its parser, splitter, embedder, index, LLM and
question answerer), and the question answerer served by Pathway's ``QASummaryRestServer`` on
127.0.0.1:PORT (``/v2/answer``, ``/v1/retrieve``, ``/v1/statistics``). Nothing of ragsweep runs here.
"""

from __future__ import annotations

import sys


def main(app_yaml: str, port: int) -> None:
    import pathway as pw
    from pathway.xpacks.llm.servers import QASummaryRestServer

    with open(app_yaml) as f:
        app = pw.load_yaml(f)
    server = QASummaryRestServer("127.0.0.1", port, app["question_answerer"])
    print(f"serving {app_yaml} on 127.0.0.1:{port}", flush=True)
    server.run(threaded=False, with_cache=False)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
