"""Answers that look expensive but whose value is plain: exact arithmetic at bounded cost (`exact`), Euler's
identity, and the near misses and bombs that must still fail, fast."""

import time
from fractions import Fraction

import pytest

from trl_r1.verifiers.math import check
from trl_r1.verifiers.math.exact import MAX_CHARS, exact_value

def short(value) -> str:
    """A test id that a bomb does not make 100,000 characters long."""
    text = str(value)
    return text if len(text) <= 40 else f"{text[:30]}...({len(text)} chars)"


SECONDS = 2.0  # no case may take longer (the verifier's latency bound)


@pytest.fixture(scope="module", autouse=True)
def started_workers():
    """Boot the sympy workers before timing, as a training run has them running."""
    check("1", r"\boxed{\sqrt{1}}")


def boxed(answer: str) -> str:
    return f"<think>...</think> The answer is $\\boxed{{{answer}}}$."


def timed_check(gold: str, answer: str, policy: str = "bare", approximations: str = "reject"):
    start = time.perf_counter()
    verdict = check(gold, boxed(answer), answer_policy=policy, approximations=approximations)
    assert time.perf_counter() - start < SECONDS
    return verdict


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (r"10^{10^{10}}-10^{10^{10}}+7", 7),  # equal huge parts cancel
        (r"2^{1000000}/2^{999999}", 2),
        (r"\frac{2^{1000000}}{2^{999999}}", 2),
        (r"4^{500000}/2^{999999}", 2),  # bases as prime powers: 4^n is 2^{2n}
        (r"\frac{6^{1000}}{2^{1000}}-3^{1000}", 0),
        (r"(10^{10^{10}}+1)-(10^{10^{10}}-1)", 2),
        (r"0.5^{10^{9}}\cdot2^{10^{9}}", 1),
        ("+".join(str(k) for k in range(1, 3001)), 3000 * 3001 // 2),  # thousands of terms
        ("(" * 500 + "7" + ")" * 500, 7),  # hundreds of brackets
        ("{" * 500 + "7" + "}" * 500, 7),
        (r"\frac{1}{" * 300 + "2" + "}" * 300, 2),  # 1/(1/(...)): 300 nested fractions
        (r"-2^{2}+3!\div\frac{1}{2}", 8),  # -(2^2), then 6/(1/2)
        (r"2(3+4)-[1+1]", 12),
        (r"0.1+0.2", Fraction(3, 10)),  # decimals as written, exactly
        (r"2\times10^{3}", 2000),
        (r"1^{10^{30}}", 1),
    ],
    ids=short,
)
def test_exact_value_reads_plain_arithmetic_of_any_size(text, value):
    assert exact_value(text) == value


