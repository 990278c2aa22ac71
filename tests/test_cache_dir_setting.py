"""Where the caches live: ``$RAGSWEEP_CACHE_DIR``, else ``.cache/ragsweep`` — never the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsweep.core.cache_files import default_cache_dir


@pytest.mark.parametrize(("value", "expected"), [(None, ".cache/ragsweep"), ("", ".cache/ragsweep"), ("/x/y", "/x/y")])
def test_the_cache_folder_is_the_setting_or_the_default(monkeypatch, value, expected) -> None:
    if value is None:
        monkeypatch.delenv("RAGSWEEP_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("RAGSWEEP_CACHE_DIR", value)
    assert default_cache_dir() == Path(expected)
