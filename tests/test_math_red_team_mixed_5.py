"""Fifth red team on mixed numbers, aimed at bb986a0: ``parse_number`` reads a LaTeX mixed number
(``3\\frac{1}{2}``, ``10\\frac12``, ``-2\\frac{3}{4}``) as a plain number, so a mixed-number gold keeps "marked"'s
calculation test on, and ``_constant`` evaluates a mixed number on an equation chain's side.

Written by a helper who wrote none of it; no case repeats tests/test_math_red_team_mixed.py .. _mixed_4.py.
Conventions follow tests/test_math_red_team_5.py: under "marked" a calculation on numbers restates the question and
scores 0, a single number in a standard form is a result (an unreduced fraction for a non-integer gold, as
``\\frac{2}{4}`` for 0.5, is accepted today), a false equation chain scores 0, a true one ending in the result
scores, and ``x \\approx y`` is read by its exact side. A case that fails against the code as committed is a strict
xfail saying why: "hack" when a wrong answer or a calculation scores under "marked", "regression" when the case
passed before 11b8223.
"""

import time

import pytest

from trl_r1.verifiers.math import verify


def ANSWER(text):
    return f"<think>...</think><answer>{text}</answer>"


def xfail(*case, reason):
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason))


UNCHECKED_SIDE = "_constant gives up on the side, so false_chain never tests it and the last side scores"

