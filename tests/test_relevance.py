"""Relevance rules: doc_id, evidence_offsets (located spans or chunk text), word_overlap (Pathway)."""

from __future__ import annotations

import pytest

from ragsweep.core.hits import Hit
from ragsweep.datasets import Case, RelevanceConfig, load_dataset
from ragsweep.metrics.relevance import (
    locate_span,
    locate_spans,
    mark_hits,
    normalize,
    text_overlap,
    word_overlap_ratio,
)
from ragsweep.metrics.retrieval import per_case_value
from support import MINI

DOC = (
    "MASTER AGREEMENT\n\nThis  Agreement is made between ACME Corp. (\u201cLicensor\u201d) and\n"
    "Foo Inc. (\u201cLicensee\u201d).\n\n5. Non\u2011Transferable License. The license granted "
    "hereunder is non-\ntransferable and may not be assigned.\n" + "Filler text. " * 40 + "\nEND"
)


def _hit(rank, start, end, doc="a.txt", text=None):
    return Hit(
        rank=rank, score=1.0 / rank, text=DOC[start:end] if text is None else text, doc_id=doc, start=start, end=end
    )


def test_normalize_and_locate_exact():
    assert normalize("  A\u00a0 \u201cB\u201d\n\u2013 c ") == 'a "b" - c'
    span = 'ACME Corp. ("Licensor") and Foo Inc.'
    start, end = locate_span(DOC, span)
    assert DOC[start:end] == "ACME Corp. (\u201cLicensor\u201d) and\nFoo Inc."
    assert locate_spans(DOC, "made between")[0] == "exact"


def test_locate_alnum_and_fuzzy_and_missing():
    how, occ = locate_spans(DOC, "the license granted hereunder is non-transferable")
    assert how == "alnum" and DOC[occ[0][0] : occ[0][1]].endswith("non-\ntransferable")
    how, occ = locate_spans(DOC, "The license granted hereunder is non-transferrable and may not be asigned")
    assert how == "fuzzy" and "may not be assigned" in DOC[occ[0][0] : occ[0][1] + 2]
    assert locate_span(DOC, "an entirely different clause about insurance") is None
    assert locate_spans(DOC, "Filler text.")[1][1][0] > locate_spans(DOC, "Filler text.")[1][0][0]  # every occurrence


def test_doc_id_rule_grades_and_duplicates():
    case = Case(id="c", question="q", relevant_ids=["a.txt", {"id": "b.txt", "grade": 3}, {"id": "z.txt", "grade": 0}])
    hits = [_hit(1, 0, 10, "x.txt"), _hit(2, 0, 10, "b.txt"), _hit(3, 10, 20, "b.txt"), _hit(4, 0, 5, "z.txt")]
    j = mark_hits(case, hits, "doc_id")
    assert j.rule == "doc_id" and j.items == {"a.txt": 1, "b.txt": 3}
    assert [h.relevant for h in j.hits] == [False, True, True, False]
    assert [h.grade for h in j.hits] == [0, 3, 3, 0]


