"""Chunks stay within [min_tokens, max_tokens] (a document's last chunk excepted) and know their offsets."""

import tiktoken

from ragsweep.pipeline.chunking import OffsetTokenCountSplitter, locate_chunks

ENC = tiktoken.get_encoding("cl100k_base")
TEXT = " ".join(
    f"Clause {i}. The Licensee shall pay the Licensor a royalty of {i} percent of net sales, "
    f"payable quarterly within thirty days after the end of each quarter."
    for i in range(120)
)


def test_chunks_respect_the_token_window_and_offsets():
    for lo, hi in [(50, 120), (100, 200), (250, 600)]:
        pieces = OffsetTokenCountSplitter(min_tokens=lo, max_tokens=hi).chunk(TEXT, {"doc_id": "d"})
        sizes = [len(ENC.encode_ordinary(p)) for p, _ in pieces]
        assert all(lo <= n <= hi for n in sizes[:-1]), (lo, hi, sizes)
        assert sizes[-1] <= hi
        for piece, meta in pieces:
            assert TEXT[meta["start"] : meta["end"]] == piece and meta["doc_id"] == "d"
        assert "".join(p for p, _ in pieces) == TEXT  # nothing lost, nothing repeated


def test_pathways_own_algorithm_can_go_below_min_tokens():
    # sparse punctuation: a short sentence, then a long run without any mark. Pathway cuts at the
    # period once 3 * min_tokens *characters* are in, which is fewer than min_tokens tokens here
    words = ["agreement", "termination", "confidential", "information", "obligations", "licensee"]
    sentence = " ".join(words[i % 6] for i in range(60)) + ". "  # ~60 tokens, ~700 characters
    run_on = " ".join(words[(i * 5) % 6] for i in range(220))  # no punctuation at all
    sparse = " ".join(sentence + run_on for _ in range(4))
    pathway = OffsetTokenCountSplitter(min_tokens=100, max_tokens=200, strict_min_tokens=False).chunk(sparse)
    assert min(len(ENC.encode_ordinary(p)) for p, _ in pathway[:-1]) < 100
    strict = OffsetTokenCountSplitter(min_tokens=100, max_tokens=200).chunk(sparse)
    assert all(100 <= len(ENC.encode_ordinary(p)) <= 200 for p, _ in strict[:-1])


def test_locate_chunks_handles_repeats_in_order():
    text = "abc abc abc"
    assert locate_chunks(text, ["abc ", "abc ", "abc"]) == [(0, 4), (4, 8), (8, 11)]
