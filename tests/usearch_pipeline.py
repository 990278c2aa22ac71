"""The default pipeline with its brute-force KNN index replaced by a USearch one of a given width: an index
that refuses vectors of another width (MiniLM's are 384 wide), for the tests of a width mismatch."""

from __future__ import annotations

from pathlib import Path

DEFAULT = Path(__file__).resolve().parent.parent / "pipelines" / "default.yaml"
KNN = "$knn: !pw.stdlib.indexing.BruteForceKnnFactory\n"
METRIC = "  metric: !pw.stdlib.indexing.BruteForceKnnMetricKind.COS\n"


def write_usearch_pipeline(path: Path, dimensions: int) -> Path:
    """``path`` holding the default pipeline whose ``$knn`` is a ``UsearchKnnFactory`` of ``dimensions``."""
    text = DEFAULT.read_text()
    assert KNN in text and METRIC in text, "the default pipeline's KNN index is no longer where this expects it"
    text = text.replace(KNN, f"$knn: !pw.stdlib.indexing.UsearchKnnFactory\n  dimensions: {dimensions}\n")
    path.write_text(text.replace(METRIC, "  metric: !pw.stdlib.indexing.USearchMetricKind.COS\n"))
    return path
