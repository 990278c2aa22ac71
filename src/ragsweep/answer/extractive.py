"""A deterministic, LLM-free answerer: return the retrieved sentence(s) that best match the question.

How it works (all deterministic, no model, no network):

1. Every retrieved chunk is split into sentences: at blank lines, at sentence-final
   punctuation followed by two or more spaces (contract typesetting), and at sentence-final
   punctuation followed by a capital/digit/quote; common abbreviations such as "Inc." or
   "U.S." do not end a sentence; a numbered all-caps heading ("12.1 GOVERNING LAW.") is
   glued to the sentence after it; sentences over 600 characters are further cut at ";".
2. Question and sentences are tokenised: lower-cased alphanumeric words, stopwords
   removed (English function words plus question boilerplate such as "highlight",
   "clause", "provision", "whether"), "agreement" read as "contract", and a light
   suffix-stripping stemmer (governing/governed -> govern, parties -> party).
   Both sides also get *answer-type* pseudo-terms: a question asking for a date
   ("date", "when") gets ``__date__`` and every sentence containing a date expression
   gets it too; likewise durations (``__duration__``: "how long", "period", "renewal
   term" vs "thirty (30) days"), money (``__money__``) and parties (``__parties__``:
   "parties" vs "by and between").
3. IDF is computed over the retrieved sentences only (BM25 form,
   ``idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))``, N sentences, n_t of them contain t).
4. A sentence's **evidence score** is the IDF-weighted share of the question's terms it
   contains::

       score(s) = sum(idf(t) for t in Q if t in s) / sum(idf(t) for t in Q)

   a number in [0, 1] that does not depend on question length. Terms absent from every
   retrieved sentence still count in the denominator (with the highest IDF), so a
   question whose key words were not retrieved scores low.
5. Sentences are ranked by score, then BM25 (k1=1.2, b=0.75), then retrieval rank, then
   position. The best sentence is the answer; up to ``max_sentences`` further sentences
   are appended when they also pass ``min_score`` and reach ``relative_cutoff`` x best.
6. **Abstention**: when there are no hits, the question has no content terms, or the best
   sentence's score is below ``min_score``, the answer is ``IDK`` with ``abstained=True``.

``cited`` lists the 1-based positions (in ``hits``) of the chunks the returned sentences
came from.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from ragsweep.answer.base import IDK, Answer
from ragsweep.answer.stored_answers import StoredAnswers, answer_key
from ragsweep.core.hits import Hit

DEFAULT_MIN_SCORE = 0.3
DEFAULT_MAX_SENTENCES = 2

_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can cannot could did do does doing don't down during each
    either few for from further had has have having he her here hers herself him himself his how
    i if in into is isn't it its itself just let me more most my myself no nor not of off on once
    only or other ought our ours ourselves out over own same shall she should so some such than
    that the their theirs them themselves then there these they this those through to too under
    until up upon very was we were what when where which while who whom why will with within
    would you your yours yourself yourselves also may might must per via whether etc
    non hereof herein hereto hereunder thereof therein thereto
    highlight highlighted part parts related reviewed review lawyer details detail category
    clause clauses provision provisions section sections include includes including included
    contain contains containing specify specified specifies mention mentioned mentions
    question answer document documents text context please tell give find list describe
    exist exists existing say says said stated
    """.split()
)

# whole-word synonyms applied before stemming
_SYNONYMS = {
    "agreement": "contract",
    "agreements": "contract",
    "contracts": "contract",
    "licence": "license",
    "licences": "license",
    "counterparty": "party",
    "counterparties": "party",
    "terminate": "termination",
    "terminated": "termination",
    "terminates": "termination",
    "expire": "expiration",
    "expires": "expiration",
    "expired": "expiration",
    "expiry": "expiration",
    "competing": "compete",
    "competitive": "compete",
    "competition": "compete",
    "competes": "compete",
    "competitor": "compete",
    "competitors": "compete",
    "assign": "assignment",
    "assigned": "assignment",
    "assigns": "assignment",
    "solicit": "solicitation",
    "soliciting": "solicitation",
    "solicits": "solicitation",
    "governs": "governed",
    "governing": "governed",
    "renew": "renewal",
    "renews": "renewal",
    "renewed": "renewal",
    "renewable": "renewal",
    "extend": "extension",
    "extends": "extension",
    "extended": "extension",
}

