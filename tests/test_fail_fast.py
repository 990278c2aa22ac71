"""What a newcomer's first mistakes cost: an LLM endpoint that is not there (nothing listening, no key,
a key refused) or a Ray address where no cluster listens ends the command with rc 2 and one line,
before any case is asked; ``ragsweep --version`` says the installed version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from loopback import free_port
from support import MINI as DATASET
from support import ROOT
from support.in_process import Done, run_here

RAGSWEEP = [sys.executable, "-m", "ragsweep.cli"]
KEY = "sk-test-FAILFAST-0123456789abcdef"
TIMEOUT_S = 60  # a command's limit; the probe itself answers in seconds


def _env(tmp_path: Path, **values: str) -> dict[str, str]:
    """What the command's environment sets over this one's, which loses its LLM endpoint, key and model."""
    return {"RAGSWEEP_CACHE_DIR": str(tmp_path / "cache"), **values}


@pytest.fixture()
def ragsweep_here(monkeypatch, capfd, caplog) -> Callable[..., Done]:
    """The command in this process (support.in_process): the probes' code path without a new interpreter."""

    def run(env: dict[str, str], *argv: str) -> Done:
        return run_here(list(argv), monkeypatch, capfd, caplog, env, TIMEOUT_S, drop=("OPENAI_", "RAGSWEEP_LLM"))

    return run


def _eval(run: Callable[..., Done], tmp_path: Path, env: dict[str, str], *extra: str) -> Done:
    argv = ["eval", "--dataset", str(DATASET), "--limit", "3", "--out", str(tmp_path / "runs"), "--name", "r"]
    return run(env, *argv, *extra)


def _one_line_rc2(done: Done, *expected: str) -> str:
    assert done.returncode == 2, f"rc {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragsweep: error:")]
    assert len(errors) == 1, done.stderr
    for text in expected:
        assert text in errors[0], errors[0]
    assert KEY not in done.stderr + done.stdout
    return errors[0]


def _no_run_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir()), sorted(p.name for p in runs.iterdir())


# ---------------------------------------------------------------- the LLM endpoint, probed first
def test_llm_with_nothing_listening_ends_before_any_work(tmp_path, ragsweep_here):
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = _eval(ragsweep_here, tmp_path, _env(tmp_path, OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY), "--llm")
    _one_line_rc2(done, f"the LLM endpoint {url} cannot be reached", "nothing listens at")
    _no_run_folder(tmp_path)


def test_llm_with_no_key_for_openai_ends_without_a_request(tmp_path, ragsweep_here):
    done = _eval(ragsweep_here, tmp_path, _env(tmp_path), "--llm")
    _one_line_rc2(done, "the LLM endpoint https://api.openai.com/v1 needs an API key", "OPENAI_API_KEY")
    _no_run_folder(tmp_path)


