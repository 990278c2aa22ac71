"""What Pathway's query path cannot take, checked before a run (no Pathway import here).

* :func:`tantivy_safe` is the question as ragsweep asks Pathway's Tantivy BM25 (and only that
  index: ``ragsweep.pipeline.serving``), :func:`served_app_failure` says when the app's own
  server cannot take it, and :func:`clean_query` is the plainest cleaning: a question that is
  empty after it (``""``, punctuation, symbols or emoji only) has nothing to search for.
* :func:`unscopable_reason` says why a document id cannot be put in a case's scope:
  Pathway's JMESPath metadata filter cannot express an id holding a backtick or a double
  quote (see ``ragsweep.pipeline.store.scope_filter``).

Both are used by :mod:`.validate`; the store and the eval use the same functions so the
three never disagree.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tantivy

__all__ = [
    "TANTIVY_SYNTAX",
    "UNSCOPABLE_REASON",
    "clean_query",
    "kept_tokens",
    "served_app_failure",
    "tantivy_safe",
    "unscopable_reason",
]

# Tantivy query syntax (quotes, colons, parentheses, + - ^ ~ ...) and anything that is not a
# word character: no meaning for BM25 or the embedder, and some of it ends ``pw.run``.
_TANTIVY_UNSAFE = re.compile(r"[^\w\s]", re.UNICODE)
_BOOLEAN_WORDS = frozenset({"AND", "OR", "NOT", "IN", "TO"})

UNSCOPABLE_REASON = (
    "document id holds a backtick or double quote: Pathway's metadata filter cannot express it; "
    "the case will be skipped"
)


def clean_query(text: str) -> str:
    """``text`` made safe for Tantivy's query parser; ``""`` when nothing searchable is left.

    Every character that is neither a word character nor whitespace becomes a space (so
    emoji and punctuation disappear), no-break spaces count as spaces, Tantivy's boolean
    keywords (``AND``, ``OR``, ``NOT``, ``IN``, ``TO``) are lower-cased and runs of
    whitespace collapse to one space.
    """
    cleaned = _TANTIVY_UNSAFE.sub(" ", text.replace("\u00a0", " "))
    return " ".join(w.lower() if w in _BOOLEAN_WORDS else w for w in cleaned.split())


def unscopable_reason(doc_id: str) -> str | None:
    """Why ``doc_id`` cannot be used in a case's ``doc_scope``, or None when it can.

    Pathway rewrites a metadata filter before parsing it (backtick -> quote, ``"`` dropped),
    so an id holding a backtick or a double quote cannot be written in one.
    """
    if "`" in doc_id or '"' in doc_id:
        return UNSCOPABLE_REASON
    return None


# Characters that make Pathway's Tantivy query parser fail ("EngineError: Syntax Error", which
# ends the whole pw.run), measured one by one in "which state X law governs" on Pathway 0.33:
# fail: + - ( ) { } [ ] ^ " : `  and a no-break space;   parse: & | ! ~ * ? \ / ' . ; = @ # $ %
# (< and > start range queries in tantivy's grammar: treated as syntax too).
TANTIVY_SYNTAX = frozenset('+-(){}[]^":`<>')
# Tantivy's default tokenizer cuts a word into runs of letters and digits and drops runs of 40+ bytes
# (RemoveLongFilter); a query of two or more words none of which keeps a token ends pw.run
# ("Invalid query: Only excluding terms given"), one such word alone finds nothing.
TANTIVY_MAX_WORD_BYTES = 40
_TOKEN = re.compile(r"[^\W_]+")
_PLAIN_SPACE = frozenset(" \t\n\r")


def _parses(text: str) -> bool | None:
    """Does tantivy's own query parser (the ``tantivy`` package) accept ``text``? None without that
    package. It agrees with Pathway's parser on every probe of tests/test_bm25_query.py (each character
    above alone, balanced parentheses and quotes, hyphenated words, boolean keywords...) but one: it
    rejects an apostrophe, which Pathway takes, so apostrophes are left out of the check."""
    global _PARSER
    try:
        if _PARSER is None:
            import tantivy

            builder = tantivy.SchemaBuilder()
            builder.add_text_field("text", stored=False)
            _PARSER = tantivy.Index(builder.build())
        _PARSER.parse_query(text.replace("'", " "), ["text"])
        return True
    except ImportError:
        return None
    except Exception:  # noqa: BLE001 - any parse error: not safe
        return False


_PARSER: tantivy.Index | None = None


def kept_tokens(text: str) -> list[str]:
    """The tokens Tantivy's default tokenizer keeps of ``text``: runs of letters and digits under 40 bytes."""
    return [t for t in _TOKEN.findall(text) if len(t.encode()) < TANTIVY_MAX_WORD_BYTES]


