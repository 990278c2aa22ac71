"""One clause of a PDF reworded in place: the words of one line of text put in reverse order.

A PDF cannot be edited as text (its content streams are compressed, its glyphs are font codes): read as
UTF-8 and written back, it is a corrupt file that no parser reads. Here one ``(...) Tj`` string of a
page's content stream is decoded, its words (runs of glyph codes between the font's space glyph) are
reversed and the stream is compressed again; the file is then saved by PDFium so that its cross-reference
table is right. Only glyphs the line already shows are used, so the font draws and maps them as before:
the parsed text differs in that one line, which now reads, e.g., "accessible and operational fully Site
the have shall HDI 1.6" for "1.6 HDI shall have the Site fully operational and accessible".

Works on PDFs whose text is drawn with two-byte glyph codes and ``Tj`` (the shipped CUAD exhibits, filed
through EDGAR); raises ``ValueError`` for a PDF it cannot reword. Used by ``watch_updates.py``; run as a
script it rewords a copy of each PDF of a folder and prints how many it could reword and which line changed:

    .venv/bin/python benchmarks/pdf_reword.py [--docs datasets/cuad/docs]
    .venv/bin/python benchmarks/pdf_reword.py --smoke     # the first two shipped PDFs
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SPACE = b"\x00\x03"  # the space glyph of the CUAD PDFs' Identity-encoded fonts
_OBJECT_STREAM = re.compile(rb"(\d+) 0 obj\s*<<(.*?)>>\s*stream\r?\n", re.S)
_SHOWN_STRING = re.compile(rb"\(((?:\\.|[^\\)])*)\)\s*Tj", re.S)
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t"}


def _unescape(s: bytes) -> bytes:
    return re.sub(rb"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), s, flags=re.S)


def _escape(s: bytes) -> bytes:
    for a, b in ((b"\\", b"\\\\"), (b"(", b"\\("), (b")", b"\\)"), (b"\r", b"\\r"), (b"\n", b"\\n")):
        s = s.replace(a, b)
    return s


def reversed_words(shown: bytes) -> bytes:
    """The glyph string with its leading spaces kept and its words in reverse order."""
    glyphs = [shown[i : i + 2] for i in range(0, len(shown), 2)]
    lead = next((i for i, g in enumerate(glyphs) if g != SPACE), len(glyphs))
    body = b"".join(glyphs[lead:])  # cut at even offsets only: bytes.split could cut inside a glyph
    words, start = [], 0
    for i in range(0, len(body), 2):
        if body[i : i + 2] == SPACE:
            words.append(body[start:i])
            start = i + 2
    words.append(body[start:])
    return b"".join(glyphs[:lead]) + SPACE.join(w for w in reversed(words) if w)


def _long_lines(stream: bytes) -> list[re.Match[bytes]]:
    """The shown strings of a stream that hold a line of several words."""
    lines = []
    for match in _SHOWN_STRING.finditer(stream):
        shown = _unescape(match.group(1))
        if len(shown) % 2 == 0 and shown.count(SPACE) > 20 and len(shown.strip(b"\x00\x03")) > 40:
            lines.append(match)
    return lines


def reword_pdf(path: Path, nth: int = 8) -> None:
    """Reverse the words of the ``nth`` long line of the first content stream that has that many;
    the file is replaced in one rename (as an editor saves)."""
    # deferred: PDFium only where a PDF is edited
    import pypdfium2

    data = path.read_bytes()
    for match in _OBJECT_STREAM.finditer(data):
        start, end = match.end(), data.find(b"endstream", match.end())
        try:
            stream = zlib.decompressobj().decompress(data[start:end])
        except zlib.error:
            continue
        lines = _long_lines(stream)
        if len(lines) <= nth:
            continue
        line = lines[nth]
        edited = stream[: line.start(1)] + _escape(reversed_words(_unescape(line.group(1)))) + stream[line.end(1) :]
        body = zlib.compress(edited)
        head = re.sub(rb"/Length \d+", b"/Length %d" % len(body), data[match.start() : match.end()], count=1)
        raw = path.with_name(f".{path.name}.raw")
        raw.write_bytes(data[: match.start()] + head + body + b"\r\n" + data[end:])
        saved = path.with_name(f".{path.name}.saved")
        doc = pypdfium2.PdfDocument(str(raw))
        try:
            doc.save(str(saved))  # PDFium writes the cross-reference table anew
        finally:
            doc.close()
            raw.unlink()
        os.replace(saved, path)
        return
    raise ValueError(f"{path}: no content stream with {nth + 1} lines of two-byte glyph text to reword")


def _lines(path: Path) -> list[str]:
    import pypdfium2

    doc = pypdfium2.PdfDocument(str(path))
    try:
        return [line for page in doc for line in page.get_textpage().get_text_range().splitlines()]
    finally:
        doc.close()


def changed_lines(pdf: Path, work: Path) -> list[tuple[str, str]] | None:
    """The (before, after) lines of a reworded copy of ``pdf``; None when it cannot be reworded."""
    copy = work / pdf.name
    shutil.copy(pdf, copy)
    try:
        reword_pdf(copy)
    except ValueError:
        return None
    return [(a, b) for a, b in zip(_lines(pdf), _lines(copy), strict=True) if a != b]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", default=str(ROOT / "datasets" / "cuad" / "docs"))
    parser.add_argument("--smoke", action="store_true", help="the first two PDFs: does it run (not a survey)")
    args = parser.parse_args()
    pdfs = sorted(p for p in Path(args.docs).iterdir() if p.suffix.lower() == ".pdf")
    if args.smoke:
        print("SMOKE RUN: the first two PDFs of datasets/cuad/docs")
        pdfs = pdfs[:2]
    reworded, one_line = 0, 0
    with tempfile.TemporaryDirectory(prefix="ragsweep-pdf-reword-") as tmp:
        for pdf in pdfs:
            changed = changed_lines(pdf, Path(tmp))
            if changed is None:
                print(f"RESULT {pdf.name[:60]}: cannot be reworded")
                continue
            reworded += 1
            one_line += len(changed) == 1
            shown = changed[0][1].strip()[:70] if changed else "(no line changed)"
            print(f"RESULT {pdf.name[:60]}: {len(changed)} line(s) changed: {shown!r}")
    print(f"RESULT reworded {reworded} of {len(pdfs)} PDFs, {one_line} with exactly one line changed")
    summary = {"smoke": args.smoke, "pdfs": len(pdfs), "reworded": reworded, "one_line_changed": one_line}
    print("JSON " + json.dumps(summary))
    return 0 if reworded == one_line else 1


if __name__ == "__main__":
    sys.exit(main())
