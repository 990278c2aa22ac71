"""Metrics at a context-token budget (``recall@1500tok``): definition, chance and oracle, names, and
a sweep that prints each objective's chance level and lift over chance."""

import itertools
import json
from pathlib import Path

import pytest

from ragsweep.argtypes import budgets
from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.evaluation.case_scoring import build_case_result
from ragsweep.metrics.baselines import case_baselines, chance_estimate, oracle_estimate
from ragsweep.metrics.registry import ordered, spec, summary_metrics, unknown_name
from ragsweep.metrics.retrieval import Judgement, RankVerdict, per_case_value
from support import ROOT


def judged(chunks: list[tuple[int, set[str]]], items: tuple[str, ...] = ("a", "b")) -> Judgement:
    """A ranking of chunks given as (tokens, items covered), in rank order."""
    hits = [
        RankVerdict(rank=i, covers=frozenset(cov), relevant=bool(cov), grade=1 if cov else 0, tokens=tokens)
        for i, (tokens, cov) in enumerate(chunks, start=1)
    ]
    return Judgement(case_id="c", rule="evidence_offsets", items=dict.fromkeys(items, 1), hits=hits)


# ranks 1..4: 300 tokens covering a, 200 covering nothing, 500 covering b, 400 covering nothing
RANKING = [(300, {"a"}), (200, set()), (500, {"b"}), (400, set())]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("recall@500tok", 0.5),  # 300 + 200 = 500 fit; the 500-token chunk with b does not
        ("hit_rate@500tok", 1.0),
        ("recall@999tok", 0.5),  # 1000 tokens are needed for b's chunk
        ("recall@1000tok", 1.0),
        ("recall@299tok", 0.0),  # the first chunk is longer than the budget: an empty context
        ("hit_rate@299tok", 0.0),
        ("recall@100000tok", 1.0),
    ],
)
def test_budget_metrics_by_hand(name, expected):
    assert per_case_value(judged(RANKING), name) == pytest.approx(expected)


def test_a_smaller_chunk_further_down_never_skips_ahead():
    # 600 tokens first: nothing fits in 500, so the 100-token chunk covering a is not read
    assert per_case_value(judged([(600, set()), (100, {"a"})]), "recall@500tok") == 0.0


def test_unscored_case_and_missing_lengths():
    unanswerable = Judgement(case_id="u", rule="evidence_offsets", items={}, hits=[])
    assert per_case_value(unanswerable, "recall@1500tok") is None
    no_lengths = Judgement(
        case_id="c", rule="doc_id", items={"a": 1}, hits=[RankVerdict(rank=1, covers=frozenset("a"))]
    )
    with pytest.raises(ValueError, match="token count"):
        per_case_value(no_lengths, "recall@1500tok")


def test_chunk_lengths_are_the_splitters_own_count():
    from ragsweep.pipeline.chunking import OffsetTokenCountSplitter, chunk_tokens, split_tokens

    text = " ".join(f"word{i}" for i in range(400))  # no punctuation: every cut is at max_tokens
    pieces = split_tokens(text, 10, 50, "cl100k_base", OffsetTokenCountSplitter.PUNCTUATION)
    assert len(pieces) > 3
    assert [chunk_tokens(p) for p in pieces[:-1]] == [50] * (len(pieces) - 1)


# ------------------------------------------------------------------ chance and oracle

# A: 300 tokens covering a; B: 200 covering nothing; C: 500 covering b; budget 500. The six orders:
# ABC -> {A,B}: recall 1/2, hit 1;  ACB -> {A}: 1/2, 1;  BAC -> {B,A}: 1/2, 1;  BCA -> {B}: 0, 0;
# CAB -> {C}: 1/2, 1;  CBA -> {C}: 1/2, 1.  Chance: recall 5/12, hit 5/6. Oracle: one item (1/2), hit 1.
POOL = [(300, {"a"}), (200, set()), (500, {"b"})]


def test_chance_and_oracle_on_a_hand_example():
    pool = judged(POOL)
    recall = chance_estimate(pool, "recall@500tok")
    assert recall.method == "enumerated" and recall.value == pytest.approx(5 / 12)
    assert chance_estimate(pool, "hit_rate@500tok").value == pytest.approx(5 / 6)
    assert oracle_estimate(pool, "recall@500tok").value == pytest.approx(0.5)
    assert oracle_estimate(pool, "hit_rate@500tok").value == 1.0
    # every candidate fits: any order reads them all
    whole = chance_estimate(pool, "recall@1000tok")
    assert whole.method == "closed_form" and whole.value == 1.0