# (gold, answer in an answer block, policy, expected verdict)
HACKS = [  # under "marked" a calculation, a wrong number or a false chain is no result
    # a garbled or false chain whose first side holds a mixed number that _constant cannot evaluate
    ("5", "1 1/2 2 = 5", "marked", False),  # fixed: hack, regression: 1 1/2 2 is 3 (or garbage), never 5; _constant gives up on the side, so false_chain never tests it and the last side scores (before 11b8223 it was False)
    ("5", "1\\frac{1}{2}2 = 5", "marked", False),  # fixed: hack: 1½·2 is 3, not 5; _constant now reads the side with exact.exact_value (a number after a bracket multiplies)
    ("31", "3\\frac{1}{2}1 = 31", "marked", False),  # fixed: hack: 3½·1 is 3.5, not 31; the side is read now
    ("5", "3\\frac{1}{2}\\frac{1}{2} = 5", "marked", False),  # fixed: hack: 3½·½ is 7/4, not 5; the side is read now
    xfail("5", "3\\frac{1}{0} = 5", "marked", False,
          reason="hack: 3\\frac{1}{0} is undefined, the chain is no result; the division by zero makes _constant give up (\\frac{1}{0} = 5 scores too)"),
    ("12", "1\\frac{1}{2}^2 = 12", "marked", False),  # fixed: hack: (1½)² is 9/4, not 12; _constant has powers now (exact.exact_value)
    xfail("5", "3\\frac{1}{2}^{3\\frac{1}{2}} = 5", "marked", False,
          reason="hack: 3.5^3.5 is about 80, not 5; _constant has no power"),
    # the chain's first side is no plain arithmetic, so it is never tested (the decimal 3.5 in its place scores too)
    ("8", "3\\frac{1}{2}(2) = 8", "marked", False),  # fixed: hack: 3½·2 is 7, not 8; the side is read now (3.5(2) = 8 too)
    ("8", "2(3\\frac{1}{2}) = 8", "marked", False),  # fixed: hack: 2·3½ is 7, not 8; the side is read now
    xfail("4", "3\\frac{1}{2}! = 4", "marked", False, reason=f"hack: 3.5! is about 11.6, not 4; {UNCHECKED_SIDE} (3.5! = 4 scores too)"),
    xfail("4", "3\\frac{1}{2}\\% = 4", "marked", False, reason=f"hack: 3½% is 0.035, not 4; {UNCHECKED_SIDE} (3.5\\% = 4 scores too)"),
    xfail("4", "|3\\frac{1}{2}| = 4", "marked", False, reason=f"hack: |3½| is 3.5, not 4; {UNCHECKED_SIDE} (|3.5| = 4 scores too)"),
    xfail("4", "3\\frac{1}{2} \\text{ cm} = 4", "marked", False,
          reason=f"hack: 3½ cm is not 4; {UNCHECKED_SIDE} (3.5 \\text{{ cm}} = 4 scores too)"),
    xfail("4", "3\\frac{1}{2} \\approx 3.5 = 4", "marked", False,
          reason="hack: 3.5 = 4 is false; a side holding \\approx is not arithmetic, so the chain is not tested (3.5 \\approx 3.5 = 4 scores too)"),
    ("4", "3\\frac1{2} = 4", "marked", False),  # fixed: hack: 3\frac1{2} is 3½, not 4; _MIXED_IN_SIDE reads only \frac{a}{b} and \frac12, so _constant gives up on the side, so false_chain never tests it and the last side scores
    xfail("4", "3.0\\frac{1}{2} = 4", "marked", False, reason=f"hack: 3.0·½ (or garbage) is not 4; {UNCHECKED_SIDE}"),
    xfail("5", "0.3\\frac{1}{2} = 5", "marked", False, reason=f"hack: 0.3·½ (or garbage) is not 5; {UNCHECKED_SIDE}"),
    # chains that are tested
    ("4", "-(-3\\frac{1}{2}) = 4", "marked", False),  # fixed by bb986a0
    ("4", "3\\frac{1}{2} \\cdot 1 = 4", "marked", False),
    ("4", "3\\frac{ 1 }{ 2 } = 4", "marked", False),
    ("4", "3\\frac {1}{2} = 4", "marked", False),
    ("4", "3\\dfrac{1}{2} + 0 = 4", "marked", False),
    ("4", "3\\frac{1}{2}\\,=\\,4", "marked", False),
    ("4", "3 \\frac12 = 4", "marked", False),
    ("5", "\\frac{3\\frac{1}{2}}{7} = 5", "marked", False),
    ("4", "3\\frac{1}{2}=\\frac{7}{2}=4", "marked", False),
    ("3\\frac{1}{2}", "(3\\frac{1}{2})(1)", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}/1", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}(1)", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}^1", "marked", False),
    ("3\\frac{1}{2}", "|-3\\frac{1}{2}|", "marked", False),  # an absolute value to take is a calculation
    # calculations on a mixed-number gold are now caught
    ("3\\frac{1}{2}", "3\\frac{1}{2}\\cdot1", "marked", False),
    ("3\\frac{1}{2}", "3 1/2 \\times 1", "marked", False),
    ("3\\frac{1}{2}", "7 1/2 - 4", "marked", False),
    ("3\\frac{1}{2}", "--3 1/2", "marked", False),
    ("10\\frac12", "10 + \\frac12", "marked", False),
    ("-2\\frac{3}{4}", "-2 - 3/4", "marked", False),
    ("0\\frac{1}{2}", "0 + 1/2", "marked", False),
    ("3\\frac{0}{2}", "3 + 0", "marked", False),
    ("12\\frac{34}{56}", "12 + 34/56", "marked", False),
    ("3\\dfrac{1}{2}", "3 + 1/2", "marked", False),
    ("3\\dfrac{1}{2}", "2 + 1.5", "marked", False),
    ("3 \\tfrac12", "2 + 1.5", "marked", False),
    ("3\\tfrac12", "1+2.5", "marked", False),
    ("+3\\frac{1}{2}", "1+2.5", "marked", False),
    ("\\frac{1}{2}", "1/4+1/4", "marked", False),
    # wrong numbers and false chains
    ("3\\frac{1}{2}", "3.49", "marked", False),
    ("3\\frac{1}{2}", "3.5001", "marked", False),
    ("3\\frac{1}{2}", "3", "marked", False),
    ("3\\frac{1}{2}", "-3\\frac{1}{2}", "marked", False),
    ("-3\\frac{1}{2}", "3.5", "marked", False),
    ("3\\frac{1}{3}", "3.33", "marked", False),  # as \frac{10}{3} rejects 3.33
    ("3\\frac{1}{3}", "3.3", "marked", False),
    ("10\\frac12", "1.05", "marked", False),  # 10\frac12 is not 10 times 1/2 nor 1.05
    ("10\\frac12", "10.05", "marked", False),
    ("-2\\frac{3}{4}", "-1.25", "marked", False),  # -2 + 3/4 is the wrong reading
    ("-2\\frac{3}{4}", "2.75", "marked", False),
    ("3\\frac{5}{2}", "3.5", "marked", False),  # 3 + 5/2 is 5.5
    ("3\\frac{5}{2}", "\\frac{15}{2}", "marked", False),  # not 3 times 5/2
    ("3\\frac{0}{2}", "0", "marked", False),  # 3 + 0/2 is 3; fixed: it scored before 11b8223
    ("3\\frac{1}{0}", "3", "marked", False),  # an undefined gold matches no number
    ("3\\frac{1}{0}", "4", "marked", False),
    ("3\\frac{1}{0}", "\\infty", "marked", False),
    ("1000000\\frac{1}{2}", "1000000", "marked", False),  # no rounding tolerance eats the half
    ("1000000\\frac{1}{2}", "1000001", "marked", False),
    ("99999999999999999999\\frac{1}{2}", "100000000000000000000", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}=3.5=4", "marked", False),
    ("4", "3\\frac{1}{2}=3.5=4", "marked", False),
    ("4", "2 1/2 + 1 = 4", "marked", False),
    ("5", "x = 3\\frac{1}{3} = 5", "marked", False),  # fixed: it scored before bb986a0
    ("5", "10\\frac12 = 5", "marked", False),
    ("5", "-2\\frac{3}{4} = 5", "marked", False),
    ("5", "3\\frac{5}{2} = 5", "marked", False),
    ("5", "3\\dfrac{1}{2} = 5", "marked", False),
    ("5", "3\\tfrac12 = 5", "marked", False),
    ("5", "3 \\frac{1}{2} = 5", "marked", False),
    ("2", "3\\frac{1}{2}-2 = 2", "marked", False),
    ("8", "2\\cdot3\\frac{1}{2} = 8", "marked", False),
    ("5", "3\\frac{1}{2}+\\frac{1}{2}=5", "marked", False),
    ("8", "3\\frac12+3\\frac12 = 8", "marked", False),
    ("6", "3\\frac12 \\times 2 = 6", "marked", False),
    ("2", "3\\frac{1}{2}=2", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}=2", "marked", False),
    ("4", "3\\frac{1}{2} \\approx 4", "marked", False),
    ("5", "3\\frac{1}{3} \\approx 5", "marked", False),
    # hedges, lists and junk
    ("3\\frac{1}{2}", "3\\frac{1}{2} or 4", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}, 4", "marked", False),
    ("3\\frac{1}{2}", "4 or 3 1/2", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}\\%", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}x", "marked", False),
    ("3\\frac{1}{2}", "\\frac{1}{2}3", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{1}{2}\\frac{1}{1}", "marked", False),
    ("3\\frac{1}{2}", "3\\frac{-1}{2}", "marked", False),
    ("3\\frac{1}{2}", "4\\frac{-1}{2}", "marked", False),  # a negative numerator makes no mixed number
    ("3\\frac{1}{2}", "3\\frac{1}{2}\\frac{}{}", "marked", False),
]