# (suffix, replacement), tried longest first; a rule applies only if >= 3 chars remain
_SUFFIXES = sorted(
    [
        ("ational", "ate"),
        ("ations", "ate"),
        ("ation", "ate"),
        ("ivity", ""),
        ("itive", ""),
        ("ility", "le"),
        ("sses", "ss"),
        ("ments", ""),
        ("ment", ""),
        ("ings", ""),
        ("ing", ""),
        ("ied", "y"),
        ("ies", "y"),
        ("ed", ""),
        ("ive", ""),
        ("ly", ""),
        ("al", ""),
        ("es", ""),
        ("s", ""),
    ],
    key=lambda pair: -len(pair[0]),
)

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DATE_RE = re.compile(
    rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\s*,?\s*\d{{4}}\b"  # May 8, 2014
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:day\s+of\s+)?{_MONTH},?\s+\d{{4}}\b"  # 8th day of May 2014
    r"|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b"  # 5/8/14
    r"|\b\d{4}-\d{2}-\d{2}\b"
    rf"|\b{_MONTH}\s*,?\s+\d{{4}}\b",  # May 2014
    re.IGNORECASE,
)
_NUMWORD = (
    r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
    r"thirty|forty|forty-five|sixty|ninety|hundred)"
)
_DURATION_RE = re.compile(
    rf"\b{_NUMWORD}\s*(?:\(\d+\)\s*)?(?:calendar\s+|business\s+|working\s+|consecutive\s+)?"
    r"(?:days?|weeks?|months?|years?)\b",
    re.IGNORECASE,
)
_MONEY_RE = re.compile(r"\$\s?\d|\b(?:usd|eur|gbp|dollars?)\b|\b\d[\d,.]*\s?(?:usd|eur|%)", re.IGNORECASE)
_PARTIES_RE = re.compile(r"\bby\s+and\s+(?:between|among)\b|\bbetween\b.{3,200}\band\b", re.IGNORECASE)

_Q_DATE = re.compile(r"\b(?:date|dated|when)\b", re.IGNORECASE)
_Q_DURATION = re.compile(
    r"\b(?:how\s+long|duration|period|renewal\s+term|initial\s+term|how\s+many\s+(?:days|months|years))\b",
    re.IGNORECASE,
)
_Q_MONEY = re.compile(r"\b(?:how\s+much|amount|fee|fees|price|cost|payment|royalt(?:y|ies))\b", re.IGNORECASE)
_Q_PARTIES = re.compile(r"\b(?:parties|who\s+are|signator(?:y|ies))\b", re.IGNORECASE)

_ABBREVIATIONS = frozenset(
    "inc co corp ltd llc llp lp no nos sec art para mr mrs ms dr st jr sr vs etc e.g i.e u.s u.k n.a "
    "s.a b.v n.v fig approx dept est min max ref vol cf al".split()
)
_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_DOUBLE_SPACE_END = re.compile(r"(?<![A-Z])(?<!\b[A-Za-z]\.)([a-z0-9'\")\]]{2}[.!?][\"')\]]*)[ \t]{2,}(?=\S)")
_MAX_SENTENCE_CHARS = 600


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Light suffix stripping; a final 'e' is dropped so compete/competed/competing agree."""
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= (4 if suffix == "al" else 3):
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + repl
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Content-word stems of ``text`` (stopwords removed, synonyms mapped)."""
    out = []
    for word in _WORD.findall(text.lower().replace("’", "'")):
        if word.endswith("'s"):
            word = word[:-2]
        if word in _STOPWORDS or len(word) < 2:
            continue
        word = _SYNONYMS.get(word, word)
        out.append(stem(word))
    return out


