"""Issue 36, item 1: whatever a completion holds, `verify`, `check` and `check_batch` answer within 2 s on one core
and never raise; a failure the completion caused is a False verdict with its reason."""

import time

import pytest

from trl_r1.verifiers.math import Verdict, check, check_batch, verify

@pytest.fixture(scope="module", autouse=True)
def started_pool():
    """The sympy worker started, as in a training run (its one-off start is not a completion's time)."""
    check("1", r"\boxed{\sqrt{1}}")


DEPTH = 5000
TIME_BOUND_S = 2.0

PATHOLOGICAL = {
    "boxes nested": "\\boxed{" * DEPTH + "5" + "}" * DEPTH,
    "boxes and dollars nested": "\\boxed{$" * 3000 + "5" + "$}" * 3000,
    "fractions nested": "\\boxed{" + "\\frac{" * DEPTH + "1}{2}" * DEPTH + "}",
    "left/right nested": "\\boxed{" + "\\left(" * DEPTH + "5" + "\\right)" * DEPTH + "}",
    "unclosed left": "\\left(" * DEPTH + "5",
    "unclosed braces": "{" * 100_000 + "5",
    "power tower": "\\boxed{" + "2^{" * DEPTH + "5" + "}" * DEPTH + "}",
    "answer blocks nested": "<answer>" * DEPTH + "5" + "</answer>" * DEPTH,
    "many terms": "\\boxed{" + "x+" * 50_000 + "1}",
    "many list items": "\\boxed{" + "1," * 50_000 + "1}",
    "thousands of boxes": " ".join(["\\boxed{5}", "\\boxed{6}"] * 2500),
    "NUL bytes": "\\boxed{5}\x00" * 1000 + "\x00" * 100_000,
    "lone surrogate": "\\boxed{5\ud800}",
    "backslashes": "\\boxed{5}" + "\\" * 100_000,
    "a megabyte of text": "x" * 1_000_000,
    # long runs that made extraction's regexes backtrack quadratically (red team, issue 36)
    "spaces after 'is'": "The answer is" + " " * 50_000 + "\\boxed{6}",
    "digits after the box": "\\boxed{6} also " + "1" * 50_000,
    "condition words": "\\boxed{6} when " + "if " * 50_000,
    "unclosed inline math": "\\(" * 50_000 + " The answer is 6",
    "stars after 'final answer'": "final answer" + "*" * 50_000 + "6",
    "unclosed remark": "The answer is 6 (" + "a" * 50_000,
}


@pytest.mark.parametrize("policy", ["marked", "bare"])
@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_completion_answers_in_time_without_raising(name, policy):
    started = time.perf_counter()
    verdict = check("5", PATHOLOGICAL[name], answer_policy=policy)
    elapsed = time.perf_counter() - started
    assert elapsed < TIME_BOUND_S, f"{name}: {elapsed:.2f} s"
    assert verdict.equivalent in (True, False)
    if name in ("boxes nested", "boxes and dollars nested", "thousands of boxes", "a megabyte of text"):
        assert verdict.equivalent is False, verdict


def test_nested_boxes_are_rejected_with_a_reason_not_a_recursion_error():
    verdict = check("5", PATHOLOGICAL["boxes nested"])
    assert verdict == Verdict(False, "answer wrapped in over 20 boxes or math delimiters")
    assert verify("5", "\\boxed{\\boxed{\\boxed{5}}}") is True  # a few layers are still read
    assert check("\\boxed{" * DEPTH + "5" + "}" * DEPTH, "\\boxed{5}").equivalent is None  # an unusable gold


def test_a_batch_of_pathological_completions_is_bounded_per_completion():
    pairs = [("5", text) for text in PATHOLOGICAL.values()] + [("5", "The answer is \\boxed{5}.")]
    started = time.perf_counter()
    verdicts = check_batch(pairs, workers=1)
    assert time.perf_counter() - started < TIME_BOUND_S * len(pairs)
    assert verdicts[-1].equivalent is True
    assert all(v.equivalent in (True, False) for v in verdicts)


@pytest.mark.parametrize("completion", [None, 5, b"\\boxed{5}", ["\\boxed{5}"]])
def test_non_text_completion_is_a_false_verdict(completion):
    verdict = check("5", completion)
    assert verdict.equivalent is False and verdict.reason
