"""``ragsweep.argtypes.bounded``: the one range-checked argparse type of both command lines."""

from __future__ import annotations

import argparse
import math

import pytest

from ragsweep.argtypes import bounded
from ragsweep.cli import build_parser


def test_an_int_in_range_is_returned_as_an_int():
    parse = bounded(int, low=1)
    assert parse("3") == 3 and isinstance(parse("3"), int)
    assert parse(" 1 ") == 1


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5", ""])
def test_an_int_below_low_or_not_a_whole_number_is_refused_with_the_text_quoted(text):
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        bounded(int, low=1, name="a whole number of threads")(text)
    assert str(caught.value) == f"must be a whole number of threads >= 1, got {text!r}"


def test_a_float_range_is_inclusive_at_both_ends():
    parse = bounded(float, 0, 1, name="a share")
    assert parse("0") == 0.0 and parse("1") == 1.0 and parse("0.05") == pytest.approx(0.05)
    for text in ("-0.01", "1.01", "nan", "inf", "half"):
        with pytest.raises(argparse.ArgumentTypeError, match=rf"^must be a share from 0 to 1, got '{text}'$"):
            parse(text)


def test_the_default_names_and_open_ends():
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be a whole number >= 0, got '-1'$"):
        bounded(int, low=0)("-1")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be a number <= 2, got '3'$"):
        bounded(float, high=2)("3")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be a number, got 'x'$"):
        bounded(float)("x")
    assert math.isinf(bounded(float, low=0)("inf"))


def test_a_bad_factory_call_fails_at_once():
    with pytest.raises(ValueError, match="low 2 > high 1"):
        bounded(int, 2, 1)
    with pytest.raises(TypeError):
        bounded(str)  # type: ignore[type-var]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["eval", "--dataset", "d", "--sample", "0"], "argument --sample: must be a whole number >= 1, got '0'"),
        (
            ["eval", "--dataset", "d", "--judge-replicates", "x"],
            "argument --judge-replicates: must be a whole number >= 1, got 'x'",
        ),
        (
            ["eval", "--dataset", "d", "--judge-probe", "-1"],
            "argument --judge-probe: must be a whole number >= 0, got '-1'",
        ),
        (
            ["eval", "--dataset", "d", "--judge-temperature", "2.5"],
            "argument --judge-temperature: must be a temperature from 0 to 2, got '2.5'",
        ),
        (
            ["eval", "--dataset", "d", "--max-failure-rate", "1.5"],
            "argument --max-failure-rate: must be a share from 0 to 1, got '1.5'",
        ),
        (
            ["index", "--docs", "d", "--workers", "0"],
            "argument --workers: must be a whole number of processes >= 1, got '0'",
        ),
        (
            ["generate", "--out", "o", "--test-fraction", "2"],
            "argument --test-fraction: must be a share from 0 to 1, got '2'",
        ),
        (["generate", "--out", "o", "--n", "0"], "argument --n: must be a whole number of cases >= 1, got '0'"),
    ],
)
def test_the_command_lines_report_the_option_and_the_range(argv, message, capsys):
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_the_command_lines_accept_the_ends_of_their_ranges():
    args = build_parser().parse_args(
        ["eval", "--dataset", "d", "--judge-probe", "0", "--judge-temperature", "2", "--max-failure-rate", "0"]
    )
    assert (args.judge_probe, args.judge_temperature, args.max_failure_rate) == (0, 2.0, 0.0)
