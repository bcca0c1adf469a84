"""Build math_fresh_2.jsonl: issue 30's second blind labelled set of (gold, completion) pairs, deterministically.

    python benchmarks/data/build_math_fresh_2.py [OUT]   # default: math_fresh_2.jsonl next to this file

Written by a helper blind to the verifier's fixes and to the first fresh set, so that the fixes are measured on
cases nobody tuned them to. Families (field ``family``): words (numbers, fractions, ordinals and decimals spelled
out; text golds answered with an article), matrix (matrices and vectors equal to the gold but written otherwise),
cheap (exact answers that only look expensive), box (broken or unusual boxes) and other (phrases, sets, units,
scientific notation, radicals, expressions, completions that run on into a new chat turn). Each family has as
many wrong answers as right ones, mostly hacks: a spelled number that is not the final one, retractions, several
answers, one wrong entry, near misses, rounded irrationals, the gold only in the reasoning or a later turn.

Templates draw their numbers from one fixed seed; hand-written cases follow. Labels are the author's
mathematical judgement (would a competent grader accept this final answer for this gold?), never a tool's.
"""

from __future__ import annotations

import json
import random
import sys
from fractions import Fraction
from functools import partial
from pathlib import Path

SEED = 20261127
OUT = Path(__file__).parent / "math_fresh_2.jsonl"

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ORDINAL_ONES = ["zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
                "eighteenth", "nineteenth"]
DENOMINATOR_WORDS = {2: ("half", "halves"), 3: ("third", "thirds"), 4: ("quarter", "quarters"),
                     5: ("fifth", "fifths"), 6: ("sixth", "sixths"), 8: ("eighth", "eighths"),
                     10: ("tenth", "tenths"), 12: ("twelfth", "twelfths"), 16: ("sixteenth", "sixteenths")}


