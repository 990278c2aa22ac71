"""`ragsweep generate` against a deterministic fake endpoint: verification drops, seeds, dry run, failures.

The fake (a :class:`fake_openai.FakeOpenAI` subclass, so every other behaviour stays the
shared one) answers the generator's prompts from the passage it is shown:

- proposals: the question names the passage's first sentence, the answer and the quote
  are that sentence; ``#badquote`` in the passage -> a quote that is not in it;
  ``#dupe`` -> always the same question;
- unanswerable proposals: "What does the agreement say about <topic>?", the topic being the word
  after ``#topic:`` in the passage, else "zebra husbandry";
- support check: not supported when the evidence holds ``#unsupported``;
- answerability check: answered when a retrieved passage contains the question's topic.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from ragsweep.cost.calls import count_message_tokens
from ragsweep.datasets.loader import load_dataset
from ragsweep.generate.generator import generate
from ragsweep.generate.settings import GenerateSettings
from ragsweep.llm.client import LLMClient
from ragsweep.llm.settings import LLMSettings
from ragsweep.validate.parsed import validate_dataset
from support import ROOT

OVERRIDES = {"min_tokens": 30, "max_tokens": 90, "retriever_mode": "bm25", "top_k": 3}


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return m.group(1) if m else text


def _passages(user: str) -> list[str]:
    return [p.strip() for p in re.findall(r"<<<\n(.*?)\n>>>", user, re.S)]


def generation_reply(user: str) -> str | None:
    """The fake's reply to the generator's prompts, or None for any other request."""
    if '"quotes_1"' in user:
        a, b = (_first_sentence(p) for p in _passages(user))
        return json.dumps(
            {
                "question": f"How does '{a[:40]}' relate to '{b[:40]}'?",
                "answer": f"{a} {b}",
                "quotes_1": [a],
                "quotes_2": [b],
            }
        )
    if '"quotes"' in user:
        passage = _passages(user)[0]
        s = _first_sentence(passage)
        question = (
            "What does the dupe clause require of the supplier?"
            if "#dupe" in passage
            else f"What does the agreement say in '{s[:50]}'?"
        )
        quote = "This sentence was invented by the model and is nowhere." if "#badquote" in passage else s
        return json.dumps({"question": question, "answer": s, "quotes": [quote]})
    if '"why_unanswerable"' in user:
        passage = _passages(user)[0]
        m = re.search(r"#topic:(\w+)", passage)
        topic = m.group(1) if m else "zebra husbandry"
        return json.dumps({"question": f"What does the agreement say about {topic}?", "why_unanswerable": "not in it"})
    if '"supported"' in user:
        evidence = user.split("Question:")[0]
        ok = "#unsupported" not in evidence
        return json.dumps({"supported": ok, "reason": "stated" if ok else "the evidence does not say that"})
    if '"answered"' in user:
        topic = re.search(r"say about (.+?)\?", user).group(1).lower()
        passages = re.findall(r"^\[(\d+)\] (.*)$", user.split("Question:")[0], re.M)
        for n, text in passages:
            # the question's topic named outside the marker itself
            if re.search(rf"(?<!#topic:){re.escape(topic)}", text.lower()):
                return json.dumps({"answered": True, "passage": int(n), "reason": f"passage {n} covers {topic}"})
        return json.dumps({"answered": False, "passage": None, "reason": "none of them"})
    return None


class GenerationFake(FakeOpenAI):
    """The shared fake, plus replies to the generator's prompts."""

    def handle(self, path, raw, body, *rest):
        if path.endswith("/chat/completions"):
            messages = body.get("messages") or []
            user = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "user")
            text = generation_reply(user)
            if text is not None:
                with self._lock:
                    self.requests += 1
                    self.log.append((path, body))
                words = sum(len((m.get("content") or "").split()) for m in messages)
                reply = {
                    "id": "chatcmpl-gen",
                    "object": "chat.completion",
                    "created": 1700000000,
                    "model": body.get("model", "fake-model"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": {
                        "prompt_tokens": words,
                        "completion_tokens": len(text.split()),
                        "total_tokens": words + len(text.split()),
                    },
                }
                return 200, json.dumps(reply).encode(), {}
        return super().handle(path, raw, body, *rest)


