"""Import the Chinese part of the ChatterBot dialog corpus as a small retrieval set.

Why this corpus: issue 14 needs a real Chinese retrieval set that installs from PyPI and works
offline. ``insuranceqa-data`` (every release, 1.0 to 2.5.5) ships only code: its corpus is
downloaded at run time, from 2.5 on only with a purchased licence key, and its licence
(Chunsong Public License 1.0) limits the data to research use. ``chatterbot-corpus`` ships its
data inside the wheel (``chatterbot_corpus/data/chinese/*.yml``, simplified Chinese, 17 topic
files), under the BSD licence its metadata declares.

How the set is made (deterministic; the same wheel gives the same files):

* each conversation ``[t1, t2, ...]`` of a topic file gives the pairs ``(t1, t2), (t2, t3), ...``
  (ChatterBot's own reading: each statement answers the one before it);
* every distinct answer text becomes one document ``docs/<topic>-<nnn>.txt`` (numbered in file
  order within its topic; an answer met again later keeps its first id);
* every distinct question with 1 to ``max_answers`` distinct answers becomes a case whose
  ``relevant_ids`` are its answers' documents (relevance rule ``doc_id``); questions with more
  answers ("玩笑" -> 52 jokes, "股市" -> 9 remarks) are prompts, not questions, and are left out
  (their answers stay in the corpus as distractors);
* ``reference_answer`` is the first answer, ``type`` the topic, ``split`` dev/test by a
  SHA-256 of the case id.

CLI::

    pip download --no-deps chatterbot-corpus==1.3.3 -d /tmp/cb
    python -m ragsweep.datasets.chatterbot_zh /tmp/cb/chatterbot_corpus-1.3.3-py2.py3-none-any.whl datasets/chatterbot-zh

``SOURCE`` is the wheel, a folder holding the ``*.yml`` files (``.../data/chinese``) or
``installed`` (the ``chatterbot_corpus`` package of this environment).
"""

from __future__ import annotations

import argparse
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ragsweep.core.keys import digest

from ._util import short_hash, split_for
from .loader import write_cases
from .schema import Case

LANGUAGE_DIR = "chatterbot_corpus/data/chinese/"
DEFAULT_MAX_ANSWERS = 3


@dataclass
class Source:
    label: str  # what was read, for the README
    files: dict[str, str]  # topic file name -> YAML text
    sha256: str | None = None
    version: str | None = None


@dataclass
class Built:
    docs: dict[str, str]  # doc id -> text
    cases: list[Case]
    pairs: int
    questions: int
    dropped_many_answers: list[tuple[str, int]] = field(default_factory=list)


def _clean(value: object) -> str:
    return re.sub(r"\s+", " ", str(value)).strip()


def read_source(source: str | Path) -> Source:
    """The Chinese topic files from a wheel, a folder of ``*.yml`` or the installed package."""
    if str(source) == "installed":
        from importlib.metadata import version

        import chatterbot_corpus  # noqa: F401 - only to locate it

        folder = Path(chatterbot_corpus.__file__).parent / "data" / "chinese"
        src = read_source(folder)
        return Source(
            f"installed chatterbot-corpus {version('chatterbot-corpus')}",
            src.files,
            version=version("chatterbot-corpus"),
        )
    path = Path(source)
    if path.is_file() and path.suffix == ".whl":
        data = path.read_bytes()
        with zipfile.ZipFile(path) as zf:
            files = {
                Path(n).name: zf.read(n).decode("utf-8")
                for n in sorted(zf.namelist())
                if n.startswith(LANGUAGE_DIR) and n.endswith(".yml")
            }
        match = re.match(r"chatterbot_corpus-([^-]+)-", path.name)
        return Source(path.name, files, digest(data), match.group(1) if match else None)
    if path.is_dir():
        files = {p.name: p.read_text(encoding="utf-8") for p in sorted(path.glob("*.yml"))}
        return Source(str(path), files)
    raise FileNotFoundError(f"{source}: expected a chatterbot_corpus wheel, a folder of *.yml, or 'installed'")


def build(source: Source, max_answers: int = DEFAULT_MAX_ANSWERS) -> Built:
    if not source.files:
        raise ValueError(f"{source.label}: no Chinese topic file ({LANGUAGE_DIR}*.yml)")
    docs: dict[str, str] = {}
    doc_of_text: dict[str, str] = {}
    answers_of: dict[str, list[str]] = {}  # question -> doc ids, in order
    topic_of: dict[str, str] = {}
    pairs = 0
    for name, text in sorted(source.files.items()):
        topic = Path(name).stem
        n = 0
        for conversation in yaml.safe_load(text).get("conversations") or []:
            turns = [_clean(t) for t in conversation if t is not None and _clean(t)]
            for question, answer in zip(turns, turns[1:]):
                pairs += 1
                if answer not in doc_of_text:
                    n += 1
                    doc_id = f"{topic}-{n:03d}.txt"
                    doc_of_text[answer] = doc_id
                    docs[doc_id] = answer
                ids = answers_of.setdefault(question, [])
                if doc_of_text[answer] not in ids:
                    ids.append(doc_of_text[answer])
                topic_of.setdefault(question, topic)
    cases: list[Case] = []
    dropped: list[tuple[str, int]] = []
    for question, ids in answers_of.items():
        if len(ids) > max_answers:
            dropped.append((question, len(ids)))
            continue
        case_id = f"cbzh-{short_hash(question)}"
        cases.append(
            Case(
                id=case_id,
                question=question,
                type=topic_of[question],
                relevant_ids=list(ids),
                reference_answer=docs[ids[0]],
                split=split_for(case_id),
                meta={"answers": len(ids)},
            )
        )
    cases.sort(key=lambda c: c.id)
    if len({c.id for c in cases}) != len(cases):
        raise ValueError("two questions share a case id (hash collision): lengthen the hash")
    return Built(docs, cases, pairs, len(answers_of), sorted(dropped, key=lambda d: -d[1]))