def question_types(question: str) -> set[str]:
    """Answer-type pseudo-terms a question asks for."""
    kinds = set()
    if _Q_DATE.search(question):
        kinds.add("__date__")
    if _Q_DURATION.search(question):
        kinds.add("__duration__")
    if _Q_MONEY.search(question):
        kinds.add("__money__")
    if _Q_PARTIES.search(question):
        kinds.add("__parties__")
    return kinds


def sentence_types(sentence: str) -> set[str]:
    """Answer-type pseudo-terms a sentence can answer."""
    kinds = set()
    if _DATE_RE.search(sentence):
        kinds.add("__date__")
    if _DURATION_RE.search(sentence):
        kinds.add("__duration__")
    if _MONEY_RE.search(sentence):
        kinds.add("__money__")
    if _PARTIES_RE.search(sentence):
        kinds.add("__parties__")
    return kinds


def _split_long(sentence: str) -> list[str]:
    if len(sentence) <= _MAX_SENTENCE_CHARS:
        return [sentence]
    parts, current = [], ""
    for piece in re.split(r"(?<=;)\s+", sentence):
        if current and len(current) + len(piece) + 1 > _MAX_SENTENCE_CHARS:
            parts.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        parts.append(current)
    return parts


def split_sentences(text: str) -> list[str]:
    """Split a chunk into sentences (whitespace inside a sentence is collapsed)."""
    sentences: list[str] = []
    # a blank line always ends a sentence; so does ". " followed by 2+ spaces (contract
    # typesetting), even before a lower-case word such as "i-Escrow shall ..."
    text = _DOUBLE_SPACE_END.sub("\\1\n\n", text)
    for block in re.split(r"\n\s*\n", text):
        block = " ".join(block.split())
        if not block:
            continue
        start = 0
        for match in _SENT_END.finditer(block):
            before = block[start : match.start()].rstrip("\"')]")
            last = before.rsplit(" ", 1)[-1].lower().rstrip(".")
            # do not split after abbreviations, single letters ("A.") or enumerators ("1.")
            if last in _ABBREVIATIONS or len(last) <= 1 or (last.isdigit() and len(last) <= 2):
                continue
            sentences.extend(_split_long(block[start : match.start()].strip()))
            start = match.end()
        tail = block[start:].strip()
        if tail:
            sentences.extend(_split_long(tail))
    return [s for s in _merge_headings(sentences) if any(ch.isalnum() for ch in s)]


_HEADING = re.compile(r"^(?:(?:section|article)\s+)?[\dIVXivx]+(?:\.\d+)*\.?\s+[^a-z]{2,80}\.$")


def _merge_headings(sentences: list[str]) -> list[str]:
    """Glue a numbered all-caps heading ("12.1 GOVERNING LAW.") to the sentence after it."""
    out: list[str] = []
    pending = ""
    for sentence in sentences:
        if pending:
            sentence = f"{pending} {sentence}"
            pending = ""
        if _HEADING.match(sentence) and len(sentence.split()) <= 10:
            pending = sentence
            continue
        out.append(sentence)
    if pending:
        out.append(pending)
    return out


@lru_cache(maxsize=8192)
def chunk_sentences(text: str) -> tuple[tuple[str, str, Counter[str], int], ...]:
    """A chunk's sentences, each with its lower-cased form, its term counts and their total.

    Memoised by text: one chunk is served to many questions (every category asked of a
    contract), and splitting and stemming it was most of the answerer's time. The
    counters are shared between calls: read them, never change them.
    """
    out = []
    for sentence in split_sentences(text):
        terms = Counter(tokenize(sentence))
        for kind in sentence_types(sentence):
            terms[kind] += 1
        out.append((sentence, sentence.lower(), terms, sum(terms.values())))
    return tuple(out)