@pytest.fixture
def fake():
    server = GenerationFake().start()
    try:
        yield server
    finally:
        server.stop()


def _settings(fake, tmp_path, cache="llm-cache") -> LLMSettings:
    return LLMSettings(
        base_url=fake.base_url,
        model="fake-model",
        api_key="sk-test",
        timeout=5,
        max_retries=0,
        concurrency=2,
        cache_dir=str(tmp_path / cache),
        price_per_1k_prompt=0.5,
        price_per_1k_completion=1.5,
    )


def _para(subject: str, marker: str = "") -> str:
    """One paragraph of about 60 words (one chunk at max_tokens=90)."""
    return (
        f"The {subject} clause {marker} obliges the supplier to act within thirty days of a written request "
        f"from the buyer. Under the {subject} terms {marker} the buyer may inspect the records of the supplier at "
        f"reasonable times during business hours, and the supplier keeps those records for five years "
        f"after the end of the term of this agreement."
    )


def _docs(root: Path, files: dict[str, str]) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def _options(docs: Path, out: Path, **kw) -> GenerateSettings:
    base = dict(
        docs=str(docs) if docs else None,
        out=str(out),
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        overrides=OVERRIDES,
        progress=False,
        max_rounds=1,
        oversample=1.0,
    )
    return GenerateSettings(**{**base, **kw})


def _cases(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]


