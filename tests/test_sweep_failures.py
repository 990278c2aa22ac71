"""When a sweep stops trying: only when its first tries fail with the same line and nothing has been scored
(the grid's knobs do not change the failure); a failure that differs, or one after a scored configuration,
fails that configuration alone."""

from __future__ import annotations

from ragsweep.core.errors import EngineError, VectorError
from ragsweep.evaluation.sweep import SAME_FAILURES_STOP, Failures

DOWN = "$embedder: OpenAIEmbedder at http://127.0.0.1:9/v1: connection refused"


def test_the_first_tries_failing_alike_stop_the_rest():
    failures = Failures()
    failures.fail(["a", "b"], EngineError(DOWN))
    assert failures.stop_line() is None  # one try says nothing about the grid's knobs
    failures.fail(["c"], EngineError(DOWN + "\n"))  # the same line, however it is wrapped
    assert SAME_FAILURES_STOP == 2
    line = failures.stop_line()
    assert line is not None and line.startswith("not run: the sweep stopped after its first 2 tries") and DOWN in line
    assert failures.reasons == dict.fromkeys("abc", DOWN)


def test_failures_that_differ_or_follow_a_scored_configuration_fail_only_themselves():
    differ = Failures()
    differ.fail(["a"], VectorError("vectors 32 wide, index expects 1536"))
    differ.fail(["b"], VectorError("vectors 32 wide, index expects 768"))  # the knob changed the failure
    assert differ.stop_line() is None
    after = Failures(scored=True)  # a resumed sweep, or one whose earlier group was scored
    after.fail(["a"], EngineError(DOWN))
    after.fail(["b"], EngineError(DOWN))
    assert after.stop_line() is None and after.reasons == {"a": DOWN, "b": DOWN}