def test_exact_chance_matches_every_ordering_and_sampling_agrees():
    pool = judged([(120, {"a"}), (340, set()), (90, {"b"}), (260, {"a", "b"}), (410, set()), (150, set())])
    for budget in (200, 450, 700):
        name = f"recall@{budget}tok"
        orders = list(itertools.permutations(pool.hits))
        brute = sum(
            per_case_value(Judgement("c", "evidence_offsets", pool.items, list(o)), name) for o in orders
        ) / len(orders)
        exact = chance_estimate(pool, name)
        assert exact.method == "enumerated" and exact.value == pytest.approx(brute)
        sampled = chance_estimate(pool, name, exact_budget=1, samples=4000, seed=3)
        assert sampled.method == "sampled" and abs(sampled.value - brute) <= 4 * sampled.stderr + 1e-9
        assert sampled == chance_estimate(pool, name, exact_budget=1, samples=4000, seed=3)  # seeded


def test_budgeted_oracle_is_maximum_coverage_within_the_budget():
    # a alone costs 400, b alone 400, both together in one 500-token chunk
    pool = judged([(400, {"a"}), (400, {"b"}), (500, {"a", "b"}), (50, set())])
    assert oracle_estimate(pool, "recall@499tok").value == 0.5
    assert oracle_estimate(pool, "recall@500tok").value == 1.0
    levels = case_baselines([pool], ["recall@500tok", "hit_rate@500tok", "recall@3"])
    assert levels.oracle["c"] == {"recall@500tok": 1.0, "hit_rate@500tok": 1.0, "recall@3": 1.0}
    with pytest.raises(ValueError, match="extra_blank"):
        chance_estimate(pool, "recall@500tok", extra_blank=3)


# ------------------------------------------------------------------ names


def test_registry_accepts_budget_names_and_names_the_misspelt():
    assert unknown_name("recall@1500tok", [1, 5], [1500]) is None
    assert unknown_name("hit_rate@1500tok", [1, 5], [1500]) is None
    typo = unknown_name("recall@15OOtok", [1, 5], [1500])
    assert typo is not None and "did you mean recall@1500tok" in typo
    missing = unknown_name("recall@500tok", [1, 5], [1500])
    assert missing is not None and "add 500 to --budgets" in missing
    s = spec("recall@1500tok")
    assert (s.family, s.base, s.tokens, s.higher_is_better) == ("retrieval", "recall", 1500, True)
    assert ordered(["mrr", "recall@1500tok", "recall@5", "hit_rate@1500tok"]) == [
        "recall@5", "hit_rate@1500tok", "recall@1500tok", "mrr",
    ]  # fmt: skip
    assert summary_metrics(5, [1500])[6:8] == ["hit_rate@1500tok", "recall@1500tok"]


def test_budgets_option_parses_like_ks():
    import argparse

    assert budgets("1500,500,500") == [500, 1500]
    with pytest.raises(argparse.ArgumentTypeError, match="--budgets '0'"):
        budgets("0")
    with pytest.raises(argparse.ArgumentTypeError, match="--budgets '15OO'"):
        budgets("15OO")


# ------------------------------------------------------------------ the record


def _hit(rank: int, start: int, end: int, text: str) -> Hit:
    return Hit(rank=rank, score=1.0, text=text[start:end], doc_id="d.txt", start=start, end=end)


def test_a_list_too_short_to_fill_the_budget_has_no_value_and_says_why():
    text = "alpha beta gamma. " * 10 + "The governing law is Texas. " + "delta epsilon. " * 10
    law = text.index("The governing")
    chunks = [(0, law), (law, law + 28), (law + 28, len(text))]
    candidates = [_hit(i, s, e, text) for i, (s, e) in enumerate(chunks, start=1)]
    case = Case(
        id="q", question="law?", doc_scope=["d.txt"], evidence=[{"text": "governing law is Texas", "doc_id": "d.txt"}]
    )
    relevance = RelevanceConfig(rule="evidence_offsets")
    served = {2: [_hit(1, *chunks[1], text), _hit(2, *chunks[0], text)]}
    kwargs = dict(top_k=2, relevance=relevance, texts={"d.txt": text}, budgets=[10, 1500])
    short = build_case_result(case, served, candidates=candidates, **kwargs)
    assert short.metrics["recall@10tok"] == 1.0  # the law chunk's 7 tokens fit
    assert short.metrics["recall@1500tok"] is None and "@1500tok" in short.notes
    assert "depth 2" in short.notes["@1500tok"]
    assert short.chance["recall@1500tok"] == 1.0  # every candidate fits in 1500 tokens
    # the store had nothing more to serve: the list is all the context there is
    whole = build_case_result(case, served, candidates=candidates[:2], **kwargs)
    assert whole.metrics["recall@1500tok"] == 1.0 and "@1500tok" not in whole.notes


