"""The seventh set of answer-form rules (issue 36), each family with fresh cases written before the rule was run on
them: a unit on each labelled part or list item compared part by part, a number before a bracket read as a product
on every path, labelled parts that repeat a value or come out of their order, bound words by their place, odd roots
of negative numbers, E-notation inside a sum, and provisional time words around the answer."""

import time

import pytest

from trl_r1.verifiers.math import check

POLICIES = ["marked", "bare"]
T = "<think>...</think> "


def F(text: str) -> str:
    return T + f"The answer is $\\boxed{{{text}}}$."


def verdict(gold: str, completion: str, policy: str = "bare") -> bool | None:
    return check(gold, completion, answer_policy=policy).equivalent


# a part's unit against the gold part's unit, part by part; a part without a unit follows the one-value rule
PART_UNITS_ZERO = [
    ("(a) 12 cm, (b) 5 cm", T + "(a) $\\boxed{12\\text{ cm}}$ (b) $\\boxed{5\\text{ m}}$"),
    ("(a) 3 kg, (b) 4 kg", T + "(a) $\\boxed{3\\text{ g}}$ (b) $\\boxed{4\\text{ kg}}$"),
    ("(a) 12 cm, (b) 5 cm", T + "<answer>(a) 12 m, (b) 5 cm</answer>"),
    ("9 cm, 4 cm", T + "<answer>9 m, 4 cm</answer>"),
]
PART_UNITS_ONE = [
    ("(a) 12 cm, (b) 5 cm", T + "(a) $\\boxed{12}$ (b) $\\boxed{5\\text{ cm}}$"),
    ("(a) 2 hours, (b) 30 minutes", T + "(a) $\\boxed{2\\text{ h}}$ (b) $\\boxed{30\\text{ min}}$"),
    ("(a) 12 cm, (b) 5 cm", T + "<answer>(a) 12 centimeters, (b) 5 cm</answer>"),
]

# a labelled reference is ordered: its parts are a tuple, never an unordered list
ORDERED_PARTS_ZERO = [
    ("(a) 12, (b) 5", T + "<answer>(a) 5, (b) 12</answer>"),
    ("(a) 3 cm, (b) 8 cm", T + "<answer>8 cm, 3 cm</answer>"),
]
ORDERED_PARTS_ONE = [
    ("(a) 12, (b) 5", T + "<answer>12, 5</answer>"),
    ("(a) 3 cm, (b) 8 cm", T + "<answer>(a) 3 cm, (b) 8 cm</answer>"),
]

# a number right before a bracket multiplies it, and binds tighter than a division before it, on both paths
JUXTAPOSED_ZERO = [
    ("7+\\sqrt{3}", F("3(4)+\\sqrt{3}")),
    ("(7, \\pi)", F("(3(4), \\pi)")),
    ("\\frac{\\sqrt{2}}{7}", F("\\sqrt{2}/3(4)")),
    ("9+\\pi", F("(2)(3)(4)+\\pi")),  # found in review
]
JUXTAPOSED_ONE = [
    ("12+\\sqrt{3}", F("3(4)+\\sqrt{3}")),
    ("\\frac{\\sqrt{2}}{12}", F("\\sqrt{2}/3(4)")),
    ("\\{-12, e\\}", F("\\{-3(4), e\\}")),
    ("\\frac{\\pi}{12}", F("\\pi/3(4)")),
    ("3", F("\\log_2(8)")),  # a subscript's digit is no factor
    ("24+\\pi", F("(2)(3)(4)+\\pi")),  # found in review: brackets in a row are one product
]

# labelled parts keep every value, repeated or not
REPEATED_ZERO = [
    ("(3, 7)", T + "(a) $\\boxed{3}$ (b) $\\boxed{7}$ (c) $\\boxed{7}$"),
    ("(3, 7)", T + "Part 1: $\\boxed{3}$. Part 2: $\\boxed{3}$. Part 3: $\\boxed{7}$."),
    ("3", T + "(a) $\\boxed{3}$ (b) $\\boxed{3}$"),
]
REPEATED_ONE = [
    ("(7, 7)", T + "(a) $\\boxed{7}$ (b) $\\boxed{7}$"),
    ("(2, 2, 9)", T + "(i) $\\boxed{2}$ (ii) $\\boxed{2}$ (iii) $\\boxed{9}$"),
]

# variables labelled out of their order are read in their order
REORDERED_ONE = [
    ("-1, 4", T + "$x_2 = \\boxed{4}$, $x_1 = \\boxed{-1}$"),
    ("(3, 8)", T + "$b = \\boxed{8}$, $a = \\boxed{3}$"),
    ("(1, 2, 3)", T + "$z = \\boxed{3}$, $x = \\boxed{1}$, $y = \\boxed{2}$"),
]
REORDERED_ZERO = [
    ("(8, 3)", T + "$b = \\boxed{8}$, $a = \\boxed{3}$"),
    ("(4, -1)", T + "$x_2 = \\boxed{4}$, $x_1 = \\boxed{-1}$"),
]

