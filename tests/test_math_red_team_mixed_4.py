"""Fourth red team on the mixed-number rule (11b8223 .. 25f6b67): mixed numbers after exponents, in sequences,
ranges, ratios, roots and fractions, mixed-number golds in every spelling (plain, ``3½``, ``3\\tfrac12``,
``#### 3 1/2``), and equation chains that end in a mixed number, under both policies.

Written by a helper who wrote none of it; no case repeats tests/test_math_red_team_mixed.py, _mixed_2.py or
_mixed_3.py. Each verdict is decided by mathematics, with a comment where it is debatable. A case that fails
against the code as committed is a strict xfail saying why: "hack" when a wrong answer or a calculation scores
under "marked", "regression" when the case passed before 11b8223.
"""

import time

import pytest

from trl_r1.verifiers.math import verify
from trl_r1.verifiers.math.screening import canonical


def ANSWER(text):
    return f"<think>...</think><answer>{text}</answer>"


def xfail(*case, reason):
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason))


GOLD_CALC = "the mixed-number gold 3\\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic"

# (gold, answer in an answer block, policy, expected verdict)
HACKS = [  # under "marked" a calculation or a wrong statement is no result
    # a mixed-number gold switches off the calculation test: any arithmetic that evaluates to 7/2 scores
    ("3 1/2", "2 + 1 1/2", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("3 1/2", "7 \\div 2", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("3 1/2", "4 - 1/2", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("3 1/2", "3 1/2 + 0", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("3 1/2", "\\frac{7}{2} \\cdot 1", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("#### 3 1/2", "2 + 1 1/2", "marked", False),  # fixed: hack, regression: GSM8K gold; the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("2 1/3", "1 + 1 1/3", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("-3 1/2", "-3 - 1/2", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("3 1/2 hours", "2 + 1 1/2", "marked", False),  # fixed: hack, regression: the mixed-number gold 3\frac{1}{2} is not taken for a plain number, so 'marked' never tests the answer for unevaluated arithmetic
    ("3\\frac{1}{2}", "2 + 1 1/2", "marked", False),  # fixed: hack, regression: a LaTeX mixed-number gold switches off the calculation test (before 11b8223 1 1/2 read 11/2)
    ("3\\frac{1}{2}", "3 + 1/2", "marked", False),  # fixed: hack (not a regression: it scored before 11b8223 too): a LaTeX mixed-number gold switches off the calculation test
    ("3½", "3 + ½", "marked", False),  # fixed: hack (not a regression: verify returned None before): a vulgar mixed-number gold switches off the calculation test
    # a chain that starts at a mixed number: false_chain does not evaluate 3\frac{1}{2} (nor \frac72 = 1.5), so a
    # false first step is read by its last side
    ("1.5", "3 1/2 = 1.5", "marked", False),  # fixed: hack, regression: 3 1/2 = 1.5 is false; false_chain does not evaluate 3\frac{1}{2}, the last side 1.5 scores
    ("1.5", "3 1/2 = 3/2", "marked", False),  # fixed: hack, regression: a false chain read by its last side
    ("2.5", "x = 3 1/2 = 2.5", "marked", False),  # fixed: hack, regression: a false chain read by its last side
    ("15.5", "3 1/2 = 15.5", "marked", False),  # fixed: hack (not a regression: before 11b8223 it read 31/2 = 15.5, a true chain): 3.5 = 15.5 is false
    ("15.5", "3½ = 15.5", "marked", False),  # fixed: hack (not a regression: it scored before too): 3.5 = 15.5 is false
    # debatable: a root is as much a calculation as 3 + 1/2, but "marked" lets \sqrt{2.25} through for 1.5 as well
    xfail("1.5", "\\sqrt{2 1/4}", "marked", False,
          reason="hack (debatable: \\sqrt{2.25} scores too), regression: before 11b8223 it read \\sqrt{21/4}"),
    # what holds
    ("500", "10^3 1/2", "marked", False),  # 10^3 * 1/2: a product
    ("512", "2^{10} 1/2", "marked", False),
    ("\\frac{1}{20}", "10^{-1} 1/2", "marked", False),
    ("1", "2^1 1/2", "marked", False),
    ("1.5", "1 1/2 2 1/2", "marked", False),  # two numbers for one
    ("2.5", "1 1/2 2 1/2", "marked", False),
    ("3.75", "1 1/2 2 1/2", "marked", False),  # never the product
    ("\\frac{1}{2}", "\\frac{1 1/2}{3}", "marked", False),
    ("\\frac{1}{2}", "\\dfrac{1 1/2}{3}", "marked", False),
    ("\\frac{3}{2}", "\\tfrac{3 1/2}{7/3}", "marked", False),
    ("-1", "1 1/2-2 1/2", "marked", False),
    ("1.5", "1 1/2 to 2 1/2", "marked", False),
    ("2.5", "1 1/2 to 2 1/2", "marked", False),
    ("3.75", "1 1/2 to 2 1/2", "bare", False),
    ("3.5", "3 1/2 or 4 1/2", "marked", False),  # a hedge between two values
    ("4.5", "3 1/2 or 4 1/2", "marked", False),
    ("3.5", "3 1/2 or 4 1/2", "bare", False),
    ("4.5", "x = 4 1/2 \\text{ or } x = 3 1/2", "marked", False),
    ("3.5", "3 1/2; 4 1/2", "marked", False),
    ("\\frac{1}{2}", "1 1/2:3", "marked", False),
    ("3.5", "3/2 = 3 1/2", "marked", False),
    ("3.5", "1.5 = 3 1/2", "marked", False),
    ("3.5", "3 1/2 = 15.5", "marked", False),
    ("4", "3 1/2 \\approx 4", "marked", False),
    ("3.5", "3 1/2 (15 1/2)", "marked", False),
    ("2.25", "1 1/2 \\times 1 1/2", "marked", False),
    ("2.25", "(1 1/2)^2", "marked", False),
    ("1.5", "about 1 1/2", "marked", False),  # a hedge, as "about 1.5" is
    ("#### 3 1/2", "15.5", "marked", False),
    ("3 1/2", "31/2", "marked", False),
    ("3 1/2", "3/2", "marked", False),
    ("3 1/2", "3*1/2", "marked", False),
    ("15.5", "3\x001/2", "bare", False),  # a NUL byte, the rule's own placeholder, is no space
    ("1.5", "3\x001/2", "bare", False),
    ("56", "5\x006", "marked", False),
]

GOLDS = [  # a mixed number as the gold, in every spelling
    ("#### 3 1/2", "3.5", "bare", True),
    ("#### 3 1/2", "3.5", "marked", True),
    ("#### 1,000 1/2", "1000.5", "marked", True),
    ("3½", "3.5", "marked", True),
    ("3\\tfrac{1}{2}", "3 1/2", "marked", True),
    ("-3 1/2", "-3.5", "marked", True),
    ("3 1/2", "7/2", "marked", True),
    ("3 1/2", "3 \\frac{1}{2}", "marked", True),
    ("3 1/2", "3½", "marked", True),
    ("3 1/2", "\\frac{14}{4}", "marked", True),
    ("3 1/2", "3 2/4", "marked", True),
    ("2 1/3", "7/3", "marked", True),
    ("3 1/2 hours", "3.5", "marked", True),
    ("\\$3 1/2", "3.5", "bare", True),
    ("3 1/2", "15.5", "bare", False),
    ("3 1/2", "1.5", "bare", False),
    ("3½", "15.5", "bare", False),
    ("3\\frac{1}{2}", "1.5", "bare", False),
    ("-3 1/2", "-2.5", "bare", False),
    ("3 1/2 hours", "15.5", "bare", False),
    ("3 1/2", "3, 1/2", "bare", False),
]

CONTEXT = [  # honest mixed numbers after exponents, in sequences, roots, fractions, ratios and chains
    # debatable: x^2 1/2 could be read x^{2 1/2}, but in TeX and plain text alike the exponent is the one token 2,
    # and what follows is a factor: x^2 * 1/2
    ("\\frac{1}{2}x^2", "x^2 1/2", "bare", True),
    ("\\frac{x^2}{2}", "x^2 1/2", "marked", True),  # debatable: the coefficient written after the power
    ("500", "10^3 1/2", "bare", True),
    ("512", "2^{10} 1/2", "bare", True),
    ("0.05", "10^{-1} 1/2", "bare", True),
    ("\\frac{e^2}{2}", "e^2 1/2", "bare", True),
    ("1", "2^1 1/2", "bare", True),
    ("\\frac{1}{2}", "x^0 1/2", "bare", True),
    ("\\frac{1}{2}x^{-1}", "x^{-1} 1/2", "bare", True),
    ("2^{10.5}", "2^{10 1/2}", "bare", True),
    ("1.5, 2.5", "1 1/2 2 1/2", "bare", True),  # two mixed numbers side by side: a list, never a product
    ("(1.5, 2.5)", "(1 1/2 2 1/2)", "bare", True),
    ("1.5, 2.5, 3.5", "1 1/2, 2 1/2, 3 1/2", "bare", True),
    ("3.5, 4.5", "3 1/2, 4 1/2", "marked", True),
    ("3.5, 4.5", "3 1/2; 4 1/2", "marked", True),
    ("\\frac{1}{2}", "\\frac{1 1/2}{3}", "bare", True),
    ("1.5", "\\sqrt[3]{3 3/8}", "bare", True),
    ("\\sqrt[3]{3.375}", "\\sqrt[3]{3 3/8}", "bare", True),
    ("-1", "1 1/2-2 1/2", "bare", True),  # debatable: a range is written with a dash too, but as math it is a difference
    ("1.5", "1 1/2 hours", "marked", True),
    ("1.5", "1 1/2 \\text{ hours}", "marked", True),
    ("0.5", "1 1/2 : 3", "bare", True),  # a ratio's value
    ("3.5", "3 1/2:1", "marked", True),  # debatable: 3.5:1 scores too
    ("0.75", "3 1/2 / 4 2/3", "bare", True),  # 3.5 / (14/3)
    ("0.5", "P = 1 1/2 / 3", "bare", True),
    ("2.25", "1 1/2 \\times 1 1/2", "bare", True),
    ("\\frac{3}{2}", "1 \\tfrac{1}{2}", "marked", True),
    ("\\frac{3}{2}", "1\\dfrac12", "marked", True),
    ("3.5", "3 1/2 = 7/2", "marked", True),
    ("3.5", "\\frac{7}{2}=3 1/2", "marked", True),
    ("3.5", "x = 7/2 = 3 1/2", "marked", True),
    ("3.5", "3 1/2 \\text{ (three and a half)}", "marked", True),
]

FOUND = [  # honest answers rejected
    ("3.5", "7/2 = 3 1/2", "marked", True),  # fixed: the chain 7/2 = 3\frac{1}{2} is rejected, though \frac{7}{2} = 3 1/2 and 3 1/2 = 7/2 score (not a regression)
    ("3.5", "7/2 = 3 1/2", "bare", True),  # fixed: as above, also under 'bare' (not a regression)
    ("3.5", "7/2=3½", "marked", True),  # fixed: as above, with ½ (not a regression)
    # debatable: a minus sign after ^ makes the rule treat the exponent as a term opener, so the whole part is glued
    # into the exponent (10^-1\frac{1}{2}); read like x^2 1/2 it is 10^{-1} * 1/2
    xfail("0.05", "10^-1 1/2", "bare", True,
          reason="^- opens a term: 10^-1\\frac{1}{2}, neither 0.05 nor 10^{-1.5} (not a regression)"),
    xfail("\\frac{x^{-2}}{2}", "x^-2 1/2", "bare", True, reason="^- opens a term: x^-2\\frac{1}{2} (not a regression)"),
]


@pytest.mark.parametrize("gold, answer, policy, expected", HACKS + GOLDS + CONTEXT + FOUND)
def test_mixed_number_gold_and_context(gold, answer, policy, expected):
    assert verify(gold, ANSWER(answer), answer_policy=policy) is expected


@pytest.mark.parametrize(
    "text",
    [
        "x^2 1/2 " * 2_500,
        "10^-1 1/2 " * 2_000,
        "3 1/2 = " * 2_500,
        "½" * 20_000,
        "1 1/2 2 1/2 " * 1_700,
        "\\frac{1 1/2}{3}" * 1_300,
        "1 1/2:" * 3_300,
        "#### 1 1/2 " * 1_800,
        "_ 1 1/2" * 2_800,
        "1\x001/2 " * 3_000,
        "1 " + "1/2 " * 5_000,
        "or 1 1/2 " * 2_200,
        "½⁄" * 10_000,
        "1," * 10_000 + "000 1/2",
    ],
    ids=lambda text: f"{text[:12]!r}..<{len(text)} chars>",
)
def test_canonical_stays_fast(text):
    start = time.perf_counter()
    canonical(text)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("answer", ["3 1/2 = " * 2_500 + "3.5", "1 1/2 2 1/2 " * 1_700, "x^2 1/2 " * 2_500])
def test_verify_long_answer_stays_fast_and_rejects(answer):
    start = time.perf_counter()
    assert verify("3.5", ANSWER(answer), answer_policy="marked") is False
    assert time.perf_counter() - start < 1.0