# ------------------------------------------------------------------ eval and sweep


def test_eval_reports_budget_metrics_with_their_chance(tmp_path):
    import ragsweep
    from ragsweep.core.errors import RunError

    options = dict(limit=3, ks=[1, 5, 16], progress=False)
    with pytest.raises(RunError, match="did you mean recall@1500tok"):
        ragsweep.evaluate(ROOT / "pipelines/default.yaml", ROOT / "datasets/cuad-mini", floors={"recall@15OOtok": 0.1},
                          budgets=[1500], **options)  # fmt: skip
    report = ragsweep.evaluate(
        ROOT / "pipelines/default.yaml", ROOT / "datasets/cuad-mini", budgets=[1500], out=tmp_path, **options
    )
    assert report.metrics["recall@1500tok"] is not None and report.budgets == [1500]
    assert report.baselines["recall@1500tok"]["chance"] is not None
    saved = json.loads(Path(report.run_dir, "report.json").read_text())
    assert "recall@1500tok" in saved["metrics"] and "hit_rate@1500tok" in saved["baselines"]
    assert "recall@1500tok" in Path(report.run_dir, "report.html").read_text()
    # the gate (--min, assert_quality, the pytest plugin) and compare read them as any metric
    from ragsweep.testing import FloorAtChanceWarning, QualityError, check_quality

    with pytest.warns(FloorAtChanceWarning, match=r"--min recall@1500tok=0.0 is at or below its chance level 0\."):
        check_quality(report, min={"recall@1500tok": 0.0})
    with pytest.raises(QualityError, match=r"recall@1500tok = .* < floor 1.01 \(95% CI .*chance"):
        check_quality(report, min={"recall@1500tok": 1.01})
    compared = ragsweep.compare(report, Path(report.run_dir))
    assert any(row.metric == "recall@1500tok" and row.n == 3 for row in compared.metrics)


def test_sweep_prints_and_stores_lift_over_chance(tmp_path, capsys):
    from ragsweep.commands.sweep import SweepOptions, run_sweep
    from ragsweep.core.errors import RunError
    from ragsweep.report.terminal import sweep_table

    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid:\n  chunking: [{min_tokens: 100, max_tokens: 200}, {min_tokens: 250, max_tokens: 600}]\n"
        "  retriever_mode: [bm25]\nbaseline: {min_tokens: 250}\n"
        "objectives: [recall@k, recall@1500tok]\nks: [1, 5, 16]\n"
    )
    base = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"), dataset=str(ROOT / "datasets" / "cuad-mini"),
        grid=str(grid), out=str(tmp_path / "runs"), progress=False, limit=4,
    )  # fmt: skip
    with pytest.raises(RunError, match="did you mean recall@1500tok"):
        run_sweep(SweepOptions(**base, objectives=["recall@15OOtok"], budgets=[1500]))
    sweep_dir, report = run_sweep(SweepOptions(**base))
    assert report.budgets == [1500] and len(report.configs) == 2
    stored = json.loads((sweep_dir / "sweep.json").read_text())
    for row in stored["configs"]:
        for m in ("recall@k", "recall@1500tok"):
            chance, lift = row["chance_level"][m], row["lift_over_chance"][m]
            assert chance is not None and 0.0 <= chance <= 1.0
            assert lift == pytest.approx(row["baselines"][m]["pipeline"] - chance)
    table = sweep_table(report)
    assert "chance" in table.splitlines()[2] and "lift" in table.splitlines()[2]
    for row in report.configs:
        cells = f"{row.lift_over_chance['recall@1500tok']:+.3f}"
        assert any(cells in line and f"{row.chance_level['recall@1500tok']:.3f}" in line for line in table.splitlines())
