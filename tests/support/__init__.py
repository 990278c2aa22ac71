"""The paths every test file reads: the repository, its test fixtures, its shipped datasets and pipelines.

Test modules import them by name (``from support import MINI, PIPELINE``): pytest puts ``tests/`` on
``sys.path`` as it does for the other helper modules there (fake_openai, loopback).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
RUNS = FIXTURES / "runs"
DATASETS = ROOT / "datasets"
MINI = DATASETS / "cuad-mini"
ZH = DATASETS / "zh-long"
PIPELINE = ROOT / "pipelines" / "default.yaml"
CHINESE = ROOT / "pipelines" / "chinese.yaml"