@pytest.mark.parametrize("extra", [(), ("--judge", "--ragas-llm")])
def test_a_refused_key_is_found_by_one_probe_and_no_case_is_asked(tmp_path, ragsweep_here, extra):
    """The answerer, the judge and ragas share one endpoint: one probe for all, and not one chat request."""
    server = FakeOpenAI(models_status=401).start()
    try:
        env = _env(tmp_path, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
        done = _eval(ragsweep_here, tmp_path, env, *extra, "--llm")
    finally:
        server.stop()
    _one_line_rc2(done, f"endpoint {server.base_url} refuses the key", "http 401")
    assert server.chat_requests() == 0 and server.requests == 0, server.log
    assert server.probes == 1
    _no_run_folder(tmp_path)


def test_an_llm_reranker_with_nothing_listening_ends_before_any_work(tmp_path, ragsweep_here):
    url = f"http://127.0.0.1:{free_port()}/v1"
    knobs = ("--set", "reranker=llm", "--set", "rerank_candidates=10", "--set", f"llm_base_url={url}")
    done = _eval(ragsweep_here, tmp_path, _env(tmp_path, OPENAI_API_KEY=KEY), *knobs)
    _one_line_rc2(done, f"the reranker's LLM endpoint {url} cannot be reached")
    _no_run_folder(tmp_path)


def test_a_sweep_that_answers_probes_before_parsing(tmp_path, ragsweep_here):
    url = f"http://127.0.0.1:{free_port()}/v1"
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  top_k: [3, 5]\nobjectives: [recall@k]\n")
    argv = ["sweep", "--dataset", str(DATASET), "--grid", str(grid), "--limit", "3", "--out", str(tmp_path / "runs")]
    done = ragsweep_here(_env(tmp_path, OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY), *argv, "--answers", "--llm")
    _one_line_rc2(done, f"the LLM endpoint {url} cannot be reached")
    assert "parse:" not in done.stderr, done.stderr


def test_generate_probes_its_endpoint_before_parsing(tmp_path, ragsweep_here):
    url = f"http://127.0.0.1:{free_port()}/v1"
    argv = ["generate", "--docs", str(DATASET / "docs"), "--out", str(tmp_path / "gen"), "--n", "2"]
    done = ragsweep_here(_env(tmp_path, OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY), *argv)
    _one_line_rc2(done, f"the LLM endpoint {url} cannot be reached")
    assert not (tmp_path / "gen").exists()

    server = FakeOpenAI(models_status=401).start()
    try:
        done = ragsweep_here(_env(tmp_path, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY), *argv)
    finally:
        server.stop()
    _one_line_rc2(done, "refuses the key")
    assert server.requests == 0 and server.probes == 1


# ---------------------------------------------------------------- Ray
def test_a_ray_address_where_nothing_listens_is_one_line(tmp_path, ragsweep_here):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{free_port()}"
    done = _eval(ragsweep_here, tmp_path, _env(tmp_path), "--executor", "ray", "--ray-address", address)
    _one_line_rc2(done, f"--ray-address {address}: cannot connect to a Ray cluster", "nothing listens at")
    _no_run_folder(tmp_path)


def test_a_ray_address_whose_host_does_not_resolve_is_named():
    pytest.importorskip("ray")
    from ragsweep.execution.ray_executor import unreachable_address

    assert "does not resolve" in (unreachable_address("no-such-host.invalid:6379") or "")
    assert "does not resolve" in (unreachable_address("ray://no-such-host.invalid:10001") or "")
    assert unreachable_address("auto") is None


# ---------------------------------------------------------------- --version
def test_version_is_the_installed_packages():
    done = subprocess.run([*RAGSWEEP, "--version"], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ragsweep {version('ragsweep')}"


# ---------------------------------------------------------------- --dry-run: no key, no price
def test_dry_run_needs_no_key_and_says_when_no_price_is_set(tmp_path, monkeypatch, capsys):
    from ragsweep.cli import main
    from ragsweep.cost.calls import NO_PRICE

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGSWEEP_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    argv = ["eval", "--dataset", str(DATASET), "--llm", "--judge", "--dry-run", "--limit", "2"]
    assert main([*argv, "--out", str(tmp_path / "runs")]) == 0
    estimate = json.loads(capsys.readouterr().out)
    for part in ("answer", "judge", "total"):
        assert estimate[part]["cost_usd"] is None and NO_PRICE in estimate[part]["notes"], estimate[part]
    assert estimate["total"]["calls"] == 4

    priced = tmp_path / "priced.yaml"
    default = (ROOT / "pipelines" / "default.yaml").read_text()
    priced.write_text(default + "\n$llm_price_per_1k_prompt: 0.5\n$llm_price_per_1k_completion: 1.5\n")
    assert main([*argv, "--pipeline", str(priced), "--out", str(tmp_path / "runs")]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    assert total["cost_usd"] == pytest.approx(
        total["prompt_tokens"] / 1000 * 0.5 + total["completion_tokens"] / 1000 * 1.5
    )
    assert NO_PRICE not in total["notes"]
    assert not (tmp_path / "runs").exists()


def test_a_cost_without_a_price_is_none_never_zero():
    from ragsweep.cost.calls import NO_PRICE, CallEstimate, combine, cost_text
    from ragsweep.llm.settings import LLMSettings

    unpriced = CallEstimate(what="a", model="m", calls=1, prompt_tokens=100).priced(LLMSettings())
    assert unpriced.cost_usd is None and unpriced.notes == [NO_PRICE]
    free = CallEstimate(what="b", model="m", calls=1, prompt_tokens=100).priced(LLMSettings(price_per_1k_prompt=0.0))
    assert free.cost_usd == 0.0  # a price of 0 set (a local model) is a cost of 0
    total = combine([unpriced, free])
    assert total.cost_usd is None and total.notes == [NO_PRICE]
    assert cost_text(None) == NO_PRICE and cost_text(0.0) == "$0.0000"


def test_a_key_that_only_lacks_the_models_permission_is_not_refused():
    from ragsweep.llm.probe import refuses_key

    assert refuses_key(401, '{"error": {"message": "Incorrect API key provided: sk-...", "code": "invalid_api_key"}}')
    assert refuses_key(403, "forbidden")
    assert not refuses_key(401, "You have insufficient permissions for this operation. Missing scopes: api.model.read")
    assert not refuses_key(404, "not found") and not refuses_key(200, "{}")