def _needs_change(text: str) -> bool:
    """Would Pathway's Tantivy query parser refuse ``text``? Unusual white space, or tantivy's own parser
    refusing it (a question it accepts, say "co-op" or "(by far)", is the app's own query: asked as it is);
    without that parser, any syntax character or boolean keyword."""
    if any(ch.isspace() and ch not in _PLAIN_SPACE for ch in text):
        return True
    parses = _parses(text)
    if parses is not None:
        return not parses
    return any(ch in TANTIVY_SYNTAX for ch in text) or any(w in _BOOLEAN_WORDS for w in text.split())


@lru_cache(maxsize=65536)  # asked for each query of each configuration: a dataset repeats its questions
def tantivy_safe(text: str) -> str:
    """The question as Pathway's Tantivy BM25 can take it, changed as little as possible.

    ``""`` (no match) when Tantivy keeps no token of it (punctuation only, or only runs of 40+
    bytes such as a long Chinese sentence, which Tantivy drops): such a question searches nothing in
    the app either. A question Pathway's query parser takes (no unusual white space, and tantivy's own
    parser accepts it: balanced parentheses and quotes, hyphenated words, ``OR`` between words) is
    returned unchanged, so a stock Pathway server answers it exactly as ragsweep scores it. Otherwise
    each syntax character (:data:`TANTIVY_SYNTAX`) and unusual space becomes a space, the keywords
    ``AND OR NOT IN TO`` are lower-cased, and if tantivy's parser still refuses the result, only
    letters, digits and spaces are kept (:func:`clean_query`).
    """
    if not kept_tokens(text):
        return ""
    if not _needs_change(text):
        return text
    cleaned = "".join(" " if ch in TANTIVY_SYNTAX or ch.isspace() else ch for ch in text)
    kept = " ".join(w.lower() if w in _BOOLEAN_WORDS else w for w in cleaned.split())
    if _parses(kept) is not True:
        kept = clean_query(kept)
    return kept if kept_tokens(kept) else ""


def served_app_failure(text: str) -> str | None:
    """Why a stock Pathway server over Pathway's own Tantivy BM25 index cannot take this question (its whole
    ``pw.run`` ends), naming the first character or word that does it; None when it can. ragsweep's
    DocumentStore asks that index :func:`tantivy_safe`'s question instead, and every other index the question.
    A single word Tantivy keeps no token of (a Chinese question of 14+ characters) is taken: it finds nothing."""
    if len(text.split()) > 1 and not kept_tokens(text):
        return f"{_EXCLUDING}: no word of it keeps a token (runs of 40+ bytes and punctuation are dropped)"
    if not _needs_change(text):
        return None
    for at, ch in enumerate(text):
        if ch in TANTIVY_SYNTAX or (ch.isspace() and ch not in _PLAIN_SPACE):
            name = unicodedata.name(ch, "")
            return f"{_ENDS}: character {ch!r} (U+{ord(ch):04X}{' ' + name if name else ''}) at {at}"
    for word in text.split():
        if word in _BOOLEAN_WORDS:
            return f"{_ENDS}: the boolean keyword {word!r}"
    return f"{_ENDS}: tantivy's query parser refuses it"


_ENDS = "the app's own server ends its whole pw.run on this question (Tantivy: EngineError: Syntax Error)"
_EXCLUDING = "the app's own server ends its whole pw.run on this question (Tantivy: Only excluding terms given)"