@lru_cache(maxsize=8192)
def chunk_index(text: str) -> tuple[tuple[str, ...], tuple[int, ...], dict[str, tuple[int, ...]]]:
    """A chunk's sentence keys (lower-cased) and term totals, and for each term the positions
    of the sentences holding it (memoised like :func:`chunk_sentences`)."""
    sentences = chunk_sentences(text)
    where: dict[str, list[int]] = {}
    for i, (_, _, terms, _) in enumerate(sentences):
        for term in terms:
            where.setdefault(term, []).append(i)
    return (
        tuple(s[1] for s in sentences),
        tuple(s[3] for s in sentences),
        {term: tuple(at) for term, at in where.items()},
    )


@dataclass
class _Candidate:
    text: str
    chunk: int  # 1-based position in hits
    position: int  # order of appearance over all chunks
    terms: Counter[str]
    length: int  # number of terms
    matched: tuple[str, ...]  # the question's terms found in it
    score: float = 0.0
    bm25: float = 0.0


def _candidates(q_terms: tuple[str, ...], hits: list[Hit]) -> tuple[list[_Candidate], int, int]:
    """The distinct retrieved sentences that share a term with the question (a repeated
    sentence counts once, at its first place), found through each chunk's term index; with
    the number of distinct sentences and their total number of terms."""
    indexes = [chunk_index(hit.text) for hit in hits]
    rank: dict[int, int] = {}  # place among all retrieved sentences -> rank among the distinct ones
    first: dict[str, int] = {}
    for place, key in enumerate(chain.from_iterable(index[0] for index in indexes)):
        if key not in first:
            first[key] = place
            rank[place] = len(first) - 1
    lengths = list(chain.from_iterable(index[1] for index in indexes))
    candidates: list[_Candidate] = []
    offset = 0
    for chunk_no, (hit, (keys, _, where)) in enumerate(zip(hits, indexes), start=1):
        matched: dict[int, list[str]] = {}
        for term in q_terms:  # in the question's (sorted) term order, as the sums need
            for i in where.get(term, ()):
                if offset + i in rank:
                    matched.setdefault(i, []).append(term)
        sentences = chunk_sentences(hit.text) if matched else ()
        for i in sorted(matched):
            sentence, _, terms, length = sentences[i]
            candidates.append(_Candidate(sentence, chunk_no, rank[offset + i], terms, length, tuple(matched[i])))
        offset += len(keys)
    return candidates, len(first), sum(lengths[place] for place in rank)