def _dropped(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen-corpus")
    return _docs(
        root,
        {
            "audit.txt": _para("audit"),
            "badquote.txt": _para("pricing", "#badquote"),
            "unsupported.txt": _para("delivery", "#unsupported"),
            "dupe.txt": _para("dupe", "#dupe") + "\n\n" + _para("dupe renewal", "#dupe"),
            "dupe-other.txt": _para("dupe", "#dupe"),
        },
    )


def test_verification_drops_and_a_valid_dataset(fake, corpus_dir, tmp_path):
    out = tmp_path / "gen"
    result = generate(
        _options(corpus_dir, out, n=10, types=["single_hop"]),
        client=LLMClient(_settings(fake, tmp_path)),
        log=lambda m: None,
    )
    assert result["problems"] == []
    assert validate_dataset(out) == []
    assert result["dropped"] == {"answer_not_supported": 1, "near_duplicate": 1, "quote_not_found": 1}
    drops = {d["reason"]: d for d in _dropped(out)}
    assert drops["quote_not_found"]["sources"][0]["doc_id"] == "badquote.txt"
    assert drops["answer_not_supported"]["sources"][0]["doc_id"] == "unsupported.txt"
    assert drops["near_duplicate"]["sources"][0]["doc_id"] == "dupe.txt"  # the second chunk of the same document
    cases = _cases(out)
    # audit, one of dupe.txt's two chunks, and dupe-other.txt (the same question about another document is kept)
    assert sorted(c["doc_scope"][0] for c in cases) == ["audit.txt", "dupe-other.txt", "dupe.txt"]
    assert result["short"] == {"single_hop": 7}
    dataset = load_dataset(out)
    texts = {}
    from ragsweep.pipeline.corpus import parse_corpus

    for doc in parse_corpus(corpus_dir).documents:
        texts[doc.doc_id] = doc.text
    for case in dataset.cases:
        assert case.type == "single_hop" and case.split in ("dev", "test") and case.reference_answer
        assert len(case.evidence) >= 1 and "evidence_spans" not in case.meta  # offsets live in the evidence
        assert case.meta["evidence_methods"] == ["exact"] * len(case.evidence)
        for ev in case.evidence:  # the canonical record carries the exact offsets into the parsed text
            assert ev.start is not None and texts[ev.doc_id][ev.start : ev.end] == ev.text
    readme = (out / "README.md").read_text()
    for needle in (
        "fake-model",
        "seed: 0",
        "quote_not_found",
        "answer_not_supported",
        "near_duplicate",
        "single_hop proposal",
        "support check",
        "| single_hop | 10 | 6 | 3 |",
    ):
        assert needle in readme, needle
    settings = (out / "dataset.yaml").read_text()
    assert "relevance: evidence_offsets" in settings
    assert sorted(p.name for p in (out / "docs").iterdir()) == sorted(p.name for p in corpus_dir.iterdir())
    usage = json.loads((out / "generation.json").read_text())["usage"]
    assert usage["propose"]["calls"] == 6 and usage["support"]["calls"] == 4  # none for dropped quotes / duplicates


def test_a_wrong_offset_in_a_generated_set_is_named(fake, corpus_dir, tmp_path):
    out = tmp_path / "gen"
    generate(
        _options(corpus_dir, out, n=1, types=["single_hop"]),
        client=LLMClient(_settings(fake, tmp_path)),
        log=lambda m: None,
    )
    cases = _cases(out)
    assert validate_dataset(out) == [] and cases[0]["evidence"][0]["start"] >= 0
    evidence = cases[0]["evidence"][0]
    moved = {**evidence, "start": evidence["start"] + 4, "end": evidence["end"] + 4}
    (out / "cases.jsonl").write_text(json.dumps({**cases[0], "evidence": [moved]}) + "\n", encoding="utf-8")
    problems = [str(p) for p in validate_dataset(out)]
    assert len(problems) == 1
    assert problems[0].startswith(
        f"cases.jsonl:1: evidence[0]: case {cases[0]['id']!r}: the parsed text of "
        f"{evidence['doc_id']!r} at [{moved['start']}, {moved['end']}) is "
    )
    assert f", not the quote {evidence['text'][:40]!r}"[:-1] in problems[0]
    assert problems[0].endswith("(compared after normalising quotes, dashes, Unicode forms, case and whitespace)")


def test_unanswerable_checked_against_the_corpus(fake, tmp_path):
    docs = _docs(
        tmp_path,
        {
            # the proposal asks about "warranty"; another chunk of the same document answers it
            "warranty.txt": _para("audit", "#topic:warranty")
            + "\n\n"
            + "The warranty given by the supplier lasts for two years from delivery of the goods. "
            + _para("warranty"),
            "plain.txt": _para("audit"),
        },
    )
    out = tmp_path / "gen"
    result = generate(
        _options(docs, out, n=4, types=["unanswerable"], check_k=3),
        client=LLMClient(_settings(fake, tmp_path)),
        log=lambda m: None,
    )
    assert result["problems"] == []
    assert result["dropped"].get("answerable", 0) >= 1
    drop = next(d for d in _dropped(out) if d["reason"] == "answerable")
    assert "warranty" in drop["question"] and drop["checks"]["answerability"]["answered"] is True
    cases = _cases(out)
    assert cases and all(
        c["unanswerable"] and "evidence" not in c and "zebra husbandry" in c["question"] for c in cases
    )
    assert all(c["meta"]["checks"]["answerability"]["answered"] is False for c in cases)


def test_multi_hop_needs_evidence_from_both_passages(fake, corpus_dir, tmp_path):
    out = tmp_path / "gen"
    result = generate(
        _options(corpus_dir, out, n=2, types=["multi_hop"]),
        client=LLMClient(_settings(fake, tmp_path)),
        log=lambda m: None,
    )
    assert result["problems"] == []
    for case in _cases(out):
        sources = case["meta"]["source_chunks"]
        assert len(sources) == 2
        assert {e["doc_id"] for e in case["evidence"]} == {s["doc_id"] for s in sources}
        assert all(0 <= e["start"] < e["end"] for e in case["evidence"])
        assert case["doc_scope"] == sorted({s["doc_id"] for s in sources})


def test_same_seed_same_set_other_seed_other_passages(fake, corpus_dir, tmp_path):
    def run(seed: int, name: str) -> list[dict]:
        out = tmp_path / name
        generate(
            _options(corpus_dir, out, n=3, types=["single_hop", "unanswerable"], seed=seed),
            client=LLMClient(_settings(fake, tmp_path, cache=f"cache-{name}")),
            log=lambda m: None,
        )
        return _cases(out)

    first, again, other = run(3, "a"), run(3, "b"), run(4, "c")
    assert first == again  # no shared reply cache: the seed alone fixes passages, order, ids and splits
    assert [c["meta"]["source_chunks"] for c in first] != [c["meta"]["source_chunks"] for c in other]


def test_dry_run_estimates_without_calling(fake, tmp_path):
    docs = _docs(tmp_path, {f"d{i}.txt": _para(f"audit{i}") for i in range(4)})
    settings = _settings(fake, tmp_path)
    options = _options(docs, tmp_path / "gen", n=6, dry_run=True, check_k=2)
    estimate = generate(options, client=LLMClient(settings), log=lambda m: None)
    assert fake.requests == 0 and not (tmp_path / "gen").exists()
    assert estimate["requested"] == {"single_hop": 2, "multi_hop": 2, "unanswerable": 2}
    assert estimate["propose"]["calls"] == 6
    assert estimate["support"]["calls"] == 4 and estimate["answerability"]["calls"] == 2
    assert estimate["total"]["calls"] == 12
    assert estimate["total"]["cost_usd"] == pytest.approx(
        (estimate["total"]["prompt_tokens"] * 0.5 + estimate["total"]["completion_tokens"] * 1.5) / 1000, abs=1e-6
    )

    # the real run sends exactly the proposal prompts the estimate counted
    generate(options.model_copy(update={"dry_run": False}), client=LLMClient(settings), log=lambda m: None)
    sent = [
        body["messages"]
        for path, body in fake.log
        if path.endswith("/chat/completions") and '"question": "..."' in body["messages"][-1]["content"]
    ]
    assert len(sent) == 6
    assert sum(count_message_tokens(m, "fake-model") for m in sent) == estimate["propose"]["prompt_tokens"]


def test_from_failures_same_type_other_documents(fake, corpus_dir, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    failed = {
        "id": "c1",
        "question": "What does the audit clause oblige the supplier to do?",
        "type": "Audit Rights",
        "doc_scope": ["audit.txt"],
        "unanswerable": False,
        "top_k": 3,
        "hits": [
            {
                "rank": 1,
                "score": 1.0,
                "text": "x",
                "doc_id": "audit.txt",
                "start": 0,
                "end": 1,
                "relevant": False,
                "grade": 0,
            }
        ],
    }
    passed = {**failed, "id": "c2", "hits": [{**failed["hits"][0], "relevant": True}]}
    (run / "cases.jsonl").write_text(json.dumps(failed) + "\n" + json.dumps(passed) + "\n")
    (run / "report.json").write_text(json.dumps({"manifest": {"corpus": {"docs_dir": str(corpus_dir)}}}))
    out = tmp_path / "grown"
    options = _options(None, out, n=2, from_failures=str(run), types=["single_hop"])
    result = generate(options, client=LLMClient(_settings(fake, tmp_path)), log=lambda m: None)
    assert result["problems"] == []
    cases = _cases(out)
    assert cases
    for case in cases:
        assert case["type"] == "Audit Rights" and case["meta"]["kind"] == "single_hop"
        assert "audit.txt" not in case["doc_scope"]
        assert case["meta"]["from_failure"]["id"] == "c1"
    prompts = [b["messages"][-1]["content"] for p, b in fake.log if p.endswith("/chat/completions")]
    assert any('category "Audit Rights"' in p and failed["question"] in p for p in prompts)


def test_cli_generate(fake, corpus_dir, tmp_path, monkeypatch, capsys):
    from ragsweep.cli import main

    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
    out = tmp_path / "cli-gen"
    args = [
        "generate",
        "--docs",
        str(corpus_dir),
        "--out",
        str(out),
        "--n",
        "2",
        "--types",
        "single_hop",
        "--seed",
        "1",
        "--pipeline",
        str(ROOT / "pipelines" / "default.yaml"),
        *[x for k, v in OVERRIDES.items() for x in ("--set", f"{k}={v}")],
    ]
    assert main(args) == 0
    assert len(_cases(out)) == 2 and validate_dataset(out) == []
    printed = capsys.readouterr().out  # a second round replaced the first one's two drops
    assert "failed: 0.0%)" in printed and "stopped after 2 round(s): every kind has its cases" in printed
    assert main(args) == 2  # the folder exists: not replaced without --force
    with pytest.raises(SystemExit):
        main(["generate", "--docs", str(corpus_dir), "--out", str(tmp_path / "x"), "--types", "single_hop,bogus"])


class FlakyGenerationFake(GenerationFake):
    """A proposal whose passage holds ``#flaky`` gets a 500 the first time it is asked;
    ``down=True``: every chat request gets a 500 (an endpoint that is down)."""

    def __init__(self, down: bool = False):
        super().__init__()
        self.down = down
        self.failed: set[str] = set()

    def handle(self, path, raw, body, *rest):
        user = "\n".join(m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "user")
        first = "#flaky" in user and '"quotes"' in user and user not in self.failed
        if path.endswith("/chat/completions") and (self.down or first):
            self.failed.add(user)
            with self._lock:
                self.requests += 1
            return 500, b'{"error": {"message": "the model crashed"}}', {}
        return super().handle(path, raw, body, *rest)


def test_a_candidate_whose_call_failed_is_asked_again_not_replaced(tmp_path):
    """A call that failed at the endpoint says nothing of its passage: the next round asks it again
    (the set is the one a run without the failure makes), and generation goes on until it has --n."""
    docs = _docs(tmp_path, {"a.txt": _para("audit", "#flaky"), "b.txt": _para("billing")})
    server = FlakyGenerationFake().start()
    try:
        out = tmp_path / "gen"
        options = _options(docs, out, n=2, types=["single_hop"], max_rounds=3)
        result = generate(options, client=LLMClient(_settings(server, tmp_path)), log=lambda m: None)
    finally:
        server.stop()
    assert result["cases"] == 2 and result["short"] == {}, result
    assert sorted(c["doc_scope"][0] for c in _cases(out)) == ["a.txt", "b.txt"]
    assert result["dropped"] == {} and result["rounds"] == 2
    assert result["stopped"] == "every kind has its cases"
    assert result["proposed"] == {"single_hop": 2}  # the second ask is no new proposal
    calls = result["llm_calls"]
    assert calls["failed"] == 1 and calls["errors"] == {"http 500": 1} and calls["failure_rate"] == pytest.approx(1 / 5)


def test_generation_stops_and_says_why_when_every_call_fails(tmp_path, capsys, monkeypatch):
    from ragsweep.cli import main

    docs = _docs(tmp_path, {"a.txt": _para("audit"), "b.txt": _para("billing")})
    server = FlakyGenerationFake(down=True).start()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
        args = ["generate", "--docs", str(docs), "--out", str(tmp_path / "gen"), "--n", "2", "--types", "single_hop"]
        overrides = [x for k, v in {**OVERRIDES, "llm_max_retries": 0}.items() for x in ("--set", f"{k}={v}")]
        code = main([*args, "--pipeline", str(ROOT / "pipelines" / "default.yaml"), *overrides])
    finally:
        server.stop()
    out, err = capsys.readouterr()
    assert code == 1 and server.requests == 2, "one round, not ten"  # 1: an empty set fails validate
    assert "cases.jsonl: empty file: no cases" in err
    why = "every one of the 2 LLM calls of round 1 failed (2x http 500)"
    assert f"stopped after 1 round(s): {why}" in out
    assert "LLM: 2 calls (0 from cache, 2 failed: 100.0%)" in out
    assert "no price set" in out and "$0.0000" not in out, "a cost without a price set is no $0"
    assert "failed: 2x http 500; endpoint: 2 request(s)" in out
    assert f"fewer cases than requested: {{'single_hop': 2}} ({why})" in err
    generation = json.loads((tmp_path / "gen" / "generation.json").read_text())
    assert generation["stopped"] == why and generation["dropped"] == {"llm_error": 2}


def test_sampling_is_stratified_over_documents_and_seeded():
    from ragsweep.generate.sampling import ChunkSampler, SourceChunk

    words = " ".join(["word"] * 40)
    chunks = [
        SourceChunk(f"d{d}.txt", i * 300, i * 300 + 250, f"chunk {d}-{i} {words}") for d in range(3) for i in range(4)
    ]
    sampler = ChunkSampler(chunks, seed=5)
    first = sampler.draw(3)
    assert len({c.doc_id for c in first}) == 3  # one per document before any document gets a second
    rest = sampler.draw(100)
    assert len(first) + len(rest) == 12 and len({c.key for c in first + rest}) == 12  # never the same chunk twice
    again = ChunkSampler(chunks, seed=5).draw(12)
    assert again == first + rest
    assert ChunkSampler(chunks, seed=6).draw(12) != again
    pairs = ChunkSampler(chunks, seed=5).draw_pairs(6)
    assert len(pairs) == 6 and all(a.doc_id == b.doc_id and a.start < b.start for a, b in pairs)


def test_failure_reasons():
    from ragsweep.evaluation.records import CaseResult
    from ragsweep.generate.failures import failure_reason

    def case(**fields):
        return CaseResult.model_validate({"id": "c", "question": "q?", "top_k": 1, **fields})

    hit = {"rank": 1, "score": 1.0, "text": "x", "doc_id": "a", "start": 0, "end": 1, "relevant": False}
    relevant = {**hit, "relevant": True}
    assert failure_reason(case(hits=[hit])) == "retrieval_miss"
    assert failure_reason(case(hits=[relevant], judge={"is_correct": False})) == "judged_wrong"
    assert failure_reason(case(hits=[relevant], answer={"text": "", "abstained": True})) == "abstained"
    assert failure_reason(case(hits=[relevant], answer={"text": "", "error": "timeout"})) == "answer_error"
    assert failure_reason(case(hits=[relevant], answer={"text": "x"})) is None
    assert (
        failure_reason(case(unanswerable=True, answer={"text": "Delaware", "abstained": False}))
        == "answered_unanswerable"
    )
    assert failure_reason(case(unanswerable=True, answer={"text": "No information found.", "abstained": True})) is None


def test_failed_seeds_of_every_eval_layout():
    from ragsweep.generate.failures import FailuresError, failed_seeds, read_run

    runs = ROOT / "tests" / "fixtures" / "runs"
    compact, sources = read_run(runs / "eval")  # compact lines, hit texts in chunks.jsonl
    full, _ = read_run(runs / "eval_layout1")  # every hit with its text, no top_k
    seeds = failed_seeds(compact)
    assert seeds and seeds == failed_seeds(full)
    assert {s.failure for s in seeds} == {"retrieval_miss", "judged_wrong"}
    assert sources.docs_dir() == "datasets/cuad_small/docs" and sources.dataset.path == "datasets/cuad_small"
    with pytest.raises(FailuresError, match="no cases.jsonl"):
        read_run(runs)