def words(n: int, british: bool = False) -> str:
    """English words for an integer; `british` puts "and" before the last two digits ("one hundred and five")."""
    if n < 0:
        return "minus " + words(-n, british)
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("-" + ONES[n % 10] if n % 10 else "")
    for size, name in ((10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            text = words(head, british) + " " + name
            if rest:
                text += (" and " if british and rest < 100 else " ") + words(rest, british)
            return text
    raise AssertionError(n)


def ordinal(n: int) -> str:
    if n < 20:
        return ORDINAL_ONES[n]
    tens, one = divmod(n, 10)
    if not one:
        return TENS[tens][:-1] + "ieth"
    return TENS[tens] + "-" + ORDINAL_ONES[one]


def fraction_words(value: Fraction) -> str:
    name = DENOMINATOR_WORDS[value.denominator][value.numerator != 1]
    return ("one" if value.numerator == 1 else words(value.numerator)) + " " + name


def decimal_words(text: str) -> str:
    """ "2.05" -> "two point zero five" (digits after the point one by one)."""
    sign = "negative " if text.startswith("-") else ""
    whole, _, tail = text.lstrip("-").partition(".")
    return sign + words(int(whole)) + " point " + " ".join(ONES[int(d)] for d in tail)


def latex_fraction(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def matrix(rows: list[list[str]], env: str = "pmatrix", spaced: bool = True) -> str:
    gap = " " if spaced else ""
    body = f"{gap}\\\\{gap}".join(f"{gap}&{gap}".join(str(x) for x in row) for row in rows)
    return f"\\begin{{{env}}}{gap}{body}{gap}\\end{{{env}}}"


# Completion styles: (reasoning, answer) -> text whose answer is marked. Answers in LaTeX go in math mode.
def style_terse_box(reason: str, answer: str) -> str:
    return f"{reason} $\\boxed{{{answer}}}$"


def style_think_tags(reason: str, answer: str) -> str:
    return f"<think>\n{reason}\n</think>\n<answer>{answer}</answer>"


def style_markdown(reason: str, answer: str) -> str:
    return f"### Working\n- {reason}\n\n**Answer:** $\\boxed{{{answer}}}$"


def style_verbose(reason: str, answer: str) -> str:
    return (f"Let me set this up before computing anything.\n\n{reason}\n\nChecking once more, nothing changes, so the "
            f"final answer is $\\boxed{{{answer}}}$.")


def style_display(reason: str, answer: str) -> str:
    return f"{reason}\n\\[\n\\boxed{{{answer}}}\n\\]"


LATEX_STYLES = [style_terse_box, style_think_tags, style_markdown, style_verbose, style_display]


def text_answer(reason: str, phrase: str, rng: random.Random) -> str:
    """A spelled-out answer, marked in prose, in tags or in a \\text box."""
    form = rng.randrange(5)
    if form == 0:
        return f"{reason} So the answer is {phrase}."
    if form == 1:
        return f"<think>{reason}</think>\n<answer>{phrase}</answer>"
    if form == 2:
        return f"{reason}\n\n$\\boxed{{\\text{{{phrase}}}}}$"
    if form == 3:
        return f"{reason} Therefore, the final answer is: {phrase[0].upper() + phrase[1:]}."
    return f"**Reasoning.** {reason}\n\n**The answer is {phrase}.**"


class SetBuilder:
    def __init__(self) -> None:
        self.cases: list[dict] = []
        self.seen: set[tuple[str, str]] = set()

    def add(self, family: str, kind: str, gold: str, completion: str, label: bool, policy: str = "marked") -> None:
        if (gold, completion) in self.seen:
            return
        self.seen.add((gold, completion))
        self.cases.append({"gold": gold, "completion": completion, "label": label, "kind": kind, "family": family,
                           "answer_policy": policy, "source": "fresh_set_2",
                           "expected_from": "the author's mathematical judgement"})


def words_family(b: SetBuilder, rng: random.Random) -> None:
    add = partial(b.add, "words")
    reasons = ["Counting each group and adding them up gives the total.",
               "The two counts are combined and the overlap removed once.",
               "Working backwards from the last step recovers the starting amount.",
               "Each row has the same number of seats, so multiply rows by seats."]
    ranges = [(0, 19), (21, 99), (101, 999), (1001, 9999), (10001, 999999)]
    for i in range(40):  # right: the gold spelled out, British "and" or not, any case
        low, high = ranges[i % len(ranges)]
        n = rng.randint(low, high)
        phrase = words(n, british=i % 2 == 0)
        if i % 7 == 3:
            phrase = phrase.upper()
        add("integer_words", str(n), text_answer(rng.choice(reasons), phrase, rng), True)
    for i in range(30):  # wrong: near misses, digits swapped, hundred-and-five vs hundred-and-fifty
        low, high = ranges[i % len(ranges)]
        n = rng.randint(max(low, 13), high)
        wrong = [n + 1, n - 1, n * 10, int(str(n)[::-1]) if str(n)[::-1] != str(n) else n + 2][i % 4]
        add("integer_words_near_miss", str(n), text_answer(rng.choice(reasons), words(wrong, british=i % 3 == 0), rng),
            False)
    for i in range(12):  # wrong: the gold spelled in the reasoning, another number is the final answer
        n = rng.randint(21, 999)
        final = n + rng.choice([-3, -1, 2, 5])
        completion = [
            f"At first I got {words(n)}, but that counted the corner twice. Removing it, the answer is {words(final)}.",
            f"The answer is {words(n)}. Wait, no: the last group has only {words(final - n + 10)} not ten, so the "
            f"answer is actually {words(final)}.",
            f"<think>{words(n, True)} looks right... no, recount.</think>\n<answer>{words(final)}</answer>",
            f"There are {words(n)} tiles before the change, and {words(final)} after it. "
            f"$\\boxed{{{final}}}$",
        ][i % 4]
        add("word_not_final", str(n), completion, False)
    for i in range(8):  # wrong: several answers at once
        n = rng.randint(3, 60)
        completion = [f"It is either {words(n)} or {words(n + 1)}; the answer is {words(n)} or {words(n + 1)}.",
                      f"$\\boxed{{\\text{{{words(n)} or {words(n + 2)}}}}}$",
                      f"The answer is {words(n - 1)}, {words(n)}, or {words(n + 1)}.",
                      f"<answer>{words(n)}, maybe {words(n * 2)}</answer>"][i % 4]
        add("word_several", str(n), completion, False)
    fractions = [Fraction(3, 4), Fraction(5, 8), Fraction(1, 2), Fraction(2, 3), Fraction(7, 16), Fraction(1, 3),
                 Fraction(9, 10), Fraction(5, 6), Fraction(11, 12), Fraction(4, 5), Fraction(3, 8), Fraction(1, 4)]
    for i, value in enumerate(fractions):  # right and wrong fractions in words
        phrase = fraction_words(value)
        if value.denominator == 4 and i % 2:
            phrase = phrase.replace("quarter", "fourth")
        gold = latex_fraction(value) if i % 3 else f"{value.numerator}/{value.denominator}"
        add("fraction_words", gold, text_answer("Divide the favourable cases by all cases.", phrase, rng), True)
        wrong = Fraction(value.denominator, value.numerator) if value.numerator != 1 else value / 2
        if wrong.denominator not in DENOMINATOR_WORDS:
            wrong = value + Fraction(1, value.denominator)
        if wrong.denominator not in DENOMINATOR_WORDS or wrong >= 1:
            wrong = Fraction(value.numerator, 16) if value.denominator != 16 else Fraction(value.numerator, 8)
        add("fraction_words_wrong", gold,
            text_answer("Divide the favourable cases by all cases.", fraction_words(wrong), rng), False)
    for n in [3, 5, 8, 12, 21, 30, 14, 2]:  # ordinals where the gold is the position
        add("ordinal_position", str(n),
            text_answer("The pattern first repeats at this term.", f"the {ordinal(n)} term", rng), True)
    for n in [4, 7, 11, 23]:
        add("ordinal_position_wrong", str(n),
            text_answer("The pattern first repeats at this term.", f"the {ordinal(n + 1)} term", rng), False)
    for text in ["2.5", "0.75", "3.14", "12.06", "-1.5", "0.125", "7.2", "40.05"]:  # decimals in words
        add("decimal_words", text, text_answer("Dividing the total by the count gives the mean.",
                                               decimal_words(text), rng), True)
    for text, wrong in [("2.5", "2.05"), ("0.75", "0.57"), ("3.14", "31.4"), ("-1.5", "1.5"), ("0.125", "0.12"),
                        ("7.2", "7.02")]:
        add("decimal_words_wrong", text, text_answer("Dividing the total by the count gives the mean.",
                                                     decimal_words(wrong), rng), False)
    for n in [7, 0, 19, 64, 100, 250]:  # \boxed{\text{seven}}
        add("boxed_text_word", str(n), f"Each step doubles the count. $\\boxed{{\\text{{{words(n)}}}}}$", True)
        add("boxed_text_word_wrong", str(n), f"Each step doubles the count. $\\boxed{{\\text{{{words(n + 3)}}}}}$",
            False)
    hand = [
        ("105", "Counting the handshakes: the answer is one hundred and five.", True),
        ("150", "Counting the handshakes: the answer is one hundred and five.", False),
        ("2024", "The year in question is two thousand and twenty-four, so the answer is two thousand and twenty-four.",
         True),
        ("2024", "The answer is two thousand and forty-two.", False),
        ("1000000", "That leaves exactly one million. $\\boxed{\\text{one million}}$", True),
        ("1000000", "That leaves exactly one billion. $\\boxed{\\text{one billion}}$", False),
        ("\\frac{3}{4}", "Three quarters of the tank is full, so the answer is three quarters.", True),
        ("\\frac{3}{4}", "<answer>three-quarters</answer>", True),
        ("\\frac{5}{8}", "The probability is five eighths.\n\nThe answer is five-eighths.", True),
        ("\\frac{5}{8}", "The answer is eight fifths.", False),
        ("1\\frac{1}{2}", "The answer is one and a half.", True),
        ("3.5", "The answer is three and a half.", True),
        ("3.5", "The answer is three and a quarter.", False),
        ("Tuesday", "Counting forward 16 days from Sunday lands on a Monday... no, a Tuesday. The answer is a Tuesday.",
         True),
        ("Tuesday", "Counting forward lands on a Tuesday, wait, one more day: the answer is a Wednesday.", False),
        ("circle", "The locus is a circle. $\\boxed{\\text{a circle}}$", True),
        ("ellipse", "The sum of distances is constant, so the curve is an ellipse. The answer is an ellipse.", True),
        ("parabola", "The answer is a hyperbola.", False),
        ("hexagon", "<think>Six sides.</think><answer>a hexagon</answer>", True),
        ("hexagon", "<think>Six sides, no, eight.</think><answer>an octagon</answer>", False),
        ("12", "Twelve eggs make a dozen, so the answer is a dozen.", True),
        ("13", "That is a baker's dozen plus one. The answer is fourteen.", False),
        ("40", "The answer is forty.", True),
        ("40", "The answer is fourteen.", False),
        ("90", "The answer is nineteen.", False),
        ("0", "Nothing remains: the answer is zero.", True),
        ("0", "Nothing remains but one: the answer is one.", False),
        ("1", "Exactly one such number exists. The answer is one.", True),
        ("3", "I will answer three. Actually, on reflection, I retract that: the answer is four.", False),
        ("4", "I will answer three. Actually, on reflection, I retract that: the answer is four.", True),
        ("7", "The answer is seven. Hmm, but that ignores the empty set, which makes it eight. Final: eight.", False),
        ("8", "The answer is seven. Hmm, but that ignores the empty set, which makes it eight. Final: eight.", True),
        ("-5", "The temperature ends at minus five degrees, so the answer is negative five.", True),
        ("-5", "The temperature ends at five degrees, so the answer is five.", False),
    ]
    for gold, completion, label in hand:
        add("words_hand", gold, completion, label)


def matrix_family(b: SetBuilder, rng: random.Random) -> None:
    add = partial(b.add, "matrix")
    reasons = ["Multiplying row by column entry by entry:", "Applying the transformation to each basis vector,",
               "Solving the linear system by elimination gives", "Collecting coefficients,"]

    def ints(rows: int, cols: int, low: int = -9, high: int = 9) -> list[list[int]]:
        while True:
            m = [[rng.randint(low, high) for _ in range(cols)] for _ in range(rows)]
            if any(x for row in m for x in row):
                return m

    def shape() -> tuple[int, int]:
        return rng.choice([(2, 2), (2, 2), (3, 3), (2, 3), (3, 1), (2, 1)])

    def env() -> str:
        return rng.choice(["pmatrix", "bmatrix"])

    def perturb(m: list[list[int]]) -> list[list[int]]:
        out = [row[:] for row in m]
        r, c = rng.randrange(len(m)), rng.randrange(len(m[0]))
        out[r][c] += rng.choice([-2, -1, 1, 2])
        return out

    def scale(m: list[list[int]], k: int) -> list[list[int]]:
        return [[k * x for x in row] for row in m]

    for i in range(60):
        rows, cols = shape()
        gold_env = env()
        style = LATEX_STYLES[i % len(LATEX_STYLES)]
        reason = rng.choice(reasons)
        form, variant = i % 6, (i // 6) % 2
        inner = ints(rows, cols)
        if form == 0:  # scalar times a matrix
            k = rng.randint(2, 6)
            gold = matrix(scale(inner, k), gold_env)
            right = f"{k}{matrix(inner, env())}"
            wrong = [f"{k}{matrix(perturb(inner), env())}", f"{k + 1}{matrix(inner, env())}"][variant]
            kind = "scalar_times"
        elif form == 1:  # negated matrix
            gold = matrix(inner, gold_env)
            right = f"-{matrix(scale(inner, -1), env())}"
            wrong = [f"-{matrix(inner, env())}", f"-{matrix(scale(perturb(inner), -1), env())}"][variant]
            kind = "negated"
        elif form == 2:  # sum of two matrices
            first = ints(rows, cols)
            second = [[g - a for g, a in zip(grow, arow)] for grow, arow in zip(inner, first)]
            gold = matrix(inner, gold_env)
            right = f"{matrix(first, env())} + {matrix(second, env())}"
            wrong = f"{matrix(first, env())} + {matrix(perturb(second), env())}"
            kind = "sum"
        elif form == 3:  # difference of two matrices
            first = ints(rows, cols)
            second = [[a - g for g, a in zip(grow, arow)] for grow, arow in zip(inner, first)]
            gold = matrix(inner, gold_env)
            right = f"{matrix(first, env())} - {matrix(second, env())}"
            wrong = [f"{matrix(second, env())} - {matrix(first, env())}",
                     f"{matrix(first, env())} + {matrix(second, env())}"][variant]
            if all(x == 0 for row in first for x in row) or all(x == 0 for row in second for x in row):
                continue
            kind = "difference"
        elif form == 4:  # decimal entries for a fraction gold
            denominators = [2, 4, 5, 8, 10]
            values = [[Fraction(rng.randint(-15, 15), rng.choice(denominators)) for _ in range(cols)]
                      for _ in range(rows)]
            if all(v.denominator == 1 for row in values for v in row):
                values[0][0] = Fraction(1, 2)
            gold = matrix([[latex_fraction(v) for v in row] for row in values], gold_env)
            right = matrix([[format_decimal(v) for v in row] for row in values], env())
            bad = [row[:] for row in values]
            bad[-1][-1] += Fraction(1, 10)
            wrong = matrix([[format_decimal(v) for v in row] for row in bad], env())
            kind = "decimal_entries"
        else:  # a fraction pulled out in front
            k = rng.choice([2, 3, 4, 5, 7])
            gold = matrix([[latex_fraction(Fraction(x, k)) for x in row] for row in inner], gold_env)
            right = f"\\frac{{1}}{{{k}}}{matrix(inner, env())}"
            wrong = [f"\\frac{{1}}{{{k}}}{matrix(perturb(inner), env())}", f"{k}{matrix(inner, env())}"][variant]
            kind = "fraction_times"
        add(kind, gold, style(reason, right), True)
        add(kind + "_wrong", gold, style(reason, wrong), False)
    for i in range(10):  # transposed (never symmetric) and two matrices in one box
        inner = ints(2, 2)
        if inner[0][1] == inner[1][0]:
            inner[0][1] += 1
        gold = matrix(inner)
        transposed = [[inner[0][0], inner[1][0]], [inner[0][1], inner[1][1]]]
        add("transposed", gold, LATEX_STYLES[i % 5]("Writing the images as rows,", matrix(transposed)), False)
        add("two_matrices", gold, LATEX_STYLES[(i + 2) % 5]("Two candidates survive:",
                                                           f"{matrix(inner)} \\text{{ or }} {matrix(perturb(inner))}"),
            False)
    hand = [
        ("\\begin{pmatrix} 1 \\\\ 2 \\\\ 3 \\end{pmatrix}", "The vector is $\\boxed{(1, 2, 3)^T}$.", True),
        ("\\begin{pmatrix} 1 \\\\ 2 \\\\ 3 \\end{pmatrix}", "The vector is $\\boxed{(1, 3, 2)^T}$.", False),
        ("\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "It is the identity: $\\boxed{I_2}$... written out, "
         "$\\boxed{\\begin{bmatrix}1&0\\\\0&1\\end{bmatrix}}$", True),
        ("\\begin{pmatrix} 0 & 0 \\\\ 0 & 0 \\end{pmatrix}",
         "$\\boxed{\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix} - "
         "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}}$",
         True),
        ("\\begin{pmatrix} 0 & 0 \\\\ 0 & 0 \\end{pmatrix}",
         "$\\boxed{\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix} - "
         "\\begin{pmatrix} 1 & 2 \\\\ 4 & 3 \\end{pmatrix}}$",
         False),
        ("\\begin{pmatrix} \\frac{1}{3} \\\\ \\frac{2}{3} \\end{pmatrix}",
         "<answer>\\begin{pmatrix} 0.33 \\\\ 0.67 \\end{pmatrix}</answer>", False),
        ("\\begin{pmatrix} \\frac{1}{3} \\\\ \\frac{2}{3} \\end{pmatrix}",
         "<answer>\\frac{1}{3}\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}</answer>", True),
        ("\\begin{pmatrix} 2 & -1 \\\\ 4 & 3 \\end{pmatrix}",
         "The determinant is 10, so $\\boxed{10}$.", False),
        ("\\begin{pmatrix} 2 & -1 \\\\ 4 & 3 \\end{pmatrix}",
         "$\\boxed{\\begin{pmatrix} 2 & -1 \\\\ 4 & 3 \\end{pmatrix}}$ (or, equivalently, "
         "$\\begin{pmatrix} 2 & 1 \\\\ 4 & 3 \\end{pmatrix}$)", False),
        ("\\begin{pmatrix} -3 \\\\ 6 \\end{pmatrix}", "The answer is $-3\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}$.",
         True),
        ("\\begin{pmatrix} -3 \\\\ 6 \\end{pmatrix}", "The answer is $3\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}$.",
         False),
        ("\\begin{pmatrix} 1.5 & 0 \\\\ 0 & 1.5 \\end{pmatrix}", "$\\boxed{\\frac{3}{2} I}$", True),
        ("\\begin{pmatrix} 4 \\\\ -2 \\end{pmatrix}",
         "$$\\boxed{\\begin{pmatrix} 1 \\\\ 1 \\end{pmatrix} + \\begin{pmatrix} 1 \\\\ -1 \\end{pmatrix} + "
         "\\begin{pmatrix} 1 \\\\ -1 \\end{pmatrix} + \\begin{pmatrix} 1 \\\\ -1 \\end{pmatrix}}$$", True),
        ("\\begin{pmatrix} 4 \\\\ -2 \\end{pmatrix}",
         "$$\\boxed{\\begin{pmatrix} 1 \\\\ 1 \\end{pmatrix} + \\begin{pmatrix} 1 \\\\ -1 \\end{pmatrix} + "
         "\\begin{pmatrix} 1 \\\\ -1 \\end{pmatrix} + \\begin{pmatrix} 1 \\\\ 1 \\end{pmatrix}}$$", False),
    ]
    for gold, completion, label in hand:
        add("matrix_hand", gold, completion, label)


def format_decimal(value: Fraction) -> str:
    """An exact decimal for a fraction whose denominator divides a power of ten."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole, rest = divmod(value.numerator, value.denominator)
    digits = ""
    rest = Fraction(rest, value.denominator)
    while rest:
        rest *= 10
        digit = rest.numerator // rest.denominator
        digits += str(digit)
        rest -= digit
    return f"{sign}{whole}" + (f".{digits}" if digits else "")


def cheap_family(b: SetBuilder, rng: random.Random) -> None:
    add = partial(b.add, "cheap")
    for i in range(20):  # huge terms that cancel exactly, and the same one off by one
        base = [f"10^{{{rng.randint(40, 400)}}}", f"2^{{{rng.randint(200, 3000)}}}",
                f"{rng.randint(3, 9)}^{{{rng.randint(100, 900)}}}", f"{rng.randint(101, 999)}!"][i % 4]
        value = rng.randint(-50, 99)
        step = rng.choice([-1, 1])

        def cancelling(v: int, form: int = i % 4) -> str:
            tail = f"+ {v}" if v >= 0 else f"- {-v}"
            return [f"{base} {tail} - {base}", f"{base} - {base} {tail}", f"-{base} {tail} + {base}",
                    f"({base} {tail}) - {base}"][form]

        style = LATEX_STYLES[i % 5]
        add("huge_cancel", str(value), style("The large terms cancel.", cancelling(value)), True)
        add("huge_cancel_off_by_one", str(value), style("The large terms cancel.", cancelling(value + step)), False)
    for i in range(10):  # almost-cancelling products
        k = rng.randint(10, 60)
        right = f"(10^{{{k}}} + 1)(10^{{{k}}} - 1) - 10^{{{2 * k}}}"
        wrong = [f"(10^{{{k}}} + 2)(10^{{{k}}} - 1) - 10^{{{2 * k}}} - 10^{{{k}}}",  # -2
                 f"(10^{{{k}}} + 1)^2 - 10^{{{2 * k}}} - 2 \\cdot 10^{{{k}}}"][i % 2]  # +1
        add("difference_of_squares", "-1", LATEX_STYLES[i % 5]("Expand the product.", right), True)
        add("almost_cancel", "-1", LATEX_STYLES[i % 5]("Expand the product.", wrong), False)
    for i in range(10):  # ratios of huge powers and factorials
        p, e = rng.choice([2, 3, 5, 7, 11]), rng.randint(200, 2000)
        ratio = f"\\frac{{{p}^{{{e}}}}}{{{p}^{{{e - 2}}}}}"
        add("power_ratio", str(p * p), style_terse_box("Cancel common factors:", ratio), True)
        add("power_ratio_wrong", str(p * p),
            style_terse_box("Cancel common factors:", ratio.replace(f"^{{{e - 2}}}", f"^{{{e - 3}}}")), False)
        n = rng.randint(50, 400)
        add("factorial_ratio", str(n), style_think_tags("n!/(n-1)! = n.", f"\\frac{{{n}!}}{{{n - 1}!}}"), True)
        add("factorial_ratio_wrong", str(n), style_think_tags("n!/(n-1)! = n.", f"\\frac{{{n + 1}!}}{{{n - 1}!}}"),
            False)
    for i in range(8):  # Euler's identity
        k = rng.randint(-9, 9)
        add("euler", str(k - 1), style_display("By Euler's identity,", f"e^{{i\\pi}} + {k}" if k >= 0
                                               else f"e^{{i\\pi}} - {-k}"), True)
        add("euler_wrong", str(k + 1), style_display("By Euler's identity,", f"e^{{i\\pi}} + {k}" if k >= 0
                                                     else f"e^{{i\\pi}} - {-k}"), False)
    for i in range(10):  # long sums of small terms
        n = rng.randint(25, 140)
        term = ["1", "2", "\\frac{1}{2}", "3"][i % 4]
        each = Fraction(1, 2) if term == "\\frac{1}{2}" else Fraction(int(term))
        total = latex_fraction(each * n)
        add("long_sum", total, style_markdown("Add them all:", " + ".join([term] * n)), True)
        add("long_sum_one_short", total, style_markdown("Add them all:", " + ".join([term] * (n - 1))), False)
    for i in range(12):  # deep bracket nesting
        depth = rng.randint(15, 60)
        value = rng.randint(-20, 40)
        opener, closer = [("(", ")"), ("\\left(", "\\right)"), ("{", "}"), ("[", "]")][i % 4]
        right = opener * depth + str(value) + closer * depth
        wrong = opener * depth + f"{value} + 1" + closer * depth
        add("deep_nesting", str(value), LATEX_STYLES[i % 5]("Strip the brackets:", right), True)
        add("deep_nesting_wrong", str(value), LATEX_STYLES[i % 5]("Strip the brackets:", wrong), False)
    hand = [
        ("-1", "$\\boxed{e^{i\\pi}}$", True),
        ("1", "$\\boxed{e^{i\\pi}}$", False),
        ("1", "$\\boxed{e^{2\\pi i}}$", True),
        ("0", "Euler: $\\boxed{e^{i\\pi} + 1}$", True),
        ("i", "$\\boxed{e^{i\\pi/2}}$", True),
        ("-i", "$\\boxed{e^{i\\pi/2}}$", False),
        ("1", "$\\boxed{\\sin^2(2024) + \\cos^2(2024)}$", True),
        ("1", "$\\boxed{\\sin^2(2024) - \\cos^2(2024)}$", False),
        ("5050", "$\\boxed{\\sum_{k=1}^{100} k}$", True),
        ("5050", "$\\boxed{\\sum_{k=1}^{101} k}$", False),
        ("10", "$\\boxed{\\log_2 1024}$", True),
        ("10", "$\\boxed{\\log_2 2048}$", False),
        ("4", "$\\boxed{\\sqrt{2}\\cdot\\sqrt{8}}$", True),
        ("4", "$\\boxed{\\sqrt{2}\\cdot\\sqrt{6}}$", False),
        ("1", "$\\boxed{\\frac{2^{1000} + 2^{999}}{3 \\cdot 2^{999}}}$", True),
        ("1", "$\\boxed{\\frac{2^{1000} + 2^{998}}{3 \\cdot 2^{999}}}$", False),
        ("0", "$\\boxed{(10^{30}+7)^2 - (10^{30}-7)^2 - 28\\cdot 10^{30}}$", True),
        ("0", "$\\boxed{(10^{30}+7)^2 - (10^{30}-7)^2 - 27\\cdot 10^{30}}$", False),
        ("2", "$\\boxed{\\binom{2000}{1000} - \\binom{2000}{1000} + 2}$", True),
        ("2", "$\\boxed{\\binom{2000}{1000} - \\binom{2000}{1001} + 2}$", False),
        ("3", "$\\boxed{((((((((((1+1))))))))))+1}$", True),
        ("3", "$\\boxed{((((((((((1+1))))))))))\\cdot 1 \\cdot 2}$", False),
    ]
    for gold, completion, label in hand:
        add("cheap_hand", gold, completion, label)


def box_family(b: SetBuilder, rng: random.Random) -> None:
    add = partial(b.add, "box")
    for i in range(14):  # an unclosed box at the very end
        n = rng.randint(2, 999)
        lead = ["Summing the cases gives", "So we get $\\boxed{", "Final answer: \\boxed{",
                "**Answer** \\[\\boxed{"][i % 4]
        opener = "" if "boxed" in lead else " $\\boxed{"
        add("unclosed_box", str(n), f"{lead}{opener}{n}", True)
        add("unclosed_box_wrong", str(n), f"{lead}{opener}{n + rng.choice([1, 10, -1])}", False)
    for i in range(10):  # unmatched \left / \right inside the box
        a, c = rng.randint(-9, 9), rng.randint(1, 12)
        gold = f"({a}, {c})"
        right = [f"\\boxed{{\\left( {a}, {c} )}}", f"\\boxed{{( {a}, {c} \\right)}}",
                 f"\\boxed{{\\left({a},{c}\\right.)}}"][i % 3]
        wrong = right.replace(f"{c}", f"{c + 1}", 1) if i % 2 else right.replace(f"{a}", f"{-a if a else 1}", 1)
        add("unmatched_left", gold, f"The intersection point is ${right}$", True)
        add("unmatched_left_wrong", gold, f"The intersection point is ${wrong}$", False)
    for i in range(10):  # a trailing \\ inside the box
        n = rng.randint(-40, 400)
        value = [str(n), f"\\frac{{{n}}}{{7}}" if n % 7 else str(n)][i % 2]
        wrong = str(n + 7) if i % 2 == 0 else f"\\frac{{{n + 1}}}{{7}}"
        gold = value
        add("trailing_break", gold, f"\\[\n\\boxed{{{value} \\\\}}\n\\]", True)
        add("trailing_break_wrong", gold, f"\\[\n\\boxed{{{wrong} \\\\}}\n\\]", False)
    for i in range(12):  # \boxed followed by one token, no braces
        token = rng.choice(["3", "7", "x", "0", "9", "\\pi", "e", "5", "2", "y"])
        other = {"3": "8", "7": "1", "x": "y", "0": "6", "9": "4", "\\pi": "e", "e": "\\pi", "5": "2", "2": "5",
                 "y": "x"}[token]
        add("boxed_no_braces", token, f"Therefore the answer is $\\boxed {token}$.", True)
        add("boxed_no_braces_wrong", token, f"Therefore the answer is $\\boxed {other}$.", False)
    for i in range(14):  # a box holding a sentence around the answer
        n = rng.randint(3, 500)
        sentence = [f"\\text{{The answer is }} {n}", f"x = {n}", f"\\text{{there are }} {n} \\text{{ ways}}",
                    f"\\text{{Total: }}{n}\\text{{ apples}}", f"n = {n}", f"\\text{{we need }}{n}\\text{{ steps}}",
                    f"\\text{{answer}} = {n}"][i % 7]
        wrong = [f"\\text{{It is not }} {n} \\text{{ but }} {n + 2}", f"x = {n} - 1",
                 f"\\text{{there are }} {n} \\text{{ or }} {n + 1} \\text{{ ways}}",
                 f"\\text{{Total: }}{n + 5}\\text{{ apples}}", f"n \\neq {n}",
                 f"\\text{{we need }}{n - 1}\\text{{ steps}}",
                 f"\\text{{answer}} = {n}^2"][i % 7]
        add("sentence_in_box", str(n), f"Putting it together: $\\boxed{{{sentence}}}$", True)
        add("sentence_in_box_wrong", str(n), f"Putting it together: $\\boxed{{{wrong}}}$", False)
    for i in range(12):  # two numbers in one box, two boxes that disagree, the gold boxed then replaced
        n = rng.randint(2, 300)
        completion = [f"$\\boxed{{{n}, {n + 1}}}$", f"$\\boxed{{{n} \\text{{ or }} {n + 4}}}$",
                      f"First pass: $\\boxed{{{n}}}$. Second pass, fixing the sign error: $\\boxed{{{n + 6}}}$.",
                      f"$\\boxed{{{n}}}$ and $\\boxed{{{2 * n}}}$ both satisfy the equation."][i % 4]
        add("box_several", str(n), completion, False)
        add("box_repeated", str(n), f"$\\boxed{{{n}}}$\n\nSo, once more: $\\boxed{{{n}}}$", True)
    hand = [
        ("12", "\\boxed{12", True),
        ("12", "\\boxed{\\text{twelve}", True),
        ("12", "\\boxed{21", False),
        ("\\frac{1}{2}", "$\\boxed{\\frac{1}{2}$", True),
        ("\\frac{1}{2}", "$\\boxed{\\frac{1}{3}$", False),
        ("5", "\\fbox{5}", True),
        ("5", "\\fbox{6}", False),
        ("[1, 3]", "$\\boxed{\\left[ 1, 3 \\right]}$", True),
        ("[1, 3]", "$\\boxed{\\left( 1, 3 \\right)}$", False),
        ("6", "$\\boxed{\\boxed{6}}$", True),
        ("6", "$\\boxed{ }$", False),
        ("8", "\\boxed{\\textbf{8}}", True),
        ("8", "\\boxed{\\mathbf{80}}", False),
        ("2", "$\\boxed{2 \\\\ 3}$", False),
    ]
    for gold, completion, label in hand:
        add("box_hand", gold, completion, label)


def chat_turn(fmt: str, question: str, answer: str) -> str:
    """A new user turn and the model's answer to it, in one chat format, appended after a finished answer."""
    if fmt == "chatml":
        return f"<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n{answer}"
    if fmt == "llama3":
        return (f"<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n{question}<|eot_id|>"
                f"<|start_header_id|>assistant<|end_header_id|>\n\n{answer}")
    if fmt == "user":
        return f"\n\nUser: {question}\n\nAssistant: {answer}"
    return f"\n\nHuman: {question}\n\nAssistant: {answer}"


def other_family(b: SetBuilder, rng: random.Random) -> None:
    def add(kind: str, gold: str, completion: str, label: bool, policy: str = "marked") -> None:
        b.add("other", kind, gold, completion, label, policy)

    for i in range(16):  # a completion that runs on into a new chat turn after its answer
        n = rng.randint(2, 500)
        later = n + rng.randint(1, 40)
        fmt = ["chatml", "llama3", "user", "human"][i % 4]
        question = rng.choice(["Thanks! Now add 5 to it.", "Can you double-check with a different method?",
                               "What is the next term?", "Great. Next problem: how many edges does a cube have?"])
        first = LATEX_STYLES[i % 5]("Counting carefully,", str(n))
        add("runs_on_chat", str(n), first + chat_turn(fmt, question, f"Sure: $\\boxed{{{later}}}$"), True)
        wrong_first = LATEX_STYLES[i % 5]("Counting carefully,", str(later))
        add("gold_in_later_turn", str(n), wrong_first + chat_turn(fmt, question, f"Sure: $\\boxed{{{n}}}$"), False)
    for i in range(10):  # answer phrases
        n = rng.randint(-99, 999)
        phrase = [f"The final answer is ${n}$. I hope it is correct.", f"Answer: {n}", f"Thus, $x = {n}$.",
                  f"**Final Answer**\n{n}", f"The answer is: {n}"][i % 5]
        wrong = [f"The final answer is ${n + 1}$. I hope it is correct.", f"Answer: {n} (or {n + 2})",
                 f"Thus, $x = {-n if n else 3}$.", f"**Final Answer**\n{n * 2 if n else 1}",
                 f"The answer is not {n}; it is {n - 3}."][i % 5]
        add("answer_phrase", str(n), f"We solve the linear equation step by step.\n\n{phrase}", True)
        add("answer_phrase_wrong", str(n), f"We solve the linear equation step by step.\n\n{wrong}", False)
    for i in range(10):  # sets, shuffled or missing an element
        elements = sorted(rng.sample(range(-12, 20), rng.randint(2, 4)))
        gold = "\\{" + ", ".join(map(str, elements)) + "\\}"
        shuffled = elements[:]
        rng.shuffle(shuffled)
        if shuffled == elements:
            shuffled.reverse()
        add("set_order", gold, style_terse_box("The roots are", "\\{" + ", ".join(map(str, shuffled)) + "\\}"), True)
        add("set_missing", gold, style_terse_box("The roots are", "\\{" + ", ".join(map(str, shuffled[1:])) + "\\}"),
            False)
    units = [("cm", "\\text{ cm}"), ("m^2", "\\text{ m}^2"), ("degrees", "^\\circ"), ("dollars", "\\text{ dollars}"),
             ("kg", "\\,\\mathrm{kg}"), ("minutes", "\\text{ minutes}")]
    for i in range(12):  # units
        n = rng.randint(2, 720)
        _, unit = units[i % len(units)]
        right, wrong = (f"\\${n}", f"\\${n * 10}") if i % 12 == 9 else (f"{n}{unit}", f"{n * 10}{unit}")
        add("with_unit", str(n), LATEX_STYLES[i % 5]("Converting to the requested unit,", right), True)
        add("with_unit_wrong", str(n), LATEX_STYLES[i % 5]("Converting to the requested unit,", wrong), False)
    for i in range(10):  # scientific notation
        mantissa = Fraction(rng.randint(11, 99), 10)
        exponent = rng.randint(-6, 9)
        value = mantissa * Fraction(10) ** exponent
        gold = format_decimal(value)
        for power, kind, label in ((exponent, "scientific", True), (exponent + 1, "scientific_off_power", False)):
            add(kind, gold, style_think_tags("Move the decimal point.",
                                             f"{format_decimal(mantissa)} \\times 10^{{{power}}}"), label)
    for i in range(12):  # radicals: other forms of the gold, and wrong radicals
        a, r = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7])
        gold = f"{a}\\sqrt{{{r}}}"
        add("radical_form", gold, LATEX_STYLES[i % 5]("Simplify the root:", f"\\sqrt{{{a * a * r}}}"), True)
        wrong = [f"{r}\\sqrt{{{a}}}" if r != a else f"{a}\\sqrt{{{r + 1}}}", f"\\sqrt{{{a * r}}}",
                 f"{a}\\sqrt{{{r * 2}}}", f"\\sqrt{{{a * a * r + 1}}}"][i % 4]
        add("radical_wrong", gold, LATEX_STYLES[i % 5]("Simplify the root:", wrong), False)
    for i in range(6):  # rounded decimals of irrationals
        gold, rounded = [("\\sqrt{2}", "1.414"), ("\\pi", "3.14"), ("\\sqrt{3}", "1.732"), ("e", "2.718"),
                         ("\\frac{1}{3}", "0.333"), ("2\\pi", "6.28")][i]
        add("rounded_irrational", gold, style_verbose("Evaluating numerically,", rounded), False)
        add("rounded_irrational_approx", gold, f"Numerically it is about {rounded}, and exactly $\\boxed{{{gold}}}$.",
            True)
    for i in range(8):  # expressions
        p, q = rng.randint(1, 9), rng.randint(1, 9)
        gold = f"x^2 + {p + q}x + {p * q}"
        add("expression_factored", gold, style_terse_box("Factor:", f"(x + {p})(x + {q})"), True)
        add("expression_wrong", gold, style_terse_box("Factor:", f"(x + {p})(x + {q + 1})"), False)
    for i, (gold, answer, label) in enumerate([  # bare answers (the completion is only the answer)
        ("7", "7", True), ("7", "7.0", True), ("7", "17", False), ("\\frac{2}{3}", "2/3", True),
        ("\\frac{2}{3}", "0.67", False), ("3\\sqrt{2}", "\\sqrt{18}", True), ("3\\sqrt{2}", "2\\sqrt{3}", False),
        ("\\{1, 2\\}", "\\{2, 1\\}", True), ("\\{1, 2\\}", "\\{1, 2, 3\\}", False),
        ("2.5 \\times 10^{3}", "2500", True),
        ("2.5 \\times 10^{3}", "250", False), ("x^2 - 1", "(x - 1)(x + 1)", True), ("x^2 - 1", "(x - 1)^2", False),
    ]):
        add("bare_answer", gold, answer, label, "bare")
    hand = [
        ("\\frac{\\pi}{6}", "The angle measures $\\boxed{30}$.", False),
        ("\\frac{\\pi}{6}", "The angle is $30^\\circ$, i.e. $\\boxed{\\frac{\\pi}{6}}$ radians.", True),
        ("\\frac{\\pi}{4}", "$\\boxed{45}$", False),
        ("45", "$\\boxed{45^\\circ}$", True),
        ("\\frac{\\sqrt{2}}{2}", "$\\boxed{\\frac{1}{\\sqrt{2}}}$", True),
        ("\\frac{\\sqrt{2}}{2}", "$\\boxed{\\frac{1}{2}}$", False),
        ("\\frac{\\sqrt{2}}{2}", "$\\boxed{\\frac{\\sqrt{2}}{4}}$", False),
        ("(-\\infty, 2)", "The solution set is $x < 2$, so $\\boxed{(-\\infty, 2)}$.", True),
        ("(-\\infty, 2)", "$\\boxed{(-\\infty, 2]}$", False),
        ("12", "We find 12 at step three, but the final count after removing duplicates is $\\boxed{11}$.", False),
        ("12", "<think>maybe 12? Let's see... 11 works better.</think><answer>11</answer>", False),
        ("12", "The answer is 12.<|im_end|>\n<|im_start|>user\nAnd times two?<|im_end|>\n<|im_start|>assistant\n24",
         True),
        ("24", "The answer is 12.<|im_end|>\n<|im_start|>user\nAnd times two?<|im_end|>\n<|im_start|>assistant\n24",
         False),
        ("5", "$\\boxed{5}$<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nIs that right?<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\nNo, it is $\\boxed{6}$.", True),
        ("6", "$\\boxed{5}$<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nIs that right?<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\nNo, it is $\\boxed{6}$.", False),
        ("3", "Human: what is 1+2?\n\nAssistant: The answer is 4.", False),
        ("100", "The answer is 100.\nUser: why?\nAssistant: Because 10 squared is 100.", True),
        ("1.5 \\times 10^{-3}", "$\\boxed{0.0015}$", True),
        ("1.5 \\times 10^{-3}", "$\\boxed{0.015}$", False),
        ("6.02 \\times 10^{23}", "$\\boxed{6.02\\text{e}23}$", True),
        ("6.02 \\times 10^{23}", "$\\boxed{6.02 \\times 10^{22}}$", False),
        ("\\sqrt[3]{2}", "$\\boxed{2^{1/3}}$", True),
        ("\\sqrt[3]{2}", "$\\boxed{\\sqrt{2}}$", False),
        ("x = 3", "The answer is $x = 3$ or $x = -3$.", False),
        ("3, -3", "The answer is $x = 3$ or $x = -3$.", True),
        ("2", "The answer is 2 or 3, depending on the reading; I'll say 2 or 3.", False),
    ]
    for gold, completion, label in hand:
        add("other_hand", gold, completion, label)


def honest_forms(b: SetBuilder, rng: random.Random) -> None:
    """Right answers written in a plain, varied way in every family, so the set is not mostly traps."""
    for i in range(24):
        n = rng.randint(1000, 9_999_999)
        if i % 3 == 0:
            n = n % 999 * 1000 + 1000  # 1,000 to 999,000, said as "<hundreds> thousand"
            phrase = f"{words(n // 1000)} thousand"
        else:
            phrase = words(n, british=i % 2 == 1).replace("-", " ") if i % 4 == 1 else words(n)
        b.add("words", "integer_words_plain", str(n), text_answer("Multiply the rate by the time.", phrase, rng), True)
    for i in range(24):
        rows, cols = rng.choice([(2, 2), (3, 1), (1, 3), (2, 3)])
        entries = [[rng.randint(-20, 20) for _ in range(cols)] for _ in range(rows)]
        gold = matrix(entries, rng.choice(["pmatrix", "bmatrix"]))
        body = " \\\\ ".join(" & ".join(str(x) for x in row) for row in entries)
        answer = [matrix(entries, "bmatrix", spaced=False), matrix(entries, "pmatrix"),
                  f"\\left(\\begin{{array}}{{{'c' * cols}}} {body} \\end{{array}}\\right)",
                  matrix([[f"{x}.0" for x in row] for row in entries], "pmatrix")][i % 4]
        b.add("matrix", "same_matrix_other_form", gold, LATEX_STYLES[i % 5]("Reading off the entries,", answer), True)
    for i in range(24):
        k, v = rng.randint(20, 300), rng.randint(-99, 99)
        answer = [f"\\frac{{{v} \\cdot 10^{{{k}}}}}{{10^{{{k}}}}}", f"{v} \\cdot 3^{{{k}}} \\cdot 3^{{-{k}}}",
                  f"({v}) \\cdot \\frac{{{k}!}}{{{k}!}}", f"{v} + 0 \\cdot 7^{{{k}}}"][i % 4]
        b.add("cheap", "huge_factor_cancels", str(v), LATEX_STYLES[i % 5]("Simplify before evaluating.", answer), True)
    for i in range(24):
        n = rng.randint(-300, 3000)
        answer = [f"\\boxed{{ {n} }}", f"\\boxed{{\\displaystyle {n}}}", f"\\boxed{{\\mathbf{{{n}}}}}",
                  f"\\boxed{{{n}.}}", f"\\boxed{{\\,{n}\\,}}", f"\\boxed{{\\textbf{{{n}}}}}"][i % 6]
        b.add("box", "box_decorated", str(n), f"Everything checks out.\n\n${answer}$", True)
    for i in range(24):
        p, q = rng.randint(1, 40), rng.randint(2, 41)
        value = Fraction(p, q)
        gold = latex_fraction(value)
        answer = [f"\\dfrac{{{value.numerator}}}{{{value.denominator}}}", f"{value.numerator}/{value.denominator}",
                  f"\\frac{{{2 * value.numerator}}}{{{2 * value.denominator}}}",
                  f"\\tfrac{{{value.numerator}}}{{{value.denominator}}}"][i % 4]
        if value.denominator == 1:
            answer = str(value.numerator)
        b.add("other", "fraction_forms", gold, LATEX_STYLES[i % 5]("Reduce the ratio.", answer), True)


def build() -> list[dict]:
    rng = random.Random(SEED)
    builder = SetBuilder()
    for family in (words_family, matrix_family, cheap_family, box_family, other_family, honest_forms):
        family(builder, rng)
    return builder.cases


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    with open(out, "w") as f:
        for case in build():
            f.write(json.dumps(case) + "\n")


if __name__ == "__main__":
    main()