class ExtractiveAnswerer:
    """Answer with the retrieved sentence(s) that best match the question.

    Parameters
    ----------
    min_score:
        Abstention threshold on the evidence score (IDF-weighted share of the question's
        terms, incl. its answer-type term, found in a sentence; 0..1, see module docstring).
        If no sentence reaches it the answer is ``IDK`` with ``abstained=True``. 0 never
        abstains (except with no hits / no usable question terms); higher values abstain
        more often. Default 0.3. Calibration (25 CUAD contracts x 40 categories, the
        official category descriptions as questions, a plain BM25 top-5 over 1,200-char
        chunks): 0.2 abstained on 53% of unanswerable and 17% of answerable cases, 0.3 on
        81% / 35%, 0.4 on 92% / 53%.
    max_sentences:
        Most sentences returned (>= 1). Sentences after the first are kept only if they pass
        ``min_score`` and score at least ``relative_cutoff`` times the best score.
    relative_cutoff:
        See ``max_sentences``.
    """

    name = "extractive"

    def __init__(
        self,
        min_score: float = DEFAULT_MIN_SCORE,
        max_sentences: int = DEFAULT_MAX_SENTENCES,
        relative_cutoff: float = 0.8,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        if max_sentences < 1:
            raise ValueError("max_sentences must be >= 1")
        if not 0.0 <= min_score <= 1.0:
            raise ValueError("min_score must be in [0, 1]")
        self.min_score = min_score
        self.max_sentences = max_sentences
        self.relative_cutoff = relative_cutoff
        self.k1 = k1
        self.b = b

    def _abstain(self) -> Answer:
        return Answer(text=IDK, abstained=True, cited=[], answerer=self.name)

    def score_sentences(self, question: str, hits: list[Hit]) -> list[_Candidate]:
        """The retrieved sentences that hold a term of the question, with their scores, best
        first (exposed for inspection). Every distinct sentence counts in the IDF and the
        average length; one with no term of the question scores 0 and is never chosen."""
        # sorted: the float sums below must not depend on the process's string hash seed
        # (iterating a set of str made one CUAD answer differ between two runs)
        q_terms = tuple(sorted(set(tokenize(question)) | question_types(question)))
        if not q_terms:
            return []
        candidates, n, total_length = _candidates(q_terms, hits)
        if not candidates:
            return []
        df = Counter(t for c in candidates for t in c.matched)
        idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms}
        total_idf = sum(idf.values())
        avg_len = total_length / n or 1.0
        k1, b = self.k1, self.b
        for c in candidates:
            c.score = sum(idf[t] for t in c.matched) / total_idf
            norm = k1 * (1.0 - b + b * c.length / avg_len)
            c.bm25 = sum(idf[t] * c.terms[t] * (k1 + 1.0) / (c.terms[t] + norm) for t in c.matched)
        candidates.sort(key=lambda c: (-c.score, -c.bm25, c.chunk, c.position))
        return candidates

    def answer(self, question: str, hits: list[Hit]) -> Answer:
        """The answer to ``question`` from ``hits`` (a function of the question, the hits' texts in order
        and the settings: an unchanged case of a repeated evaluation, in ``watch`` or a sweep, is
        answered once per process)."""
        if type(self) is not ExtractiveAnswerer:  # a subclass may read more than the settings
            return self._answer(question, hits)
        return _answered(self._settings(), question, tuple(hit.text for hit in hits)).model_copy(deep=True)

    def answer_batch(self, items: Sequence[tuple[str, Sequence[Hit]]]) -> list[Answer]:
        """Each ``(question, hits)`` answered as :meth:`answer` answers it; what an earlier process
        answered comes from :mod:`ragsweep.answer.stored_answers`."""
        store = StoredAnswers.default() if type(self) is ExtractiveAnswerer else None
        if store is None:
            return [self.answer(question, list(hits)) for question, hits in items]
        settings = self._settings()
        texts = [tuple(hit.text for hit in hits) for _, hits in items]
        keys = [answer_key(settings, question, t) for (question, _), t in zip(items, texts, strict=True)]
        known = store.get_many(keys)  # the stored answers, then those computed here
        computed: dict[str, Answer] = {}
        out: list[Answer] = []
        given: set[str] = set()
        for key, (question, _), t in zip(keys, items, texts, strict=True):
            if (answer := known.get(key)) is None:
                answer = known[key] = computed[key] = _answered(settings, question, t).model_copy(deep=True)
            out.append(answer.model_copy(deep=True) if key in given else answer)  # each case its own object
            given.add(key)
        store.put_many(computed)
        return out

    def _settings(self) -> tuple[float, int, float, float, float]:
        return (self.min_score, self.max_sentences, self.relative_cutoff, self.k1, self.b)

    def _answer(self, question: str, hits: list[Hit]) -> Answer:
        ranked = self.score_sentences(question, hits)
        if not ranked or ranked[0].score < self.min_score or ranked[0].score <= 0.0:
            return self._abstain()
        best = ranked[0]
        chosen = [best]
        for c in ranked[1:]:
            if len(chosen) >= self.max_sentences:
                break
            if c.score >= self.min_score and c.score >= self.relative_cutoff * best.score:
                chosen.append(c)
        text = " ".join(c.text for c in chosen)
        cited = sorted({c.chunk for c in chosen})
        return Answer(text=text, abstained=False, cited=cited, answerer=self.name)


@lru_cache(maxsize=1 << 15)
def _answered(settings: tuple[float, int, float, float, float], question: str, texts: tuple[str, ...]) -> Answer:
    """:meth:`ExtractiveAnswerer.answer`'s work, once per settings, question and texts: all it reads."""
    hits = [Hit(rank=i, score=0.0, text=text, doc_id="", start=0, end=0) for i, text in enumerate(texts, start=1)]
    return ExtractiveAnswerer(*settings)._answer(question, hits)
