"""Red team (issue 36 items 2-3, issue 35 item 7): answer forms the field reads, written blind to the fixes.

Each family is a rule, not a case, so each gets a few cases in different phrasings, with its hard negatives
(a right form of a wrong value must stay wrong). Labels are by mathematics, as a careful grader reads them;
where the field disagrees, math-verify's documented reading wins. Cases that fail on main today carry
``xfail(strict=True)`` with what was seen, so they flip when fixed.

The last tests are issue 35 item 7: a math reward that cannot score a batch because its gold column is missing
must say so at WARNING, naming the columns it saw and the key that fixes it (TRL's own accuracy reward raises;
ours returned None at INFO, which default logging hides, and training went on with format alone).
"""

from __future__ import annotations

import logging

import pytest

from trl_r1.rewards.math import MathAccuracyReward
from trl_r1.verifiers.math import check

R1 = "<think>\nWorking it out step by step.\n</think>\n\n"

# family -> [(gold, completion, policy, expected)]
FORMS: dict[str, list[tuple[str, str, str, bool]]] = {
    # issue 36 item 2: a decimal for an irrational or non-terminating gold is an approximation, not the answer
    "approximation": [
        (r"\frac{3840}{289}", R1 + r"The answer is $\boxed{13.29}$.", "marked", False),
        (r"\sqrt{2}", R1 + r"The answer is $\boxed{1.414}$.", "marked", False),
        (r"288\pi", R1 + r"The answer is $\boxed{904.78}$.", "marked", False),
        ("e", R1 + r"The answer is $\boxed{2.718}$.", "marked", False),
        (".35625", R1 + r"The answer is $\boxed{0.3563}$.", "marked", False),
        (r"\frac{1}{3}", R1 + "<answer>0.3333</answer>", "marked", False),
        (r"\frac{\pi}{4}", R1 + r"So the answer is $\boxed{0.7854}$.", "marked", False),
        # exact decimals of terminating golds stay right
        (r"\frac{3}{8}", R1 + r"The answer is $\boxed{0.375}$.", "marked", True),
        (".35625", R1 + r"The answer is $\boxed{\frac{57}{160}}$.", "marked", True),
        (r"\frac{1}{3}", R1 + r"The answer is $\boxed{0.\overline{3}}$.", "marked", True),
    ],
    "unicode_prose": [
        (r"3\sqrt{13}", R1 + "The answer is 3√13.", "marked", True),
        (r"3\sqrt{13}", R1 + "<answer>3√13</answer>", "marked", True),
        (r"3\sqrt{13}", R1 + "The answer is 3√12.", "marked", False),
        (r"4.5\times10^{33}", R1 + "The answer is 4.5 × 10³³.", "marked", True),
        (r"4.5\times10^{33}", R1 + "The answer is 4.5 × 10³².", "marked", False),
        (r"\pm 2", R1 + "<answer>±2</answer>", "marked", True),
        (r"x \le 3", R1 + "<answer>x ≤ 3</answer>", "marked", True),
        (r"x \le 3", R1 + "<answer>x ≥ 3</answer>", "marked", False),
        (r"x \neq 3", R1 + "<answer>x ≠ 3</answer>", "marked", True),
        ("x^2+1", R1 + "The answer is x²+1.", "marked", True),
        ("x^2+1", R1 + "The answer is x³+1.", "marked", False),
        ("-5", R1 + "<answer>−5</answer>", "marked", True),  # U+2212
    ],
    "relation_commands": [
        ("x<3", R1 + r"The answer is $\boxed{x \lt 3}$.", "marked", True),
        ("x<3", R1 + r"The answer is $\boxed{x \gt 3}$.", "marked", False),
        (r"x \neq 3", R1 + r"The answer is $\boxed{x \ne 3}$.", "marked", True),
        ("x>5", R1 + r"The answer is $\boxed{x \gt 5}$.", "marked", True),
        (r"x \ge 2", R1 + r"The answer is $\boxed{x \geqslant 2}$.", "marked", True),
        ("3<x<5", R1 + r"The answer is $\boxed{3 \lt x \lt 5}$.", "marked", True),
    ],
    "python_syntax": [
        ("x^2+2x+1", R1 + "<answer>x**2 + 2*x + 1</answer>", "marked", True),
        ("x^2+2x+1", R1 + "<answer>(x + 1)**2</answer>", "marked", True),
        ("x^2+2x+1", R1 + "<answer>x**2 + 2*x - 1</answer>", "marked", False),
        (r"\sqrt{2}", R1 + "The answer is sqrt(2).", "marked", True),
        (r"\frac{\pi}{2}", R1 + "<answer>pi/2</answer>", "marked", True),
        ("x^3-3x", R1 + "<answer>x**3 + 3*x</answer>", "marked", False),
    ],
    "closing_sentence": [
        (r"\frac{2}{3}", R1 + "Therefore, the probability that Alice wins the game is 2/3.", "bare", True),
        (r"\frac{2}{3}", R1 + "Therefore, the probability that Alice wins the game is $\\frac{2}{3}$.", "bare", True),
        (r"\frac{2}{3}", R1 + "Therefore, the probability that Alice wins the game is 1/3.", "bare", False),
        ("72", R1 + "So Natalia sold 72 clips altogether in April and May.", "bare", True),
        ("72", R1 + "So Natalia sold 70 clips altogether in April and May.", "bare", False),
        ("24", R1 + "Hence the area of the triangle is 24 square units.", "bare", True),
    ],
    "trailing_unit": [
        ("72", R1 + r"The answer is $\boxed{72 \text{ km/h}}$.", "marked", True),
        ("72", R1 + "The answer is 72 km/h.", "marked", True),
        ("72", R1 + "<answer>72 km/h</answer>", "marked", True),
        ("72", R1 + "<answer>7.2 km/h</answer>", "marked", False),
        ("5", R1 + r"The answer is $\boxed{5 \text{ hours}}$.", "marked", True),
        ("1500", R1 + "<answer>1,500 g</answer>", "marked", True),
    ],
    "malformed_sized": [
        ("12", R1 + r"The answer is $\boxed{\left( 12 \right.}$.", "marked", True),
        ("12", R1 + r"The answer is $\boxed{\left( 13 \right.}$.", "marked", False),
        ("12", R1 + r"<answer>\left( 12 \right.</answer>", "marked", True),
        ("(3,4)", R1 + r"The answer is $\boxed{\left( 3, 4 \right.}$.", "marked", True),
        ("-7", R1 + r"The answer is $\boxed{\left. -7 \right)}$.", "marked", True),
    ],
}