@pytest.mark.parametrize(
    "text",
    [
        r"10^{10^{10}}",  # a value too large to write out is never a rational answer
        r"10^{10^{10}}-10^{10^{10}-1}",  # cancels only in part: undecided, never estimated
        r"10^{10^{10^{10}}}",  # a tower
        r"2^{2^{2^{2^{2^{2}}}}}",
        "x+1", r"\sqrt{4}", r"\pi", "5%", "1,000",  # not plain arithmetic
        r"3\frac{1}{2}", r"\frac{1}{2}3",  # a mixed number: read by its own rule
        "2^34", "2^-1", "2^3!", "2^3^2", "2^{3}^{2}",  # TeX exponents that read two ways
        r"\frac{1}{0}", "0^{0}", "0^{-1}", "2^{1/2}",
        "(((7)", "7)", "()", "+", "3!!", "5001!",
        "+".join(["1"] * (MAX_CHARS // 2 + 1)),  # past the length cap
    ],
    ids=short,
)
def test_exact_value_leaves_what_it_cannot_settle_undecided(text):
    start = time.perf_counter()
    assert exact_value(text) is None
    assert time.perf_counter() - start < SECONDS


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        ("7", r"10^{10^{10}} - 10^{10^{10}} + 7"),
        ("2", r"2^{1000000}/2^{999999}"),
        ("0", r"e^{i\pi} + 1"),  # Euler's identity: i is the imaginary unit against a constant gold
        ("-1", r"e^{i\pi}"),
        ("0", r"e^{\pi i}+1"),
        ("1", "i^4"),
        (str(3000 * 3001 // 2), " + ".join(str(k) for k in range(1, 3001))),
        ("7", "(" * 300 + "7" + ")" * 300),
        ("7", r"\left(" * 200 + "7" + r"\right)" * 200),
        ("7", "{" * 9_000 + "7" + "}" * 9_000),  # TeX groups are taken off in one pass, not layer by layer
        ("0.3333", r"\frac{1}{6}\cdot 2"),  # a decimal gold matches a correctly rounded exact value
        (r"\frac{1}{2}", r"\sin\left(\frac{\pi}{6}\right)"),
    ],
    ids=short,
)
def test_cheap_exact_answers_are_right(gold, answer):
    assert timed_check(gold, answer).equivalent is True


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        ("7", r"10^{10^{10}} - 10^{10^{10}} + 8"),  # off by one after the cancellation
        ("7", r"10^{10^{10}} - 10^{10^{10}} + 1 + 7"),
        ("7", r"10^{10^{10}} - 10^{10^{10}-1} + 7"),  # almost cancels
        ("2", r"2^{1000000}/2^{999998}"),
        ("1", r"10^{10^{10}}"),  # alone: never accepted, whatever the gold
        ("0", r"10^{10^{10}}"),
        (r"10^{10^{10}}", r"10^{10^{10}}+1"),
        ("0", r"e^{i\pi}"),
        ("2", "i+1"),
        ("1", "i"),
        (str(3000 * 3001 // 2 + 1), "+".join(str(k) for k in range(1, 3001))),
        ("8", "(" * 300 + "7" + ")" * 300),
        ("7", "(" * 100_000 + "7" + ")" * 100_000),  # a nesting bomb: too long to read
        ("0", "+".join(["1", "-1"] * 20_000)),  # a long sum past the cap
        ("0.3333", r"\frac{1}{6}\cdot 2+10^{-4}"),
        (r"\frac{1}{3}", r"0.3333+0"),  # a calculation on a decimal is exact, not rounded
    ],
    ids=short,
)
def test_near_misses_and_bombs_fail_fast(gold, answer):
    assert timed_check(gold, answer).equivalent is False


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        ("10^{25}", r"\sqrt{10^{50}+1}"),  # equal to 1e-51 relative, still not equal
        (r"\sqrt{2}", r"\sqrt{2}+10^{-30}"),
        (r"\pi", "3.141592653589793238462"),  # truncated, not rounded: within 1e-20 but not the value rounded
        (r"\sqrt{2}", "1.414213562373095048801"),  # truncated (rounds to ...802)
        (r"\pi", "3.14159265358979323846264338327950288419716939937510581"),  # one unit off in the 53rd place
    ],
    ids=short,
)
def test_a_near_miss_is_not_accepted_by_tolerance(gold, answer):
    assert timed_check(gold, answer).equivalent is False
    assert timed_check(gold, answer, approximations="rounded").equivalent is False


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        (r"\pi", "3.141592653589793238463"),  # correctly rounded: approximations="rounded" accepts it
        (r"\sqrt{2}", "1.414213562373095048802"),
        (r"\sqrt{2}", "1.4142"),
        (r"\pi", "3.14159265358979323846264338327950288419716939937510582"),  # 53 places: checked at 63 digits
    ],
    ids=short,
)
def test_correct_roundings_pass_only_under_the_rounded_policy(gold, answer):
    assert timed_check(gold, answer).equivalent is False  # issue 36: an approximation is wrong by default
    assert timed_check(gold, answer, approximations="rounded").equivalent is True


def test_exact_forms_still_pass():
    assert timed_check(r"2\sqrt{3}", r"\sqrt{12}").equivalent is True


def test_marked_policy_still_refuses_a_calculation_that_cancels():
    """Exact arithmetic settles the value; the marked policy still scores a calculation against a number 0."""
    verdict = timed_check("7", r"10^{10^{10}} - 10^{10^{10}} + 7", policy="marked")
    assert verdict.equivalent is False and "unevaluated arithmetic" in verdict.reason


def test_a_wall_clock_limit_bounds_a_check_that_waits():
    """The CPU limit spares a check that waits for a CPU; a caller with a latency bound (the verifier: no verdict
    takes 2 s) also sets a wall-clock limit, which kills it anyway."""
    from trl_r1.verifiers.math.pool import WorkerPool

    sleeper = WorkerPool("time:sleep", workers=1)
    try:
        sleeper.run([(0,)], timeout_s=60)
        assert sleeper.run([(0.2,)], timeout_s=0.5, wall_limit_s=1.0) == [("ok", None)]
        start = time.perf_counter()
        status, reason = sleeper.run([(60,)], timeout_s=0.5, wall_limit_s=1.0)[0]
        assert (status, reason) == ("timeout", "over the 1s wall-clock limit")
        assert time.perf_counter() - start < 1.0 + 0.5
    finally:
        sleeper.close()


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        (r"\frac{\pi}{6}", r"\frac{\pi}{6}^\circ", False),  # pi/6 degrees is not pi/6 radians
        (r"\pi", r"\pi^\circ", False),
        (r"30^\circ", r"30\text{ radians}", False),  # the angle units differ
        ("30", r"\frac{\pi}{6}\text{ radians}", False),
        (r"30^\circ", "30", True),  # a degree sign on one side only is dropped, as before
        ("60", r"60^\circ", True),
        (r"30^\circ", r"30\text{ degrees}", True),
        (r"\frac{\pi}{6}", r"\frac{\pi}{6}\text{ rad}", True),
        (r"\frac{\sqrt{3}}{2}", r"\sin 60^\circ", True),  # inside a trig function a degree is pi/180
    ],
    ids=short,
)
def test_angles_in_degrees_and_radians(gold, answer, expected):
    assert timed_check(gold, answer).equivalent is expected