def test_evidence_offsets_overlap_criterion():
    span = "The license granted hereunder is non-\ntransferable and may not be assigned."
    s0 = DOC.index("The license")
    s1 = s0 + len(span)
    case = Case(id="c", question="q", evidence=[{"text": span, "doc_id": "a.txt"}])
    cfg = RelevanceConfig(rule="evidence_offsets", evidence_min_overlap_fraction=0.5, evidence_min_overlap_chars=100)
    need = -(-len(span) // 2)  # span is shorter than 200 chars: half of it
    hits = [
        _hit(1, s0 + len(span) - need, s1 + 50),  # exactly `need` chars of the span
        _hit(2, s0 + len(span) - need + 1, s1 + 50),  # one char short
        _hit(3, s0, s1, doc="b.txt"),  # right offsets, wrong document
        _hit(4, 0, len(DOC)),  # the whole document
    ]
    j = mark_hits(case, hits, cfg, parsed_texts={"a.txt": DOC})
    assert j.rule == "evidence_offsets"
    assert [h.relevant for h in j.hits] == [True, False, False, True]
    assert j.detail.located == {"e0@a.txt": "exact"}


def test_evidence_offsets_long_span_needs_min_chars():
    doc = "Preamble. " + " ".join(f"word{i}" for i in range(300)) + " End."
    span = doc[10:412]  # "word0 ... word57": starts and ends on word boundaries (doc[10:410] ends in "word5|7")
    s1 = 412
    case = Case(id="c", question="q", evidence=[span])
    hits = [
        Hit(rank=r, score=1.0, text=doc[s:e], doc_id="a.txt", start=s, end=e)
        for r, (s, e) in enumerate([(s1 - 100, s1 + 100), (s1 - 99, s1 + 100)], start=1)
    ]
    j = mark_hits(case, hits, "evidence_offsets", {"a.txt": doc})
    assert [h.relevant for h in j.hits] == [True, False]  # 100 chars of overlap, then 99


def test_evidence_offsets_chunk_text_fallback_without_parsed_text():
    span = "The license granted hereunder is non-transferable and may not be assigned."
    case = Case(id="c", question="q", evidence=[span])
    inside = "5. Non-Transferable License. " + span + " Next clause."
    head = "Some preamble text that is long enough. The license granted hereunder is non-"
    short_edge = "text that ends with The license"
    hits = [
        _hit(1, 0, 1, text=inside),
        _hit(2, 0, 1, text=head),
        _hit(3, 0, 1, text=short_edge),
        _hit(4, 0, 1, text="unrelated"),
    ]
    j = mark_hits(case, hits, "evidence_offsets", parsed_texts=None)
    assert [h.relevant for h in j.hits] == [True, True, False, False]
    assert j.detail.located == {"e0@a.txt": "no_text"}
    assert text_overlap(head, span) == len(normalize("The license granted hereunder is non-"))


def test_word_overlap_is_pathways_rule():
    assert word_overlap_ratio("a b c d", "x a b c y") == 0.75
    assert word_overlap_ratio("Foo Inc.", "foo inc.") == 0.0  # case-sensitive, split on spaces only
    case = Case(id="c", question="q", evidence=["alpha beta gamma delta", "epsilon zeta"])
    hits = [
        Hit(rank=1, score=1, text="nothing here", doc_id="a", start=0, end=1),
        Hit(rank=2, score=1, text="alpha beta gamma", doc_id="a", start=0, end=1),  # 3/4 of span 0
        Hit(rank=3, score=1, text="alpha beta epsilon", doc_id="a", start=0, end=1),  # only the joined text: 3/6
        Hit(rank=4, score=1, text="alpha beta gamma epsilon", doc_id="a", start=0, end=1),  # joined: 4/6 >= 0.65
    ]
    j = mark_hits(case, hits, RelevanceConfig(rule="word_overlap", word_overlap_threshold=0.65))
    assert j.rule == "word_overlap"
    assert [sorted(h.covers) for h in j.hits] == [[], ["e0"], [], ["e0"]]
    assert [h.relevant for h in j.hits] == [False, True, False, True]
    case2 = Case(id="d", question="q", evidence=["alpha beta", "epsilon zeta"])
    j2 = mark_hits(case2, [Hit(rank=1, score=1, text="alpha beta epsilon", doc_id="a", start=0, end=1)], "word_overlap")
    assert j2.hits[0].covers == frozenset({"e0"})


def test_unanswerable_and_rule_fallback():
    un = mark_hits(Case(id="u", question="q", unanswerable=True), [_hit(1, 0, 5)], "evidence_offsets")
    assert un.excluded == "unanswerable" and un.rule == "evidence_offsets" and not un.scored
    only_ids = mark_hits(Case(id="d", question="q", relevant_ids=["a.txt"]), [_hit(1, 0, 5)], "evidence_offsets")
    assert only_ids.rule == "doc_id" and only_ids.hits[0].relevant


@pytest.fixture(scope="module")
def mini():
    ds = load_dataset(MINI)
    texts = {d: (ds.docs_dir / d).read_text(encoding="utf-8") for d in ds.doc_ids()}
    return ds, texts


def test_cuad_mini_spans_are_located_exactly(mini):
    ds, texts = mini
    for case in ds.cases:
        for ev in case.evidence:
            how, occ = locate_spans(texts[ev.doc_id], ev.text)
            assert how == "exact" and occ, (case.id, ev.text[:60])


def _scores(ds, hits_by_case, metrics, texts):
    """Each case judged by the dataset's rule and scored, as an eval run does; the means over the
    cases with a value (first_relevant_rank: over the cases where a relevant chunk came back)."""
    judged = [mark_hits(case, hits_by_case.get(case.id, ()), ds.relevance, texts) for case in ds.cases]
    per_case = {j.case_id: {m: per_case_value(j, m) for m in metrics} for j in judged}
    means = {}
    for m in metrics:
        values = [v[m] for v in per_case.values() if v[m] is not None]
        means[m] = sum(values) / len(values) if values else None
    return judged, per_case, means


def test_scoring_cuad_mini_oracle_and_windows(mini):
    ds, texts = mini
    windows, oracle = {}, {}
    for case in ds.cases:
        doc = case.doc_scope[0]
        text = texts[doc]
        hits = [
            Hit(rank=i + 1, score=-i, text=text[s : s + 800], doc_id=doc, start=s, end=min(len(text), s + 800))
            for i, s in enumerate(range(0, len(text), 600))
        ]
        windows[case.id] = hits
        if case.evidence:  # one chunk per evidence span, exactly the span
            spans = [locate_span(text, e.text) for e in case.evidence]
            oracle[case.id] = [
                Hit(rank=i + 1, score=1.0, text=text[s:e], doc_id=doc, start=s, end=e) for i, (s, e) in enumerate(spans)
            ]
    judged, _, perfect = _scores(ds, oracle, ["recall@50", "hit_rate@1", "mrr", "first_relevant_rank"], texts)
    assert {j.rule for j in judged} == {"evidence_offsets"}
    scored = [j for j in judged if j.scored]
    excluded = {j.case_id: j.excluded for j in judged if not j.scored}
    assert len(scored) == 39 and excluded == {c.id: "unanswerable" for c in ds.cases if c.unanswerable}
    assert perfect["recall@50"] == 1.0 and perfect["hit_rate@1"] == 1.0
    assert perfect["first_relevant_rank"] == 1.0
    assert all(per_case_value(j, "first_relevant_rank") is not None for j in scored)  # no miss
    _, per_case, res = _scores(ds, windows, ["recall@100", "ndcg@10", "precision@5"], texts)
    assert res["recall@100"] == 1.0  # the windows tile every document
    assert 0 < res["ndcg@10"] <= 1 and 0 < res["precision@5"] <= 1
    assert len(per_case) == len(ds.cases)
    # without parsed texts the chunk-text fallback gives the same judgement on exact windows
    _, _, same = _scores(ds, windows, ["recall@100"], None)
    assert same["recall@100"] == 1.0


# ----------------------------------------------------------------------------- matching rule (issue 10, item 3)
# Every test below fails on the previous matcher (substring search on lower()-ed, per-character NFKC text).

NFD_CAFE = "cafe\u0301"  # "e" + COMBINING ACUTE ACCENT
NFC_CAFE = "caf\u00e9"  # precomposed "é"


def test_normalize_nfc_and_casefold():
    assert normalize(NFD_CAFE) == normalize(NFC_CAFE) == NFC_CAFE
    assert normalize("Hauptstraße") == normalize("HAUPTSTRASSE") == "hauptstrasse"
    assert normalize("\u201cLICENSOR\u201d\u2019s\u00a0 \ufb01le") == '"licensor"\'s file'  # quotes, space, ligature


def test_amount_is_not_found_inside_a_longer_number():
    assert locate_spans("The fee is $15,000 per year.", "$5,000") == ("not_found", [])
    assert locate_spans("The fee is $5,000,000 per year.", "$5,000") == ("not_found", [])
    text = "The fee is $15,000 per year; the deposit is $5,000."
    how, occ = locate_spans(text, "$5,000")
    assert how == "exact" and [text[s:e] for s, e in occ] == ["$5,000"]
    assert locate_spans("a deposit of $5000.", "$5,000")[0] == "alnum"  # same number, other spelling


def test_word_is_not_found_inside_a_longer_word():
    text = "This Sponsorship Agreement is made by the Sponsor (the \u201cSponsor\u201d) and the Sponsor's agent."
    how, occ = locate_spans(text, "Sponsor")
    assert how == "exact" and [text[s:e] for s, e in occ] == ["Sponsor"] * 3
    assert all(not text[e].isalnum() and not text[s - 1].isalnum() for s, e in occ)
    assert locate_spans("This Sponsorship Agreement", "Sponsor") == ("not_found", [])
    text = "pursuant to Sponsorship Agreements dated May 1. This SPONSORSHIP AGREEMENT is made"
    how, occ = locate_spans(text, "Sponsorship Agreement")
    assert how == "exact" and [text[s:e] for s, e in occ] == ["SPONSORSHIP AGREEMENT"]


def test_section_numbers_are_whole_numbers():
    assert locate_spans("as set out in Section 12.3 below", "Section 12") == ("not_found", [])
    # not via letters and digits only either ("section123" = "section123", but 12.3 != 123)
    assert locate_spans("as set out in Section 123 below", "Section 12.3") == ("not_found", [])
    assert locate_spans("as set out in Section 12.3 below", "Section 12.4") == ("not_found", [])
    assert locate_spans("see Section 12. The Licensee", "Section 12")[0] == "exact"  # a full stop ends the number


def test_decomposed_and_precomposed_accents_match_with_exact_offsets():
    text = f"Le {NFD_CAFE} noir"
    how, occ = locate_spans(text, NFC_CAFE)
    assert how == "exact" and occ == [(3, 8)] and text[3:8] == NFD_CAFE  # the combining mark is included
    text = f"Le {NFC_CAFE} noir"
    assert locate_spans(text, NFD_CAFE) == ("exact", [(3, 7)])


def test_casefold_sharp_s_with_exact_offsets():
    text = "Sitz: Hauptstraße 5, Berlin. Zweigstelle: HAUPTSTRASSE 7."
    how, occ = locate_spans(text, "HAUPTSTRASSE 5")
    assert how == "exact" and [text[s:e] for s, e in occ] == ["Hauptstraße 5"]
    how, occ = locate_spans(text, "Hauptstraße")
    assert [text[s:e] for s, e in occ] == ["Hauptstraße", "HAUPTSTRASSE"]
    assert locate_spans(text, "Straße") == ("not_found", [])  # inside "Hauptstraße"
    # offsets stay exact after a length-changing character earlier in the text
    text = f"Hauptstraße 5 und {NFD_CAFE} noir, Vertrag \u201cA\u201d"
    how, occ = locate_spans(text, f'HAUPTSTRASSE 5 UND {NFC_CAFE} NOIR, VERTRAG "A"')
    assert how == "exact" and occ == [(0, len(text))]
    how, occ = locate_spans(text, "noir")
    assert [text[s:e] for s, e in occ] == ["noir"]


def test_fuzzy_match_keeps_the_span_numbers():
    doc = (
        "1. The Sponsor shall pay a fee of $15,000 per year to the Team. "
        + "Filler text. " * 20
        + "2. The Sponsor shall pay a fee of $5,000 per yr. to the Team. "
        + "Filler text. " * 20
    )
    # the best raw alignment is clause 1 (one character off), but it has another number
    how, occ = locate_spans(doc, "The Sponsor shall pay a fee of $5,000 per year to the Team.")
    assert how == "fuzzy" and len(occ) == 1
    assert doc[occ[0][0] : occ[0][1]].startswith("The Sponsor") and "$5,000 per yr." in doc[occ[0][0] : occ[0][1]]
    assert locate_spans(doc, "The Sponsor shall pay a fee of $25,000 per year to the Team.") == ("not_found", [])
    dated = "This Agreement shall commence on January 1, 2010 and continue for two years."
    wrong_year = "This Agreement shall commence on January 1, 2011 and continue for two years"
    typo = "This Agreement shall comence on January 1, 2010 and continue for two years"
    assert locate_spans(dated, wrong_year)[0] == "not_found"
    assert locate_spans(dated, typo)[0] == "fuzzy"


def test_text_overlap_respects_boundaries():
    assert text_overlap("The fee is $15,000 per year.", "5,000 per year") == 0
    assert text_overlap("This Sponsorship Agreement", "Sponsor") == 0
    assert text_overlap("The fee is $5,000 per year.", "$5,000 PER YEAR") == len("$5,000 per year")
    assert text_overlap("Sitz: HAUPTSTRASSE 5", "Hauptstraße 5") == len("hauptstrasse 5")
    assert text_overlap(f"Le {NFD_CAFE} noir", NFC_CAFE) == 4
    span = "Sponsor shall pay the annual fee to the Team within 30 days."
    assert text_overlap("Intro. TheSponsor shall pay the annual fee to the Team", span) == 0  # span starts mid-word
    assert text_overlap("Intro. The Sponsor shall pay the annual fee to the Team", span) == 44
    assert text_overlap("Intro. The Sponsor shall pay the annual fee to the Te", span) == 42  # the chunk's own cut
    span = "The Sponsor shall pay the annual sponsorship fee within 30"
    assert text_overlap("shall pay the annual sponsorship fee within 300 days of signature.", span) == 0
    assert text_overlap("shall pay the annual sponsorship fee within 30 days of signature.", span) == 46


def test_positive_controls_still_match():
    text = "The LICENSEE\u2019s  rights\n under Section 12.3 start on January 1, 2011."
    how, occ = locate_spans(text, "the licensee's rights under section 12.3")
    assert how == "exact" and occ == [(0, text.index(" start"))]
    how, occ = locate_spans(text, "January 1, 2011")
    assert how == "exact" and text[occ[0][0] : occ[0][1]] == "January 1, 2011"


def test_evidence_offsets_judges_whole_words():
    doc = "This Sponsorship Agreement sets out the terms. " + "Filler text. " * 10 + "The Sponsor shall pay."
    at = doc.index("The Sponsor")
    case = Case(id="c", question="q", evidence=[{"text": "Sponsor", "doc_id": "a.txt"}])
    hits = [
        Hit(rank=1, score=1, text=doc[:40], doc_id="a.txt", start=0, end=40),
        Hit(rank=2, score=1, text=doc[at:], doc_id="a.txt", start=at, end=len(doc)),
    ]
    j = mark_hits(case, hits, "evidence_offsets", parsed_texts={"a.txt": doc})
    assert [h.relevant for h in j.hits] == [False, True]
    j = mark_hits(case, hits, "evidence_offsets", parsed_texts=None)  # chunk-text fallback
    assert [h.relevant for h in j.hits] == [False, True]


def test_cuad_mini_sponsor_occurrences_are_whole_words(mini):
    _, texts = mini
    text = texts["GAINSCOINC_01_21_2010-EX-10.41-SPONSORSHIP AGREEMENT.txt"]
    how, occ = locate_spans(text, "Sponsor")
    assert how == "exact" and occ
    assert all(text[s:e].casefold() == "sponsor" and not text[e : e + 1].isalnum() for s, e in occ)
    assert text.count("Sponsorship") > 0  # ... which the span no longer matches


def test_word_overlap_nfc_only():
    nfd = f"{NFD_CAFE} Rouge Ltd"
    assert word_overlap_ratio(f"{NFC_CAFE} Rouge", nfd) == 1.0  # canonically equivalent words are equal
    assert word_overlap_ratio("Hauptstraße 5", "HAUPTSTRASSE 5") == 0.5  # still case-sensitive, no casefold
    assert word_overlap_ratio("Sponsor", "the Sponsor's logo") == 0.0  # still whole words split on " "
    case = Case(id="c", question="q", evidence=[f"{NFC_CAFE} Rouge Ltd"])
    j = mark_hits(case, [Hit(rank=1, score=1, text=f"the {nfd}", doc_id="a", start=0, end=1)], "word_overlap")
    assert j.hits[0].relevant


def test_ascii_fast_map_equals_the_character_loop():
    """The word-at-a-time map of ASCII texts gives the same normalised text and offsets as
    the character loop, whitespace of every kind included."""
    import random

    from ragsweep.datasets.textnorm import _build_map_ascii, _build_map_chars

    rng = random.Random(7)
    alphabet = "aZ09.,;:'\"()$%-/" + " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
    texts = ["", " ", "  lead and trail  ", "One\n\nTwo\tTHREE"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(500)]
    for text in texts:
        assert _build_map_ascii(text) == _build_map_chars(text), repr(text)