# Seen on main at this branch's base (commit 996c9ce), each with the verdict observed there. All 23 math cases
# listed here failed there and pass on branch math-verifier (issue 36), so they are plain tests now.
FAILS_TODAY: dict[str, str] = {}


def _cases():
    for family, cases in FORMS.items():
        for index, (gold, completion, policy, expected) in enumerate(cases):
            case_id = f"{family}-{index}"
            marks = [pytest.mark.xfail(strict=True, reason=FAILS_TODAY[case_id])] if case_id in FAILS_TODAY else []
            yield pytest.param(gold, completion, policy, expected, id=case_id, marks=marks)


@pytest.mark.parametrize(("gold", "completion", "policy", "expected"), list(_cases()))
def test_answer_form_reads_as_the_field_reads_it(gold, completion, policy, expected):
    verdict = check(gold, completion, answer_policy=policy)
    assert verdict.equivalent is expected, f"{verdict}"


# ---------------------------------------------------------------------------------------------------------------
# issue 35 item 7: a math reward that cannot score a batch says so at WARNING, naming what it saw

def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("trl_r1")]


def test_missing_gold_column_warns_with_the_columns_it_saw(caplog):
    reward = MathAccuracyReward()
    with caplog.at_level(logging.INFO, logger="trl_r1"):
        scores = reward(prompts=["What is 2+3?"] * 2, completions=[r"\boxed{5}"] * 2,
                        gold_answer=["5", "5"], problem_id=[1, 2])
    assert scores == [None, None]  # the reward does not apply, but it must not be silent
    messages = _warnings(caplog)
    assert messages, "no WARNING: a missing gold column switches the math reward off silently"
    assert any("gold_answer" in m and "problem_id" in m for m in messages), messages


def test_missing_gold_column_warning_names_the_key_that_fixes_it(caplog):
    reward = MathAccuracyReward()
    with caplog.at_level(logging.INFO, logger="trl_r1"):
        reward(completions=[r"\boxed{5}"], reference=["5"])
    assert any("gold_column" in m for m in _warnings(caplog)), _warnings(caplog)


def test_missing_gold_column_warns_with_a_custom_gold_column_too(caplog):
    reward = MathAccuracyReward(gold_column="target", fallback_columns=())
    with caplog.at_level(logging.INFO, logger="trl_r1"):
        scores = reward(completions=[r"\boxed{5}"], solution=["5"])
    assert scores == [None]
    messages = _warnings(caplog)
    assert any("target" in m and "solution" in m for m in messages), messages


def test_a_batch_with_its_gold_column_does_not_warn(caplog):
    """The warning is about a batch the reward cannot score: a sample with an empty gold among scored ones is
    a skip (None, logged at INFO), not a switched-off reward."""
    reward = MathAccuracyReward()
    with caplog.at_level(logging.INFO, logger="trl_r1"):
        scores = reward(completions=[r"\boxed{5}", r"\boxed{5}"], solution=["5", ""])
    assert scores == [1.0, None]
    assert not [m for m in _warnings(caplog) if "column" in m], _warnings(caplog)


def test_missing_gold_column_warns_once_not_every_step(caplog):
    """Issue 35: "says so at WARNING the first time": a run of thousands of steps must not repeat it each step."""
    reward = MathAccuracyReward()
    with caplog.at_level(logging.INFO, logger="trl_r1"):
        for _ in range(3):
            reward(completions=[r"\boxed{5}"], gold_answer=["5"])
    assert len([m for m in _warnings(caplog) if "gold_answer" in m]) == 1, _warnings(caplog)