# a bound word after the value bounds it; one that names the value (a label, an article, "up to" a symmetry) does not
BOUND_ZERO = [
    ("7", T + "<answer>7 tops</answer>"),
    ("7", F("7\\text{ at max}")),
    ("7", T + "<answer>7, at the most</answer>"),
    ("7", F("7\\text{ max.}")),
]
NAMED_ONE = [
    ("7", T + "<answer>Maximum = 7</answer>"),
    ("7", T + "$\\boxed{7 \\text{ (up to symmetry)}}$"),
    ("7", T + "<answer>7 (the minimum)</answer>"),
    ("7", T + "<answer>Max: 7</answer>"),
    ("5", F("n_{max} = 5")),  # a subscript (found on benchmarks/data/math_cases.jsonl while the rule was written)
]

# an odd root of a negative number is the real root
ODD_ROOT_ONE = [
    ("-3", F("\\sqrt[3]{-27}")),
    ("-2", F("\\sqrt[5]{-32}")),
    ("-\\frac{1}{2}", F("\\sqrt[3]{-\\frac{1}{8}}")),
    ("-\\sqrt[3]{2}", F("\\sqrt[3]{-2}")),
]
ODD_ROOT_ZERO = [
    ("3", F("\\sqrt[3]{-27}")),
    ("-2", F("\\sqrt[4]{-16}")),
]

# E-notation is one number inside a sum as it is alone
E_NOTATION_ONE = [
    ("0.0025+\\sqrt{3}", F("2.5e-3+\\sqrt{3}")),
    ("1200+\\pi", F("1.2e3+\\pi")),
    ("2e+\\sqrt{2}", F("2e+\\sqrt{2}")),  # no exponent digits: Euler's e
]
E_NOTATION_ZERO = [
    ("0.025+\\sqrt{3}", F("2.5e-3+\\sqrt{3}")),
    ("12+\\pi", F("1.2e3+\\pi")),
]

# a time word that makes the answer provisional, in the places the rule missed
PROVISIONAL_ZERO = [
    ("8", T + "The result, for the moment, is $\\boxed{8}$."),
    ("8", T + "So the answer is $\\boxed{8}$, for now."),
    ("(3, 8)", T + "Initially, (a) $\\boxed{3}$ (b) $\\boxed{8}$"),
    ("8", T + "The answer is $\\boxed{8}$ for the moment."),
]
HONEST_ONE = [
    ("8", T + "There were $\\boxed{8}$ birds on the fence at first."),
    ("(3, 8)", T + "(a) $\\boxed{3}$ (b) $\\boxed{8}$"),
]

ZERO = PART_UNITS_ZERO + ORDERED_PARTS_ZERO + JUXTAPOSED_ZERO + REPEATED_ZERO + REORDERED_ZERO + BOUND_ZERO + ODD_ROOT_ZERO + (
    E_NOTATION_ZERO + PROVISIONAL_ZERO)
ONE = PART_UNITS_ONE + ORDERED_PARTS_ONE + JUXTAPOSED_ONE + REPEATED_ONE + REORDERED_ONE + NAMED_ONE + ODD_ROOT_ONE + E_NOTATION_ONE + (
    HONEST_ONE)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(("gold", "completion"), ZERO)
def test_forms_7_wrong_answers_score_zero(gold, completion, policy):
    assert verdict(gold, completion, policy) is False


@pytest.mark.parametrize(("gold", "completion"), ONE)
def test_forms_7_right_answers_score_one(gold, completion):
    assert verdict(gold, completion) is True


BOMBS = [  # inputs aimed at the new readers: nested roots, bracket chains, E-notation runs, many parts with units
    ("5", F("\\sqrt[3]{-" * 4000 + "8" + "}" * 4000)),
    ("5", F("(2)" * 3000 + "(3)")),
    ("5", F("2(3)^{" * 3000 + "1" + "}" * 3000)),
    ("5", F("2.5e-3+" * 3000 + "1")),
    ("(1, 2)", T + " ".join(f"({'abcdefgh'[k % 8]}) $\\boxed{{{k}\\text{{ cm}}}}$" for k in range(3000))),
    ("(a) 1 cm, (b) 2 cm", T + "<answer>" + "(a) 1 m, " * 2000 + "</answer>"),
    ("5", T + "Initially, " + "(a) $\\boxed{5}$ " * 3000),
    ("5", T + "$\\boxed{5}$" + " for now" * 5000),
]


def test_forms_7_bombs_answer_within_two_seconds():
    check("5", F("x+5-x"), answer_policy="marked")  # boots the worker pool (a one-off cost, not a verdict's)
    slow = {}
    for gold, completion in BOMBS:
        started = time.perf_counter()
        check(gold, completion, answer_policy="marked")
        elapsed = time.perf_counter() - started
        if elapsed >= 2.0:
            slow[completion[:60]] = round(elapsed, 2)
    assert not slow, slow
