"""An answer sweep of a user's app (tests/fixtures/apps/answer_sweep.yaml: a BaseRAGQuestionAnswerer
with prices) over two prompt templates (one inline, one from a file) and two ``search_topk`` of its
question answerer, against the loopback fake endpoint: ``--dry-run`` predicts the calls the sweep
then makes, each configuration's cost is in sweep.json, the terminal and report.html, a cost-quality
Pareto set is chosen, one index serves every configuration in one Pathway run, and a prompt two
configurations share is sent once."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from ragsweep.cli import main
from support import MINI as DATASET
from support import ROOT

APPS = ROOT / "tests" / "fixtures" / "apps"
APP = APPS / "answer_sweep.yaml"
GRID = APPS / "answer_grid.yaml"
LIMIT = 4


def _argv(out: Path, name: str, grid: Path = GRID, *extra: str) -> list[str]:
    return [
        "sweep", "--pipeline", str(APP), "--grid", str(grid), "--dataset", str(DATASET), "--split", "dev",
        "--limit", str(LIMIT), "--answers", "--llm", "--out", str(out), "--name", name, *extra,
    ]  # fmt: skip


@pytest.fixture
def fake(tmp_path, monkeypatch):
    server = FakeOpenAI().start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-answer-sweep")
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))  # cold: every call reaches the fake
    monkeypatch.delenv("RAGSWEEP_LLM_MODEL", raising=False)
    yield server
    server.stop()


@pytest.fixture
def together(monkeypatch):
    """How many question answerers each Pathway run of the app asked."""
    import ragsweep.answer.app as app_answerer  # where answering imports it from, when it asks

    runs: list[int] = []
    real = app_answerer.answer_together

    def spy(answerers, cases, scopes):
        runs.append(len(answerers))
        return real(answerers, cases, scopes)

    monkeypatch.setattr(app_answerer, "answer_together", spy)
    return runs


def test_dry_run_predicts_the_calls_and_the_sweep_prices_each_configuration(fake, tmp_path, capsys, together):
    assert main(_argv(tmp_path / "runs", "dry", GRID, "--dry-run")) == 0
    assert fake.requests == 0, "a dry run called the endpoint"
    estimate = json.loads(capsys.readouterr().out)
    assert not (tmp_path / "runs" / "dry").exists()
    assert len(estimate["configs"]) == 4 and estimate["calls"] == 4 * LIMIT
    (embeddings,) = estimate["embeddings"].values()  # one chunking: one index for the four
    assert embeddings["texts"] > 0 and embeddings["cost_usd"] == round(embeddings["tokens"] * 0.00002 / 1000, 6)

    fake.reset()
    assert main(_argv(tmp_path / "runs", "real")) == 0
    printed = capsys.readouterr().out
    sweep = json.loads((tmp_path / "runs" / "real" / "sweep.json").read_text())
    configs = {c["id"]: c for c in sweep["configs"]}
    assert set(configs) == set(estimate["configs"])
    for cid, predicted in estimate["configs"].items():
        assert predicted["calls"] == configs[cid]["cost"]["calls"], cid
    assert fake.chat_requests() == estimate["calls"], "predicted calls != requests the endpoint got"
    assert together == [4], "one Pathway run over one index for the four configurations"
    assert fake.in_flight_high <= 4, "four answerers asked together keep one app's capacity (4) in flight"

    topks = {c["params"]["question_answerer.search_topk"] for c in configs.values()}
    assert topks == {2, 4} and {c["top_k"] for c in configs.values()} == {2, 4}
    templates = {c["params"]["prompt_template"] for c in configs.values()}
    assert (APPS / "prompts" / "terse.txt").read_text() in templates and len(templates) == 2
    for c in configs.values():
        cost = c["cost"]
        assert cost["questions"] == LIMIT and cost["prompt_tokens"] > 0
        expected = (cost["prompt_tokens"] * 0.00015 + cost["completion_tokens"] * 0.0006) / 1000
        expected += cost["question_tokens"] * 0.00002 / 1000
        assert cost["usd"] == pytest.approx(expected, rel=1e-4)
        assert cost["usd_per_1k_questions"] == pytest.approx(1000 * cost["usd"] / LIMIT, rel=1e-3)
        lines = (tmp_path / "runs" / "real" / "configs" / c["id"] / "cases.jsonl").read_text().splitlines()
        per_case = [json.loads(line)["answer"]["cost_usd"] for line in lines]
        assert len(per_case) == LIMIT and all(usd > 0 for usd in per_case)
        llm_part = (cost["prompt_tokens"] * 0.00015 + cost["completion_tokens"] * 0.0006) / 1000
        assert sum(per_case) == pytest.approx(llm_part, rel=1e-4), "each case's price adds up to the total"
    deeper = [c["cost"]["prompt_tokens"] for c in configs.values() if c["top_k"] == 4]
    shallower = [c["cost"]["prompt_tokens"] for c in configs.values() if c["top_k"] == 2]
    assert min(deeper) > max(shallower), "four chunks in a prompt cost more than two"

    pareto = sweep["cost_pareto"]
    assert pareto["axis"] == "usd_per_1k_questions" and pareto["priced"]
    assert pareto["fronts"] and all(set(f) <= set(configs) and f for f in pareto["fronts"].values())
    assert "answer cost" in printed and "per 1,000 questions" in printed and "Pareto set (" in printed
    html = (tmp_path / "runs" / "real" / "report.html").read_text()
    assert "Quality vs cost" in html and "$ per 1,000 questions" in html


def test_a_prompt_two_configurations_share_is_sent_once(fake, tmp_path, capsys):
    """``llm.capacity`` changes no request: both configurations send the very same prompts."""
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  llm.capacity: [2, 4]\nobjectives: [recall@k]\nks: [4]\n")
    assert main(_argv(tmp_path / "runs", "dry", grid, "--dry-run")) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 2 * LIMIT
    assert main(_argv(tmp_path / "runs", "shared", grid)) == 0
    sweep = json.loads((tmp_path / "runs" / "shared" / "sweep.json").read_text())
    costs = [c["cost"] for c in sweep["configs"]]
    assert [c["calls"] for c in costs] == [LIMIT, LIMIT]
    assert fake.chat_requests() == LIMIT, "a prompt shared by two configurations was sent twice"
    assert sum(c["sent_calls"] for c in costs) == LIMIT
    assert costs[0]["usd"] == costs[1]["usd"], "the cost of serving does not depend on the cache"


def test_no_price_is_no_price_set_never_zero(fake, tmp_path, capsys):
    app = tmp_path / "app.yaml"
    app.write_text("\n".join(line for line in APP.read_text().splitlines() if "price" not in line))
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  question_answerer.search_topk: [2, 4]\nobjectives: [recall@k]\nks: [2, 4]\n")
    argv = _argv(tmp_path / "runs", "free", grid)
    argv[argv.index(str(APP))] = str(app)
    assert main([*argv, "--dry-run"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["usd"] == "no price set" and {c["usd"] for c in estimate["configs"].values()} == {"no price set"}
    assert main(argv) == 0
    printed = capsys.readouterr().out
    sweep = json.loads((tmp_path / "runs" / "free" / "sweep.json").read_text())
    assert all(c["cost"]["usd"] is None and c["cost"]["usd_per_1k_questions"] is None for c in sweep["configs"])
    assert sweep["cost_pareto"]["axis"] == "tokens_per_1k_questions" and not sweep["cost_pareto"]["priced"]
    assert "no price set" in printed and "$0" not in printed


def test_identical_requests_in_flight_at_once_are_sent_once():
    """Two question answerers' identical requests, in flight together on two event loops (threads, as
    Pathway runs them), before any disk cache could hold the reply: one call."""
    import asyncio
    import threading

    from ragsweep.answer.app import SharedCalls

    shared, sent, results = SharedCalls(), [], []
    gate = threading.Barrier(2)

    async def send():
        sent.append(1)
        await asyncio.sleep(0.2)
        return "reply"

    def ask():
        gate.wait()
        results.append(asyncio.run(shared.once("same body", send)))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(sent) == 1 and sorted(results) == [("reply", False), ("reply", True)]


def test_the_adaptive_answerers_iterations_as_an_axis(fake, tmp_path, capsys):
    """``max_iterations`` of an AdaptiveRAGQuestionAnswerer: the dry run bounds each configuration's
    calls (it stops at an answer), the sweep makes at least one and at most that many per question."""
    app = tmp_path / "adaptive.yaml"
    text = APP.read_text().replace("BaseRAGQuestionAnswerer", "AdaptiveRAGQuestionAnswerer")
    app.write_text(text.replace("  search_topk: 4\n", "  n_starting_documents: 1\n  factor: 2\n"))
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  question_answerer.max_iterations: [1, 3]\nobjectives: [recall@k]\nks: [1, 4]\n")
    argv = _argv(tmp_path / "runs", "adaptive", grid)
    argv[argv.index(str(APP))] = str(app)
    assert main([*argv, "--dry-run"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    sweep = json.loads((tmp_path / "runs" / "adaptive" / "sweep.json").read_text())
    for c in sweep["configs"]:
        predicted = estimate["configs"][c["id"]]
        iterations = c["params"]["question_answerer.max_iterations"]
        assert predicted["calls"] == iterations * LIMIT and not predicted["exact"]
        assert LIMIT <= c["cost"]["calls"] <= predicted["calls"], c["id"]
    assert fake.chat_requests() <= estimate["calls"]


def test_the_cost_pareto_set_keeps_what_nothing_beats_on_quality_and_cost():
    from ragsweep.cost.configuration import cost_pareto
    from ragsweep.cost.records import ConfigCost
    from ragsweep.evaluation.records import ConfigResult

    def row(cid: str, judge: float, f1: float, usd: float | None, tokens: float) -> ConfigResult:
        cost = ConfigCost(questions=10, usd_per_1k_questions=usd, tokens_per_1k_questions=tokens)
        return ConfigResult(id=cid, top_k=4, metrics={"judge_correct": judge, "token_f1": f1}, cost=cost)

    rows = [row("cheap", 0.5, 0.2, 1.0, 100), row("good", 0.9, 0.1, 3.0, 300), row("worse", 0.5, 0.3, 2.0, 200)]
    pareto = cost_pareto(rows, ["recall@k", "token_f1"])
    assert pareto is not None and pareto.priced and pareto.axis == "usd_per_1k_questions"
    assert pareto.fronts == {"token_f1": ["cheap", "worse"], "judge_correct": ["cheap", "good"]}
    rows[1].cost.usd_per_1k_questions = None  # one configuration without a price: all are compared on tokens
    unpriced = cost_pareto(rows)
    assert unpriced is not None and not unpriced.priced and unpriced.axis == "tokens_per_1k_questions"
    assert unpriced.fronts == {"judge_correct": ["cheap", "good"]}
    assert cost_pareto([ConfigResult(id="retrieval-only", top_k=4)]) is None


def test_answerers_asked_together_keep_one_apps_capacity_in_flight():
    """Six different requests from three event loops (threads) through one run's limit of 2."""
    import asyncio
    import threading

    from ragsweep.answer.app import SharedCalls

    shared, lock = SharedCalls(limit=2), threading.Lock()
    now, high = [0], [0]

    async def send():
        with lock:
            now[0] += 1
            high[0] = max(high[0], now[0])
        await asyncio.sleep(0.1)
        with lock:
            now[0] -= 1
        return "reply"

    async def two(first: int):
        return await asyncio.gather(shared.once(f"body {first}", send), shared.once(f"body {first + 1}", send))

    threads = [threading.Thread(target=lambda i=i: asyncio.run(two(2 * i))) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert high[0] == 2


def _changed(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [d for d in diff if d[:1] in "+-" and not d.startswith(("+++", "---"))]


def test_the_chosen_answer_configuration_is_written_back_and_eval_reproduces_it(fake, tmp_path, capsys):
    """--write-best over the answer axes: the app's file with the winner's prompt and search_topk (nothing
    else but the header), and `ragsweep eval --llm` of it answers each case as the sweep did."""
    best = tmp_path / "best.yaml"
    assert main(_argv(tmp_path / "runs", "w", GRID, "--write-best", str(best))) == 0
    sweep = json.loads((tmp_path / "runs" / "w" / "sweep.json").read_text())
    winner = sweep["best"]["recall@k"]
    params = next(c for c in sweep["configs"] if c["id"] == winner)["params"]
    original = APP.read_text()
    prompt_block = original.split("$prompt_template: |\n")[1].split("\n\nquestion_answerer")[0].splitlines()
    changed = [d for d in _changed(original, best.read_text()) if not d.startswith("+#")]
    allowed = {"-$prompt_template: |", *(f"-{line}" for line in prompt_block), "-  search_topk: 4"}
    assert {d for d in changed if d.startswith("-")} <= allowed
    assert ("+  search_topk: 2" in changed) == (params["question_answerer.search_topk"] == 2)

    assert main(["eval", "--pipeline", str(best), "--dataset", str(DATASET), "--split", "dev", "--limit", str(LIMIT),
                 "--llm", "--out", str(tmp_path / "runs"), "--name", "e"]) == 0  # fmt: skip
    swept = [json.loads(x) for x in (tmp_path / "runs" / "w" / "configs" / winner / "cases.jsonl").open()]
    again = {c["id"]: c for c in (json.loads(x) for x in (tmp_path / "runs" / "e" / "cases.jsonl").open())}
    assert len(swept) == LIMIT
    for case in swept:
        assert again[case["id"]]["answer"]["text"] == case["answer"]["text"], case["id"]
        assert again[case["id"]]["top_k"] == case["top_k"] == params["question_answerer.search_topk"]
        spans = [(h["doc_id"], h["start"], h["end"]) for h in case["hits"]]
        assert [(h["doc_id"], h["start"], h["end"]) for h in again[case["id"]]["hits"]] == spans, case["id"]