def write(built: Built, source: Source, out_dir: str | Path, max_answers: int = DEFAULT_MAX_ANSWERS) -> None:
    out = Path(out_dir)
    docs_dir = out / "docs"
    docs_dir.mkdir(parents=True, exist_ok=True)
    for old in docs_dir.glob("*.txt"):
        if old.name not in built.docs:
            old.unlink()
    for doc_id, text in built.docs.items():
        (docs_dir / doc_id).write_text(text + "\n", encoding="utf-8")
    write_cases(out / "cases.jsonl", built.cases)
    (out / "dataset.yaml").write_text(f"name: {out.name}\nrelevance: doc_id\n", encoding="utf-8")
    (out / "README.md").write_text(readme(built, source, out.name, max_answers), encoding="utf-8")


def readme(built: Built, source: Source, name: str, max_answers: int) -> str:
    n = len(built.cases)
    dev = sum(c.split == "dev" for c in built.cases)
    multi = sum(len(c.relevant_ids) > 1 for c in built.cases)
    topics = sorted({c.type for c in built.cases if c.type})
    dropped = ", ".join(f"{q} ({k})" for q, k in built.dropped_many_answers)
    origin = f"`{source.label}`" + (f", sha256 `{source.sha256}`" if source.sha256 else "")
    return f"""# {name} — Chinese questions and replies from the ChatterBot corpus

A small real Chinese retrieval set (issue 14): which reply in the corpus answers this question?

## Provenance and licence
- Source: the PyPI package `chatterbot-corpus` {source.version or ""} (Gunther Cox and contributors,
  github gunthercox/chatterbot-corpus): its `chatterbot_corpus/data/chinese/*.yml` ({len(source.files)} topic
  files, simplified Chinese), read from {origin}.
  The data is inside the wheel: nothing is downloaded at build or run time.
- Licence: BSD, as the package declares (`License :: OSI Approved :: BSD License`; the project's
  licence is BSD 3-Clause). The wheel ships no licence text; keep the attribution above.
- What the text is: user-contributed chat-bot training dialogues, much of it machine-translated
  from the English corpus: some replies are odd or ungrammatical, punctuation mixes ASCII and
  full-width forms. It is small, real Chinese, not a curated IR benchmark; read the numbers as a
  check that Chinese retrieval works, not as a quality ranking of pipelines in general.

## Why not InsuranceQA-zh
`insuranceqa-data` on PyPI (every release, 1.0 to 2.5.5) ships code only: the corpus is
downloaded at run time (from 2.5 on only with a purchased licence key, `INSQA_DL_LICENSE`), and
its licence (Chunsong Public License 1.0) limits the data to research use and requires derived
data to carry its notices. It cannot be shipped or rebuilt offline here.

## What is here
- `docs/<topic>-<nnn>.txt`: {len(built.docs)} documents, one per distinct reply text.
- `cases.jsonl`: {n} questions ({dev} dev / {n - dev} test by a SHA-256 of the case id);
  `relevant_ids` = the documents of the question's replies (1 to {max_answers}; {multi} questions have
  several), `reference_answer` = its first reply, `type` = topic ({", ".join(topics)}).
- `dataset.yaml`: relevance rule `doc_id`.

## How it was built
`python -m ragsweep.datasets.chatterbot_zh SOURCE datasets/{name}` (`src/ragsweep/datasets/chatterbot_zh.py`):
each conversation `[t1, t2, ...]` gives the pairs `(t1, t2), (t2, t3), ...` ({built.pairs} pairs,
{built.questions} distinct questions); every distinct reply is a document; a question with more than
{max_answers} distinct replies is a prompt rather than a question and is left out, its replies
staying in the corpus as distractors: {dropped or "none"}.
"""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragsweep.datasets.chatterbot_zh", description=__doc__.splitlines()[0])
    p.add_argument("source", help="chatterbot_corpus wheel, folder of Chinese *.yml, or 'installed'")
    p.add_argument("out_dir")
    p.add_argument("--max-answers", type=int, default=DEFAULT_MAX_ANSWERS)
    args = p.parse_args(argv)
    source = read_source(args.source)
    built = build(source, args.max_answers)
    write(built, source, args.out_dir, args.max_answers)
    print(
        f"{args.out_dir}: {len(built.docs)} documents, {len(built.cases)} cases "
        f"({len(built.dropped_many_answers)} questions with > {args.max_answers} replies left out)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
