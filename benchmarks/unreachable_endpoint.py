"""How long `ragsweep eval` takes to say that an endpoint is down: nothing listens at its port.

Two runs of the command as a user starts it, each against a port on 127.0.0.1 where nothing listens:

- ``llm``: `eval --llm` over cuad-mini, the answers' chat endpoint down: the probe of the endpoint, before
  any parse or retrieval, finds nothing listening and ends the run;
- ``app embedder``: an app whose `$embedder` is Pathway's `OpenAIEmbedder`
  (tests/fixtures/apps/parity_base.yaml, its parser Utf8Parser), on an empty cache: the embedder's probe,
  before the documents are parsed, finds nothing listening.

Each prints its wall time (interpreter start to exit), its exit status and its one error line. The target
is rc 2 within 10 s; the openai client's own retries (2, with backoff) on every call took minutes for a
whole dataset before.

    .venv/bin/python benchmarks/unreachable_endpoint.py [--limit 200]
    .venv/bin/python benchmarks/unreachable_endpoint.py --smoke
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAGSWEEP = [sys.executable, "-m", "ragsweep.cli"]
MINI = ROOT / "datasets" / "cuad-mini"


def closed_port() -> int:
    """A port nothing listens at (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    return time.perf_counter() - started, done.returncode, (errors[-1] if errors else done.stderr[-300:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=123, help="cuad-mini cases the llm run takes")
    parser.add_argument("--smoke", action="store_true", help="10 cases: a check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.limit = 10
        print("SMOKE RUN: 10 cases; timings are not measurements")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    summary: dict[str, object] = {"smoke": args.smoke, "endpoint": url}
    with tempfile.TemporaryDirectory(prefix="ragsweep-unreachable-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env |= {"RAGSWEEP_CACHE_DIR": str(work / "cache"), "OPENAI_API_KEY": "sk-unused", "RAGSWEEP_LLM_MODEL": "m"}
        # both on an empty cache: each probe comes before any parse, so a warm cache would only hide a run
        # that parsed first
        base = ["eval", "--dataset", str(MINI), "--limit", str(args.limit), "--no-validate", "--out", str(work / "r")]
        runs = {
            "llm": [*RAGSWEEP, *base, "--pipeline", str(ROOT / "pipelines" / "default.yaml"), "--llm"],
            "app embedder": [*RAGSWEEP, *base, "--pipeline", str(ROOT / "tests" / "fixtures" / "apps" / "parity_base.yaml")],
        }  # fmt: skip
        for name, argv in runs.items():
            seconds, code, line = timed(argv, env | {"OPENAI_BASE_URL": url})
            print(f"RESULT {name}: rc {code} after {seconds:.2f} s: {line.strip()[:220]}")
            summary[name] = {"seconds": round(seconds, 3), "rc": code, "message": line.strip()[:300]}
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
