"""Bad input ends a command with one line naming the value, the file or the folder: never a traceback,
never a run folder left behind, never an empty answer that looks like a result."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import ragsweep
from ragsweep.cli import main
from ragsweep.core.errors import ConfigError, RunError
from ragsweep.pipeline.config import PipelineConfig, parse_overrides
from support import MINI, ROOT, RUNS

ZH_DOCS = ROOT / "tests" / "fixtures" / "corpus_zh"


def _one_line_error(capsys, code: int, *named: str) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("ragsweep"), err
    assert "Traceback" not in err
    for name in named:
        assert name in err, err
    return err


@pytest.mark.parametrize(
    ("item", "named"),
    [
        ("llm_model=`id`", "quote it, e.g. llm_model='`id`'"),
        ("prompt_template={context}{query}$(id)", "prompt_template='{context}{query}$(id)'"),
        ("llm_model=@foo", "llm_model='@foo'"),
        ("top_k=", "the value is empty"),
        ("top_k=  ", "the value is empty"),
    ],
)
def test_a_set_value_that_is_not_a_yaml_scalar_is_one_line(capsys, item, named):
    with pytest.raises(ConfigError, match="override"):
        parse_overrides([item])
    code = main(["retrieve", "--docs", str(ZH_DOCS), "--set", item, "熊猫"])
    _one_line_error(capsys, code, repr(item), named)


def test_set_values_written_as_yaml_still_parse():
    assert parse_overrides(["a=null", "b=''", "c='`id`'", "d=5", "e=x y"]) == {
        "a": None, "b": "", "c": "`id`", "d": 5, "e": "x y",
    }  # fmt: skip


EVIL = "$parser: !!python/object/apply:os.system ['touch {marker}']\n"


@pytest.fixture
def evil_pipeline(tmp_path) -> tuple[Path, Path]:
    marker = tmp_path / "ran"
    path = tmp_path / "app.yaml"
    path.write_text(EVIL.format(marker=marker) + (ROOT / "pipelines" / "default.yaml").read_text())
    return path, marker


def test_python_tags_in_a_pipeline_are_refused_and_run_nothing(capsys, evil_pipeline, tmp_path):
    path, marker = evil_pipeline
    code = main(["retrieve", "--pipeline", str(path), "--docs", str(ZH_DOCS), "熊猫"])
    _one_line_error(capsys, code, str(path), "line 1, column 10", "!!python/object/apply:os.system is refused")
    # validate --parse with the same pipeline, and the API (what the pytest plugin calls) say the same
    code = main(["validate", "--dataset", str(MINI), "--parse", "--pipeline", str(path)])
    _one_line_error(capsys, code, "!!python/object/apply:os.system is refused")
    with pytest.raises(RunError, match=r"line 1, column 10: the tag !!python/object/apply:os\.system is refused"):
        ragsweep.evaluate(path, MINI, limit=1)
    for tag in ("!!python/name:os.system", "!!python/tuple [1, 2]", "!!python/object/new:os.system ['id']"):
        other = tmp_path / "other.yaml"
        other.write_text(f"$x: {tag}\n")
        with pytest.raises(ConfigError, match="is refused"):
            PipelineConfig.load(other)
    assert not marker.exists()


def test_the_pytest_plugin_refuses_python_tags_in_one_line(evil_pipeline, tmp_path):
    from importlib.metadata import entry_points

    path, marker = evil_pipeline
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nragsweep_pipeline = {path.name}\nragsweep_dataset = {MINI}\n")
    (tmp_path / "test_quality.py").write_text(
        'def test_q(ragsweep_eval):\n    ragsweep_eval.assert_quality(min={"recall@5": 0.1})\n'
    )
    plugin = [] if any(ep.value == "ragsweep.pytest_plugin" for ep in entry_points(group="pytest11")) else [
        "-p", "ragsweep.pytest_plugin"
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    assert (
        f"ragsweep: {path.name} on {MINI}: {path}: line 1, column 10: the tag !!python/object/apply:os.system is "
        "refused" in done.stdout
    ), done.stdout[-3000:]
    assert "Traceback" not in done.stdout and not marker.exists()


def test_pathway_and_importable_class_tags_still_load(tmp_path):
    path = tmp_path / "app.yaml"
    path.write_text("$x: !!str 5\n$splitter: !pw.xpacks.llm.splitters.TokenCountSplitter\n  max_tokens: 300\n")
    raw = PipelineConfig.load(path).raw
    assert {str(k): v for k, v in raw.items()}["$x"] == "5"
    assert PipelineConfig.load(ROOT / "pipelines" / "default.yaml").top_k >= 1


def test_retrieve_k_zero_is_refused():
    with pytest.raises(SystemExit) as done:  # argparse: usage and one error line, rc 2
        main(["retrieve", "--docs", str(ZH_DOCS), "-k", "0", "熊猫"])
    assert done.value.code == 2


def test_retrieve_scope_naming_no_document_is_an_error(capsys):
    code = main(["retrieve", "--docs", str(ZH_DOCS), "--workers", "1", "--scope", "nope.txt", "熊猫吃什么"])
    _one_line_error(capsys, code, "--scope 'nope.txt': no such document in", str(ZH_DOCS))


def test_evaluate_from_two_threads_takes_turns_and_gives_the_same_numbers(monkeypatch):
    import ragsweep.commands.eval as eval_command

    active, most = [0], [0]
    real = eval_command.evaluate

    def counted(*args, **kwargs):  # how many evaluations are inside Pathway at once
        active[0] += 1
        most[0] = max(most[0], active[0])
        time.sleep(0.2)  # long enough for the other thread to come in, were it let in
        try:
            return real(*args, **kwargs)
        finally:
            active[0] -= 1

    monkeypatch.setattr(eval_command, "evaluate", counted)
    results, errors = [], []

    def one():
        try:
            results.append(ragsweep.evaluate(ROOT / "pipelines" / "default.yaml", MINI, limit=4, fresh_retrieval=True))
        except Exception as err:  # noqa: BLE001 - the test reports what a thread raised
            errors.append(err)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and len(results) == 2, errors
    assert most[0] == 1
    assert results[0].metrics["recall@5"] == results[1].metrics["recall@5"]


FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file may grow: every write fails, as on a full disk
from ragsweep.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_out_that_cannot_be_written_at_the_start_is_one_line_and_leaves_nothing(tmp_path):
    out = tmp_path / "runs"
    args = ["eval", "--dataset", str(MINI), "--limit", "2", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("ragsweep: error")]
    assert done.returncode == 2, done.stderr[-3000:]
    assert lines == [f"ragsweep: error: cannot start a run folder in {out}: [Errno 27] File too large; nothing was run"]
    assert "Traceback" not in done.stderr
    assert list(out.iterdir()) == []  # no half-made run folder

    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "ragsweep.cli", *args[:-1], str(in_the_way / "runs")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"ragsweep: error: cannot create {in_the_way / 'runs'}" in done.stderr


def test_compare_markdown_that_cannot_be_written_is_refused_before_comparing(capsys, tmp_path):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    runs = [str(RUNS / "tiny_a"), str(RUNS / "tiny_b")]
    code = main(["compare", *runs, "--markdown", str(in_the_way / "cmp.md")])
    out = capsys.readouterr()
    assert code == 2 and out.out == "", out.out  # no table printed: refused before the comparison
    assert out.err.strip() == (
        f"ragsweep compare: error: --markdown {in_the_way / 'cmp.md'}: cannot write there: "
        f"[Errno 17] File exists: '{in_the_way}'"
    )
    code = main(["compare", *runs, "--markdown", str(tmp_path)])
    assert code == 2 and "is a folder, not a file" in capsys.readouterr().err
    code = main(["compare", *runs, "--markdown", str(tmp_path / "new" / "cmp.md")])
    assert code == 0 and (tmp_path / "new" / "cmp.md").read_text().startswith("#")


# ------------------------------------------------------------------ what validate catches that metrics would accept

GOOD = "The giant panda eats bamboo for most of the day. Pandas live in the mountains of Sichuan.\n"


def _dataset(root: Path, cases: list[dict], settings: str = "") -> Path:
    import json

    (root / "docs").mkdir(parents=True)
    (root / "docs" / "good.txt").write_text(GOOD)
    (root / "docs" / "empty.txt").write_text("")
    (root / "README.md").write_text("# a test dataset\n")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    if settings:
        (root / "dataset.yaml").write_text(settings)
    return root


def _case(case_id: str, question: str = "What does the giant panda eat?", evidence: str = "eats bamboo") -> dict:
    return {"id": case_id, "question": question, "evidence": [{"text": evidence, "doc_id": "good.txt"}]}


def test_validate_names_short_evidence_control_characters_and_bidi_marks(tmp_path, capsys):
    root = _dataset(tmp_path / "ds", [
        _case("ok"),
        _case("one-char", evidence="b"),
        _case("esc", question="What does the \x1b[31mgiant panda eat?"),
        _case("rtl\u202e"),
        _case("nul", evidence="eats\x00 bamboo"),
        _case("lines", question="What does the giant\npanda eat?", evidence="eats\nbamboo"),
    ])  # fmt: skip
    code = main(["validate", "--dataset", str(root)])
    out, err = capsys.readouterr()
    assert code == 1, out
    assert "case 'one-char': evidence 'b' is shorter than evidence_min_chars 2 (dataset.yaml)" in out
    assert "question: case 'esc': control character U+001B (unnamed) at character 14" in out
    assert "id: case 'rtl\\u202e': bidirectional mark U+202E (RIGHT-TO-LEFT OVERRIDE) at character 3" in out
    assert "evidence[0].text: case 'nul': control character U+0000 (unnamed) at character 4" in out
    assert "'ok'" not in out and "'lines'" not in out  # a line break in a question or a quote is text
    assert out.count(": control character ") == 2 and out.count(": bidirectional mark ") == 1
    assert out.count("shorter than evidence_min_chars") == 1 and "Traceback" not in err

    (root / "dataset.yaml").write_text("evidence_min_chars: 20\n")  # the knob: "eats bamboo" is now too short
    assert main(["validate", "--dataset", str(root)]) == 1
    assert "case 'ok': evidence 'eats bamboo' is shorter than evidence_min_chars 20" in capsys.readouterr().out


def test_a_text_over_the_length_limit_is_named_by_validate_and_refused_by_eval(tmp_path, capsys):
    long_question = "What does the giant panda eat " + "and eat " * 20 + "?"
    root = _dataset(tmp_path / "ds", [_case("ok"), _case("long", question=long_question)], "question_max_chars: 100\n")
    assert main(["validate", "--dataset", str(root)]) == 1
    assert (
        f"question: case 'long': {len(long_question)} characters, over question_max_chars 100 (dataset.yaml)"
        in capsys.readouterr().out
    )
    code = main(["eval", "--dataset", str(root), "--no-validate", "--out", str(tmp_path / "runs")])
    _one_line_error(capsys, code, "case 'long': question is", "over question_max_chars 100")
    assert not (tmp_path / "runs").exists()  # refused before any run folder
    with pytest.raises(RunError, match="over question_max_chars 100"):
        ragsweep.evaluate(ROOT / "pipelines" / "default.yaml", root, validate=False)


def test_unanswerable_cases_whose_documents_did_not_parse_are_not_correct_abstentions(tmp_path):
    unanswerable = {"question": "What colour is the sky on Mars?", "unanswerable": True}
    root = _dataset(tmp_path / "ds", [
        _case("a1"),
        {"id": "u-unparsed", **unanswerable, "doc_scope": ["empty.txt"]},  # an empty file is skipped by the parse
        {"id": "u-parsed", **unanswerable, "doc_scope": ["good.txt"]},
    ])  # fmt: skip
    report = ragsweep.evaluate(ROOT / "pipelines" / "default.yaml", root)
    by_id = {c.id: c for c in report.cases}
    assert by_id["u-unparsed"].answer is not None and by_id["u-unparsed"].answer.abstained
    assert by_id["u-unparsed"].metrics["abstention_correct"] is None
    assert "left out of the abstention metrics" in by_id["u-unparsed"].notes["abstention"]
    assert by_id["u-parsed"].metrics["abstention_correct"] == 1.0
    assert report.counts["unanswerable_unparsed"].n == 1
    assert report.counts["abstention_correct"].n == 2 and report.counts["abstention_recall"].n == 1
    from ragsweep.report.terminal import summary_table

    assert "abstention: 1 unanswerable case(s) whose documents were not parsed are left out" in summary_table(report)