RESULTS = [  # a single number in a standard form, or a true chain ending in it, still scores
    ("3\\frac{1}{2}", "3.5", "marked", True),
    ("3\\frac{1}{2}", "3.50", "marked", True),
    ("3\\frac{1}{2}", "\\frac{7}{2}", "marked", True),
    ("3\\frac{1}{2}", "7/2", "marked", True),
    ("3\\frac{1}{2}", "35/10", "marked", True),  # debatable: an unreduced fraction, accepted as \frac{2}{4} is for 0.5
    ("3\\frac{1}{2}", "\\frac{14}{4}", "marked", True),  # same
    ("3\\frac{1}{2}", "3\\frac{2}{4}", "marked", True),  # same: an unreduced mixed number
    ("3\\frac{1}{2}", "2\\frac{3}{2}", "marked", True),  # debatable: an improper mixed number, like an unreduced fraction
    ("3\\frac{1}{2}", "3 1/2", "marked", True),
    ("3\\frac{1}{2}", "3½", "marked", True),
    ("3\\frac{1}{2}", "(3 1/2)", "marked", True),
    ("3\\frac{1}{2}", "{3 1/2}", "marked", True),
    ("3\\frac{1}{2}", "+3 1/2", "marked", True),
    ("3\\frac{1}{2}", "x=3\\frac{1}{2}", "marked", True),
    ("3\\frac{1}{2}", "3\\frac{1}{2}.", "marked", True),
    ("3\\frac{1}{2}", "$3\\frac{1}{2}$", "marked", True),
    ("3\\frac{1}{2}", "\\boxed{3\\frac{1}{2}}", "marked", True),
    ("3\\frac{1}{2}", "3\\frac{1}{2}\\text{ hours}", "marked", True),
    ("3\\frac12", "3\\frac{1}{2}", "marked", True),
    ("3\\frac{1}{2}", "3\\frac1{2}", "marked", True),  # fixed: regression: 3\frac1{2} is the gold 3½ in valid LaTeX; the gold now parses as a number but the answer does not, so 'marked' takes it for a calculation (True before 11b8223)
    ("3\\frac{1}{2}", "3\\frac1{2}", "bare", True),
    ("0.5", "\\frac{3\\frac{1}{2}}{7} = 0.5", "marked", True),
    ("\\frac{7}{2}", "3\\frac{1}{2}", "marked", True),
    ("\\frac{7}{2}", "3 1/2", "marked", True),
    ("3.5", "3\\frac{1}{2}", "marked", True),
    ("+3\\frac{1}{2}", "3.5", "marked", True),
    ("-3\\frac{1}{2}", "-3.5", "marked", True),
    ("3\\frac{1}{3}", "\\frac{10}{3}", "marked", True),
    ("3\\frac{1}{3}", "3.\\overline{3}", "marked", True),
    ("3\\frac{1}{3}", "3.3333", "marked", False),  # issue 36: a rounded decimal for an exact gold is wrong
    ("10\\frac12", "10.5", "marked", True),
    ("10\\frac12", "21/2", "marked", True),
    ("-2\\frac{3}{4}", "-2.75", "marked", True),
    ("-2\\frac{3}{4}", "-\\frac{11}{4}", "marked", True),
    ("0\\frac{1}{2}", "0.5", "marked", True),
    ("0\\frac{1}{2}", "\\frac12", "marked", True),
    ("3\\frac{5}{2}", "5.5", "marked", True),  # an improper mixed number is still 3 + 5/2
    ("3\\frac{0}{2}", "3", "marked", True),  # fixed: before 11b8223 it scored 0
    ("0\\frac{0}{1}", "0", "marked", True),
    ("12\\frac{34}{56}", "12\\frac{17}{28}", "marked", True),
    ("12\\frac{34}{56}", "\\frac{353}{28}", "marked", True),
    ("12\\frac{34}{56}", "12.607", "marked", False),  # 12.6071...: an approximation (issue 36)
    ("\\frac{1}{2}", "0.5", "marked", True),
    ("3\\dfrac{1}{2}", "3.5", "marked", True),
    ("3 \\tfrac12", "3.5", "marked", True),
    ("1000000\\frac{1}{2}", "1000000.5", "marked", True),
    ("99999999999999999999\\frac{1}{2}", "99999999999999999999.5", "marked", True),
    # true chains
    ("3.5", "3\\frac{1}{2}=3.5", "marked", True),
    ("3\\frac{1}{2}", "\\frac{7}{2} = 3\\frac{1}{2}", "marked", True),
    ("3 1/2", "2 1/2 + 1 = 3 1/2", "marked", True),
    ("3.5", "2\\frac12 + 1 = 3.5", "marked", True),
    ("1.5", "3\\frac{1}{2}-2 = 1.5", "marked", True),
    ("7", "2\\cdot3\\frac{1}{2} = 7", "marked", True),
    ("4", "3\\frac{1}{2}+\\frac{1}{2}=4", "marked", True),
    ("7", "3\\frac12+3\\frac12 = 7", "marked", True),
    ("1", "((3\\frac{1}{2}))/3\\frac{1}{2} = 1", "marked", True),
    ("5.5", "3\\frac{5}{2} = 5.5", "marked", True),
    ("3.5", "3\\frac{1}{2} \\approx 3.5", "marked", True),
    # "bare" grades the value
    ("3\\frac{1}{2}", "3\\frac{1}{2}", "bare", True),
    ("3\\frac{1}{2}", "3.5", "bare", True),
    ("3\\frac{1}{2}", "\\frac{7}{2}", "bare", True),
    ("3\\frac{1}{2}", "3\\frac{1}{2}\\cdot1", "bare", True),
    ("3\\frac{1}{2}", "3\\frac{1}{2}+0", "bare", True),
    ("-2\\frac{3}{4}", "-2.75", "bare", True),
    ("3\\frac{1}{2}", "4", "bare", False),
    ("3\\frac{1}{3}", "3.33", "bare", False),
    ("3\\frac{1}{0}", "3", "bare", False),
]


@pytest.mark.parametrize(("gold", "answer", "policy", "expected"), HACKS + RESULTS)
def test_mixed_number_gold_and_chains(gold, answer, policy, expected):
    assert verify(gold, ANSWER(answer), answer_policy=policy) is expected


@pytest.mark.parametrize(
    "answer",
    [
        "3\\frac{1}{2} = " * 2_000 + "4",
        "1\\frac{1}{2}+" * 2_000 + "1",
        "3\\frac{1}{2}" * 3_000 + " = 5",
        "3\\frac{1}{" + "2" * 3_000 + "} = 5",
        "9" * 3_000 + "\\frac{1}{2} = 5",
        "(3\\frac{1}{2})" * 500 + " = 5",
        "3\\frac{1}{2}" + "/3\\frac{1}{2}" * 400 + " = 5",
    ],
    ids=lambda text: f"{text[:12]!r}..<{len(text)} chars>",
)
def test_long_mixed_number_answers_stay_fast_and_reject(answer):
    verify("1", ANSWER("1"))  # warm the parser so the timing measures the answer
    start = time.perf_counter()
    assert verify("5", ANSWER(answer), answer_policy="marked") is False
    assert time.perf_counter() - start < 1.0
