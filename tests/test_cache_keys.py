"""One way to key a cache: ``ragsweep.core.keys``.

Keys are the same in every process, never shared between caches, and see every part in its order; a code
fingerprint sees an edited module without importing it; the content ids ragsweep has published (dataset
splits, case ids, chunk ids, corpus and file hashes) keep their values; and nothing outside core/ hashes
but the places allowed.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.core import keys
from ragsweep.core.keys import CodeDependencies, cache_key, code_fingerprint, digest, file_digest

SRC = Path(__file__).resolve().parents[1] / "src" / "ragsweep"

_PARTS = ("question", 3, None, [1, 2], {"b": 1, "a": 2.5}, ("x", True))


def test_a_key_is_the_same_in_another_process():
    code = (
        "from ragsweep.core.keys import cache_key, code_fingerprint\n"
        f"print(cache_key('served-query', *{_PARTS!r}))\n"
        "print(code_fingerprint(('ragsweep.core.keys',), ('pydantic',)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [cache_key("served-query", *_PARTS), code_fingerprint(("ragsweep.core.keys",), ("pydantic",))]


def test_namespaces_and_part_boundaries_never_collide():
    made = [
        cache_key("served-query", "a"),
        cache_key("served-chunks", "a"),
        cache_key("served", "-query", "a"),
        cache_key("served-query", "a", ""),
        cache_key("n", "a\0b"),
        cache_key("n", "a", "b"),
        cache_key("n", ["a", "b"]),
        cache_key("n", "a:b"),
        cache_key("n", 1),
        cache_key("n", "1"),
        cache_key("n", True),
        cache_key("n", None),
        cache_key("n", "None"),
    ]
    assert len(set(made)) == len(made)


def test_the_order_of_parts_matters_and_a_mapping_order_does_not():
    assert cache_key("n", "a", "b") != cache_key("n", "b", "a")
    assert cache_key("n", ["a", "b"]) != cache_key("n", ["b", "a"])
    assert cache_key("n", {"a": 1, "b": 2}) == cache_key("n", {"b": 2, "a": 1})
    assert cache_key("n", ("a", 1)) == cache_key("n", ["a", 1])
    assert len(cache_key("n", "a", length=16)) == 16 and cache_key("n", "a").startswith(cache_key("n", "a", length=16))


@pytest.fixture
def probe_package(tmp_path, monkeypatch) -> Path:
    """A package on the path whose every module fails when imported."""
    package = tmp_path / "fingerprint_probe"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('the package was imported')\n")
    (package / "leaf.py").write_text("raise RuntimeError('the module was imported')\nVALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    keys._fingerprint.cache_clear()
    yield package
    keys._fingerprint.cache_clear()


def test_an_edited_module_changes_the_fingerprint_and_none_is_imported(probe_package):
    leaf = probe_package / "leaf.py"
    before = code_fingerprint(("fingerprint_probe.leaf",))
    whole = code_fingerprint(("fingerprint_probe",))
    assert "fingerprint_probe" not in sys.modules and "fingerprint_probe.leaf" not in sys.modules
    leaf.write_text(leaf.read_text() + "VALUE = 2\n")
    keys._fingerprint.cache_clear()
    assert code_fingerprint(("fingerprint_probe.leaf",)) != before
    assert code_fingerprint(("fingerprint_probe",)) != whole  # a package: every module of it
    assert "fingerprint_probe" not in sys.modules and "fingerprint_probe.leaf" not in sys.modules


def test_a_package_version_is_part_of_the_fingerprint_and_a_missing_module_is_named():
    assert code_fingerprint((), ("pydantic",)) != code_fingerprint((), ("numpy",))
    with pytest.raises(LookupError, match="no_such_module_here"):  # never a key blind to the code it names
        code_fingerprint(("no_such_module_here",))
    assert CodeDependencies(packages=("scipy",)).fingerprint() == code_fingerprint(("ragsweep",), ("scipy",))


def test_published_content_ids_keep_their_values(tmp_path):
    # ids written into datasets, run folders and manifests: a new value would orphan what was written
    from ragsweep.datasets._util import short_hash, split_for
    from ragsweep.evaluation.runfolder import file_hash, stored_chunk_id
    from ragsweep.pipeline.corpus import Corpus, ParsedDocument

    text = "合同 clause ü"
    assert short_hash(text, 10) == hashlib.sha1(text.encode()).hexdigest()[:10]
    bucket = int(hashlib.sha256(b"case-7").hexdigest()[:8], 16) / 0xFFFFFFFF
    assert split_for("case-7") == ("dev" if bucket < 0.5 else "test")
    chunk = stored_chunk_id("a.md", 0, 4, text, {stored_chunk_id("a.md", 0, 4, "other", {}): "other"})
    assert chunk.endswith("~" + hashlib.sha256(text.encode()).hexdigest()[:12])
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'{"id": "c1"}\n')
    assert file_hash(path) == hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    assert file_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest() and file_digest(tmp_path / "no") == "-"

    docs = [ParsedDocument(doc_id=d, text=t, format="md", parser="p", sha256="-", seconds=0.0) for d, t in
            [("b.md", "second"), ("a.md", text)]]  # fmt: skip
    corpus = Corpus(docs_dir=str(tmp_path), documents=docs, skipped=[], pdf_pipeline="native")
    old = hashlib.sha256()
    for doc in sorted(docs, key=lambda d: d.doc_id):
        old.update(doc.doc_id.encode() + b"\0" + hashlib.sha256(doc.text.encode()).digest())
    assert corpus.content_hash == old.hexdigest()
    docs[0].headings = [(0, "Heading")]
    outlines = [(d.doc_id, d.title, d.headings) for d in sorted(docs, key=lambda d: d.doc_id)]
    assert corpus.outline_hash == hashlib.sha256(json.dumps(outlines).encode()).hexdigest()
    assert digest(text, 8) == hashlib.sha256(text.encode()).hexdigest()[:8]


_HASHING = re.compile(r"\bhashlib\b|\bblake2b\b|\bsha(1|224|256|384|512)\(")
# the one hash left outside core/: the splitter's in-process memo of a text's chunks
ALLOWED = ("pipeline/chunking.py",)


def test_outside_core_nothing_hashes_but_the_allowed_places():
    sites = [
        (path.relative_to(SRC).as_posix(), n)
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "core"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _HASHING.search(line) and not line.lstrip().startswith(("import ", "#"))
    ]
    assert len(sites) <= 6 and all(where in ALLOWED for where, _ in sites), sites
