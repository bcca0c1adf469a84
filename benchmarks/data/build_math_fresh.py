"""Builds benchmarks/data/math_fresh.jsonl: a fresh labelled set the math verifier was never developed on.

    python benchmarks/data/build_math_fresh.py benchmarks/data/math_fresh.jsonl

Written for issue 30 by a helper who saw none of the fixes it measures. Five families, each with right answers
written differently and, in about equal measure, wrong answers and hacks dressed as right ones:

* ``words``: numbers in words (any size, negative, decimals), fractions in words, ordinals, ``\\boxed{\\text{seven}}``,
  text golds answered with an article; wrong word numbers, a word answer that is not the final one, two answers.
* ``matrix``: matrices and vectors equal to the gold but written as a scalar times a matrix, a negated matrix, a sum,
  decimal for fraction entries, another environment; one wrong entry, a transpose, a wrong scalar, a determinant.
* ``cheap``: exact answers that look expensive: terms cancelling around astronomically large powers, Euler's
  identity, very long sums of small terms, values nested in hundreds of brackets, equal power forms.
* ``box``: broken or unusual boxes: unclosed at the end, unmatched ``\\left``, a trailing line break inside,
  ``\\boxed`` + one token without braces, a sentence around the answer in the box; two numbers in a box.
* ``other``: answer phrases, sets, units, scientific notation, radicals, expressions, run-on chat turns; degrees
  for radians, wrong decimals, fractions, trig values and radicals, the right number only in the reasoning.

Labels are mathematical judgement (would a competent grader accept this final answer for this gold?), decided by
construction here and never by running a verifier; the wrong numbers and entries built from a right one assert
that they differ from it. Every completion
marks its answer and is checked with ``answer_policy="marked"`` (the RL reward), except one kind: an answer that
is an unevaluated calculation on numbers (``10^{100} - 10^{100} + 7``, ``1 + 1 + ... + 1``, ``e^{i\\pi}``) against a
number gold, which the project's RL policy refuses on purpose ("the answer was the question"), is labelled by its
value and checked with ``"bare"`` (grading). Deterministic: a fixed seed, no clock, no environment.
"""

from __future__ import annotations

import json
import random
import sys
from fractions import Fraction

SEED = 30_2026
rng = random.Random(SEED)
CASES: list[dict] = []


def add(family: str, kind: str, gold: str, completion: str, label: bool, policy: str = "marked") -> None:
    CASES.append({"gold": gold, "completion": completion, "label": label, "kind": kind, "family": family,
                  "answer_policy": policy, "source": "fresh_set",
                  "expected_from": "the author's mathematical judgement"})


# ---------------------------------------------------------------------------------------------- number words
ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
SCALES = [(10**9, "billion"), (10**6, "million"), (1000, "thousand")]
ORDINAL_ONES = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
                "nine": "ninth", "twelve": "twelfth"}


def words(n: int, hyphen: str = "-", use_and: bool = False) -> str:
    """English words for an integer: 1234 -> one thousand two hundred thirty-four (hyphen ' ' gives thirty four)."""
    if n < 0:
        return "negative " + words(-n, hyphen, use_and)
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + (hyphen + ONES[n % 10] if n % 10 else "")
    if n < 1000:
        rest = n % 100
        return ONES[n // 100] + " hundred" + ((" and " if use_and else " ") + words(rest, hyphen) if rest else "")
    for size, name in SCALES:
        if n >= size:
            rest = n % size
            head = words(n // size, hyphen, use_and) + " " + name
            if not rest:
                return head
            joiner = " and " if use_and and rest < 100 else ", " if hyphen == "-" and rest >= 100 and rng.random() < 0.2 else " "
            return head + joiner + words(rest, hyphen, use_and)
    raise AssertionError(n)


def ordinal(n: int) -> str:
    """Ordinal words: 3 -> third, 21 -> twenty-first, 40 -> fortieth, 100 -> one hundredth."""
    text = words(n)
    head, sep, last = text.rpartition("-") if "-" in text else text.rpartition(" ")
    if last in ORDINAL_ONES:
        last = ORDINAL_ONES[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return head + sep + last


def ordinal_digits(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


DENOMINATORS = {2: ("half", "halves"), 3: ("third", "thirds"), 4: ("quarter", "quarters"), 5: ("fifth", "fifths"),
                6: ("sixth", "sixths"), 7: ("seventh", "sevenths"), 8: ("eighth", "eighths"), 9: ("ninth", "ninths"),
                10: ("tenth", "tenths"), 12: ("twelfth", "twelfths"), 16: ("sixteenth", "sixteenths")}


def fraction_words(p: int, q: int, hyphen: bool = False) -> str:
    one, many = DENOMINATORS[q]
    if q == 4 and rng.random() < 0.4:
        one, many = "fourth", "fourths"
    return words(p) + ("-" if hyphen else " ") + (one if p == 1 else many)


def tex_frac(f: Fraction) -> str:
    if f.denominator == 1:
        return str(f.numerator)
    sign = "-" if f < 0 else ""
    return f"{sign}\\frac{{{abs(f.numerator)}}}{{{f.denominator}}}"


# ---------------------------------------------------------------------------------------------- completion styles
def finish(reasoning: str, answer: str, style: str) -> str:
    """A completion that reasons, then marks `answer` (LaTeX, or words when `style` ends in '_text')."""
    if style == "boxed":
        return f"{reasoning}\n\nTherefore, the final answer is $\\boxed{{{answer}}}$."
    if style == "final":
        return f"{reasoning}\n\n**Final Answer**\n\\[\n\\boxed{{{answer}}}\n\\]"
    if style == "think":
        return f"<think>\n{reasoning}\n</think>\n<answer>\n${answer}$\n</answer>"
    if style == "minerva":
        return f"{reasoning}\nFinal Answer: The final answer is ${answer}$. I hope it is correct."
    if style == "prose":
        return f"{reasoning} So the answer is ${answer}$."
    if style == "boxed_text":
        return f"{reasoning}\n\nSo the answer is $\\boxed{{\\text{{{answer}}}}}$."
    if style == "think_text":
        return f"<think>\n{reasoning}\n</think>\n<answer>{answer}</answer>"
    if style == "prose_text":
        return f"{reasoning} The answer is {answer}."
    if style == "label_text":
        return f"{reasoning}\n\n**Answer:** {answer}"
    raise AssertionError(style)


MATH_STYLES = ["boxed", "final", "think", "minerva", "prose"]
TEXT_STYLES = ["boxed_text", "think_text", "prose_text", "label_text"]


def pick(options: list):
    return options[rng.randrange(len(options))]


def count_story(n: int, in_words: bool = False) -> str:
    a = rng.randint(1, max(1, n - 1)) if n > 1 else 0
    b = n - a
    item = pick(["marbles", "stickers", "pages", "tickets", "apples", "coins", "chairs", "books"])
    return pick([
        f"Let me count. The first group has {a} {item} and the second has {b}, so together there are {a} + {b} = {n}.",
        f"We start with {a} {item} and add {b} more. Adding: {a} + {b} = {n}. Let me double-check: {n} - {b} = {a}. Yes.",
        f"Okay, so the total is the sum of the two parts, {a} and {b}. That gives {n}."
        + (" The question asks for the number in words." if in_words else ""),
        f"First, {a} {item} were counted on Monday. Then {b} more on Tuesday. In total {n} {item}.",
    ])


# ---------------------------------------------------------------------------------------------- family: words
def family_words() -> None:
    sizes = [(1, 19), (21, 99), (101, 999), (1001, 99_999), (100_001, 9_999_999), (10_000_001, 2_000_000_000)]
    for low, high in sizes:
        for _ in range(8):
            n = rng.randint(low, high)
            hyphen = pick(["-", "-", " "])
            text = words(n, hyphen, use_and=rng.random() < 0.3)
            if rng.random() < 0.25:
                text = text[0].upper() + text[1:]
            add("words", "integer_words", str(n), finish(count_story(n, True), text, pick(TEXT_STYLES)), True)
    # negatives: a wrong number in words (teens/tens, neighbours, a scale word, swapped digits)
    for _ in range(16):
        n = rng.randint(13, 99_999)
        wrong = pick([n + 1, n - 1, n * 10, n + 100 if n > 100 else n + 10,
                      int(str(n)[::-1]) if str(n)[::-1] != str(n) and not str(n).endswith("0") else n + 2])
        if 13 <= n % 100 <= 19 and rng.random() < 0.5:  # seventeen -> seventy
            wrong = n - n % 100 + (n % 10) * 10
        assert wrong != n
        reasoning = count_story(n, True).replace(f"= {n}", f"= {wrong}").replace(f"gives {n}", f"gives {wrong}").replace(
            f"total {n}", f"total {wrong}")
        add("words", "wrong_integer_words", str(n), finish(reasoning, words(wrong), pick(TEXT_STYLES)), False)
    for n in range(2, 14):  # the classic \boxed{\text{seven}}
        word = ONES[n] if rng.random() < 0.7 else ONES[n].capitalize()
        story = count_story(n, True)
        add("words", "boxed_text_word", str(n), pick([
            f"<think>\n{story}\n</think>\n<answer>\\boxed{{\\text{{{word}}}}}</answer>",
            f"{story}\n\n**Final Answer**\n\\[\n\\boxed{{\\text{{{word}}}}}\n\\]", finish(story, word, "boxed_text")]), True)
    # negative numbers and decimals in words
    for _ in range(5):
        n = rng.randint(2, 500)
        add("words", "negative_words", str(-n), finish(f"The temperature fell by {n} degrees from zero.",
                                                        pick(["negative ", "minus "]) + words(n), pick(TEXT_STYLES)), True)
        add("words", "sign_dropped_words", str(-n), finish(f"The temperature fell by {n} degrees from zero.",
                                                           words(n), pick(TEXT_STYLES)), False)
    for whole, tenth in [(3, 5), (12, 25), (0, 75), (7, 2)]:
        value = f"{whole}.{tenth}"
        said = words(whole) + " point " + " ".join(ONES[int(d)] for d in str(tenth))
        add("words", "decimal_words", value, finish(f"Dividing gives {value}.", said, pick(TEXT_STYLES)), True)
        wrong = words(whole) + " point " + " ".join(ONES[(int(d) + 1) % 10] for d in str(tenth))
        add("words", "wrong_decimal_words", value, finish(f"Dividing gives a little over {whole}.", wrong, pick(TEXT_STYLES)), False)
    # fractions in words
    fractions = [(1, 2), (3, 4), (2, 3), (5, 8), (7, 12), (1, 4), (4, 5), (3, 10), (5, 6), (9, 16), (1, 3), (2, 9)]
    for p, q in fractions:
        gold = pick([f"\\frac{{{p}}}{{{q}}}", f"{p}/{q}"]) if q not in (2, 4, 5, 8, 10, 16) or rng.random() < 0.7 \
            else str(Fraction(p, q).numerator / Fraction(p, q).denominator)
        text = fraction_words(p, q, hyphen=rng.random() < 0.4)
        if (p, q) == (1, 2) and rng.random() < 0.5:
            text = "one half"
        reasoning = f"Out of {q} equally likely outcomes, {p} {'is' if p == 1 else 'are'} favourable, so the probability is {p}/{q}."
        add("words", "fraction_words", gold, finish(reasoning, text, pick(TEXT_STYLES)), True)
    wrong_fractions = [((3, 2), (2, 3)), ((3, 4), (3, 5)), ((2, 3), (3, 2)), ((5, 8), (3, 8)), ((1, 6), (1, 5)),
                       ((7, 10), (7, 100)), ((4, 9), (5, 9)), ((1, 4), (1, 2)), ((5, 12), (7, 12)), ((2, 5), (5, 2))]
    for (p, q), (r, s) in wrong_fractions:
        assert Fraction(p, q) != Fraction(r, s)
        text = words(r) + " " + (DENOMINATORS[s][0] if r == 1 else DENOMINATORS[s][1]) if s in DENOMINATORS \
            else words(r) + " hundredths"
        reasoning = f"The shaded part is {r} of the {s} pieces."
        add("words", "wrong_fraction_words", f"\\frac{{{p}}}{{{q}}}", finish(reasoning, text, pick(TEXT_STYLES)), False)
    for whole, (p, q) in [(2, (1, 2)), (3, (3, 4)), (1, (2, 3))]:
        f = whole + Fraction(p, q)
        said = f"{words(whole)} and {'a' if p == 1 else words(p)} {DENOMINATORS[q][0] if p == 1 else DENOMINATORS[q][1]}"
        add("words", "mixed_number_words", tex_frac(f), finish(f"Each share is {f.numerator}/{f.denominator} cups.",
                                                               said, pick(TEXT_STYLES)), True)
    add("words", "fraction_for_integer_words", "3", finish("Each friend gets a third of the pizza.", "one third",
                                                           "boxed_text"), False)
    add("words", "fraction_for_integer_words", "4", finish("So the ratio is 4 to 1.", "one fourth", "prose_text"), False)
    # ordinals
    for n in [1, 2, 3, 5, 8, 12, 21, 33, 40, 100, 42, 19]:
        gold = pick([ordinal_digits(n), f"\\text{{{ordinal_digits(n)}}}", f"\\text{{{ordinal(n)}}}"])
        said = ordinal(n) if "text{" + ordinal(n) not in gold else ordinal_digits(n)
        reasoning = f"Counting the runners who finished ahead of her gives {n - 1}, so her position is {n}."
        add("words", "ordinal_words", gold, finish(reasoning, said, pick(TEXT_STYLES)), True)
    for n, wrong in [(3, 4), (21, 20), (12, 2), (5, 50), (8, 18), (2, 1), (31, 13), (100, 10)]:
        gold = pick([ordinal_digits(n), f"\\text{{{ordinal(n)}}}"])
        said = ordinal(wrong) if rng.random() < 0.6 else ordinal_digits(wrong)
        reasoning = f"She overtook {n - 1} runners on the last lap."
        add("words", "wrong_ordinal_words", gold, finish(reasoning, said, pick(TEXT_STYLES)), False)
    # text golds answered with an article
    shapes = [("parabola", "a parabola", "a hyperbola"), ("hyperbola", "a hyperbola", "an ellipse"),
              ("ellipse", "an ellipse", "a circle"), ("circle", "a circle", "an ellipse"),
              ("rhombus", "a rhombus", "a square"), ("trapezoid", "a trapezoid", "a parallelogram"),
              ("Tuesday", "a Tuesday", "a Wednesday"), ("line", "a line", "a plane"),
              ("isosceles triangle", "an isosceles triangle", "an equilateral triangle"),
              ("even", "an even number", "an odd number")]
    for gold, right, wrong in shapes:
        gold_tex = pick([f"\\text{{{gold}}}", gold, f"\\text{{{gold[0].upper() + gold[1:]}}}"])
        reasoning = pick(["Completing the square, the equation takes a standard form, and the sign pattern of the "
                          "squared terms tells us what it is.", "Checking the side lengths and angles one by one.",
                          "Working through the calendar from the given date."])
        add("words", "article_text", gold_tex, finish(reasoning, right, pick(TEXT_STYLES)), True)
        add("words", "wrong_article_text", gold_tex, finish(reasoning, wrong, pick(TEXT_STYLES)), False)
    # a word answer that is not the final one, and its honest mirror
    for _ in range(7):
        n = rng.randint(3, 60)
        m = n + pick([-2, -1, 1, 2, 10])
        body = (f"At first I counted {words(n)} handshakes, but I counted the host twice. Removing the duplicates "
                f"leaves {m}.")
        add("words", "earlier_word_not_final", str(n), finish(body, words(m), pick(TEXT_STYLES)), False)
        add("words", "later_word_is_final", str(m), finish(body, words(m), pick(TEXT_STYLES)), True)
    # two word answers
    for _ in range(5):
        n = rng.randint(2, 90)
        two = pick([f"{words(n)} or {words(n + 1)}", f"{words(n)} and {words(n + 2)}", f"either {words(n - 1)} or {words(n)}",
                    f"{words(n)}, possibly {words(n + 1)}"])
        add("words", "two_word_answers", str(n), finish(count_story(n, True), two, pick(TEXT_STYLES)), False)
    # the gold as digits but the final answer in words that is wrong in size
    for _ in range(4):
        n = rng.randint(2, 99) * 1000
        add("words", "wrong_scale_words", str(n), finish(f"So the total is {n // 1000} thousand dollars.",
                                                          words(n // 1000) + " hundred", pick(TEXT_STYLES)), False)


# ---------------------------------------------------------------------------------------------- family: matrix
def pmatrix(rows: list[list], env: str = "pmatrix") -> str:
    body = " \\\\ ".join(" & ".join(entry(x) for x in row) for row in rows)
    if env == "array":
        return "\\left(\\begin{array}{" + "c" * len(rows[0]) + "} " + body + " \\end{array}\\right)"
    return f"\\begin{{{env}}} {body} \\end{{{env}}}"


def entry(x) -> str:
    if isinstance(x, str):
        return x
    return tex_frac(Fraction(x))


def rand_matrix(r: int, c: int, low: int = -9, high: int = 9) -> list[list[int]]:
    while True:
        m = [[rng.randint(low, high) for _ in range(c)] for _ in range(r)]
        if any(x for row in m for x in row):
            return m


def scale(k: Fraction, m: list[list]) -> list[list]:
    return [[Fraction(k) * x for x in row] for row in m]


def matrix_reasoning(kind: str) -> str:
    return pick([
        f"We multiply the matrices row by column and collect the {kind}.",
        f"Using the formula for the inverse, we swap the diagonal entries, negate the others and divide by the determinant.",
        f"Apply the transformation to each basis vector; the images are the columns of the {kind}.",
        f"Projecting onto the given vector: the projection is (v . u)/(u . u) times u.",
        f"Compute each entry of the {kind} separately and then simplify.",
    ])


def shapes() -> tuple[int, int]:
    return pick([(2, 2), (2, 2), (3, 3), (2, 3), (2, 1), (3, 1)])


def family_matrix() -> None:
    for _ in range(14):  # a scalar times a matrix or vector
        r, c = shapes()
        kind = "vector" if c == 1 else "matrix"
        base = rand_matrix(r, c, -5, 5)
        k = pick([Fraction(2), Fraction(3), Fraction(-2), Fraction(5), Fraction(1, 2), Fraction(1, 3), Fraction(-1, 4)])
        gold = scale(k, base)
        scalar = tex_frac(k) if k.denominator > 1 else str(k.numerator)
        completion = finish(matrix_reasoning(kind), f"{scalar}{pmatrix(base)}", pick(MATH_STYLES))
        add("matrix", "scalar_times", pmatrix(gold), completion, True)
        pulled = f"{scalar} \\cdot {pmatrix(base, 'bmatrix')}" if rng.random() < 0.5 else f"\\left({scalar}\\right){pmatrix(base)}"
        add("matrix", "scalar_times", pmatrix(gold), finish(matrix_reasoning(kind), pulled, pick(MATH_STYLES)), True)
        wrong_k = k + pick([1, -1]) if rng.random() < 0.5 else -k
        assert wrong_k != k
        add("matrix", "wrong_scalar", pmatrix(gold),
            finish(matrix_reasoning(kind), f"{tex_frac(wrong_k) if wrong_k.denominator > 1 else wrong_k}{pmatrix(base)}",
                   pick(MATH_STYLES)), False)
    for _ in range(10):  # a negated matrix
        r, c = shapes()
        base = rand_matrix(r, c)
        gold = scale(Fraction(-1), base)
        add("matrix", "negated", pmatrix(gold), finish(matrix_reasoning("matrix"), f"-{pmatrix(base)}", pick(MATH_STYLES)), True)
        add("matrix", "negated", pmatrix(gold), finish(matrix_reasoning("matrix"), f"(-1){pmatrix(base, 'bmatrix')}",
                                                       pick(MATH_STYLES)), True)
        add("matrix", "negated_wrong_sign", pmatrix(gold), finish(matrix_reasoning("matrix"), f"-{pmatrix(gold)}",
                                                                  pick(MATH_STYLES)), False)
    for _ in range(10):  # a sum (or difference) of matrices
        r, c = shapes()
        a, b = rand_matrix(r, c), rand_matrix(r, c)
        op = pick(["+", "-"])
        gold = [[x + y if op == "+" else x - y for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]
        add("matrix", "sum", pmatrix(gold), finish(matrix_reasoning("matrix"), f"{pmatrix(a)} {op} {pmatrix(b)}",
                                                   pick(MATH_STYLES)), True)
        other = "-" if op == "+" else "+"
        if all(y == 0 for row in b for y in row):
            continue
        add("matrix", "sum_wrong_operation", pmatrix(gold),
            finish(matrix_reasoning("matrix"), f"{pmatrix(a)} {other} {pmatrix(b)}", pick(MATH_STYLES)), False)
    exact = [Fraction(1, 2), Fraction(1, 4), Fraction(3, 4), Fraction(1, 5), Fraction(2, 5), Fraction(-3, 2),
             Fraction(1, 8), Fraction(5, 4), Fraction(-1, 2), Fraction(7, 10), Fraction(3), Fraction(-2)]
    for _ in range(12):  # decimal entries for fraction entries, and the other way round
        r, c = shapes()
        values = [[pick(exact) for _ in range(c)] for _ in range(r)]
        decimals = [[format(float(x), "g") for x in row] for row in values]
        if rng.random() < 0.6:
            add("matrix", "decimal_entries", pmatrix(values), finish(matrix_reasoning("matrix"), pmatrix(decimals),
                                                                      pick(MATH_STYLES)), True)
        else:
            add("matrix", "fraction_entries", pmatrix(decimals), finish(matrix_reasoning("matrix"), pmatrix(values),
                                                                         pick(MATH_STYLES)), True)
        i, j = rng.randrange(r), rng.randrange(c)
        bad = [row[:] for row in decimals]
        x = values[i][j]
        bad[i][j] = pick([format(float(x) + 0.1, "g"), format(float(x) * 10, "g") if x else "1", format(-float(x), "g") if x else "0.5",
                          format(float(1 / x), "g") if x not in (0, 1, -1) else "2"])
        assert Fraction(bad[i][j]) != x
        add("matrix", "wrong_decimal_entry", pmatrix(values), finish(matrix_reasoning("matrix"), pmatrix(bad),
                                                                      pick(MATH_STYLES)), False)
    thirds = [[Fraction(1, 3), Fraction(2, 3)], [Fraction(1), Fraction(-1, 3)]]  # thirds are not 0.3 and 0.7
    add("matrix", "truncated_third_entries", pmatrix(thirds),
        finish(matrix_reasoning("matrix"), pmatrix([["0.3", "0.7"], ["1", "-0.3"]]), pick(MATH_STYLES)), False)
    for _ in range(10):  # another environment or written entries, and one wrong entry
        r, c = shapes()
        gold = rand_matrix(r, c)
        env = pick(["bmatrix", "array", "pmatrix"])
        written = [[pick([str(x), str(x), f"\\frac{{{2 * x}}}{{2}}", f"{x}.0"]) for x in row] for row in gold]
        add("matrix", "other_environment", pmatrix(gold), finish(matrix_reasoning("matrix"), pmatrix(written, env),
                                                                  pick(MATH_STYLES)), True)
        bad = [row[:] for row in gold]
        i, j = rng.randrange(r), rng.randrange(c)
        bad[i][j] += pick([1, -1, 2, -10])
        add("matrix", "one_wrong_entry", pmatrix(gold), finish(matrix_reasoning("matrix"), pmatrix(bad, env),
                                                                pick(MATH_STYLES)), False)
    for _ in range(7):  # a transpose of a non-symmetric matrix
        n = pick([2, 3])
        gold = rand_matrix(n, n)
        t = [list(col) for col in zip(*gold)]
        if t == gold:
            continue
        add("matrix", "transposed", pmatrix(gold), finish(matrix_reasoning("matrix"), pmatrix(t), pick(MATH_STYLES)), False)
    for _ in range(5):  # a scalar times a matrix whose entries are off by one somewhere
        base = rand_matrix(2, 2, -4, 4)
        k = pick([2, 3, -3])
        gold = scale(Fraction(k), base)
        bad = [row[:] for row in base]
        bad[rng.randrange(2)][rng.randrange(2)] += 1
        add("matrix", "scalar_times_wrong_entry", pmatrix(gold), finish(matrix_reasoning("matrix"),
                                                                         f"{k}{pmatrix(bad)}", pick(MATH_STYLES)), False)
    for _ in range(4):  # the determinant for the matrix, two matrices, a tuple of the wrong length
        gold = rand_matrix(2, 2)
        det = gold[0][0] * gold[1][1] - gold[0][1] * gold[1][0]
        add("matrix", "determinant_for_matrix", pmatrix(gold), finish("The determinant is ad - bc.", str(det),
                                                                       pick(MATH_STYLES)), False)
        other = scale(Fraction(-1), gold)
        add("matrix", "two_matrices", pmatrix(gold), finish(matrix_reasoning("matrix"),
                                                             f"{pmatrix(gold)} \\text{{ or }} {pmatrix(other)}",
                                                             pick(MATH_STYLES)), False)
    for _ in range(4):  # a scaled vector whose components are listed with a common factor pulled out of a tuple
        v = rand_matrix(3, 1, -4, 4)
        k = pick([2, 3, 4])
        gold = scale(Fraction(k), v)
        add("matrix", "scaled_column_vector", pmatrix(gold),
            finish("Taking the cross product component by component.", f"{k} {pmatrix(v, 'bmatrix')}", pick(MATH_STYLES)), True)
    for _ in range(4):  # the gold matrix in the reasoning, another final one
        gold = rand_matrix(2, 2)
        bad = [row[:] for row in gold]
        bad[0][0] += 3
        reasoning = f"A first attempt gave ${pmatrix(gold)}$, but I then recomputed the top-left entry."
        add("matrix", "gold_only_in_reasoning", pmatrix(gold), finish(reasoning, pmatrix(bad), pick(MATH_STYLES)), False)
        add("matrix", "corrected_to_gold", pmatrix(bad), finish(reasoning, pmatrix(bad), pick(MATH_STYLES)), True)


# ---------------------------------------------------------------------------------------------- family: cheap
def signed(n: int) -> str:
    """A term as a sum writes it: + 7, - 7."""
    return f"+ {n}" if n >= 0 else f"- {-n}"


def family_cheap() -> None:
    huge = ["10^{1000}", "2^{10^{6}}", "9^{9^{9}}", "10^{10^{10}}", "3^{4000}", "7^{7^{7}}", "100!", "2^{2^{30}}"]
    for i in range(14):  # terms cancelling around an astronomically large part
        big = pick(huge)
        n = pick([rng.randint(-50, -1), rng.randint(1, 999)])
        form = pick([f"{big} - {big} {signed(n)}", f"({big} {signed(n)}) - {big}", f"{n} + {big} - {big}",
                     f"\\frac{{{n} \\cdot {big}}}{{{big}}}", f"{big} \\cdot 0 {signed(n)}"])
        reasoning = "The large terms appear with opposite signs, so they cancel and only the constant remains."
        add("cheap", "cancelling_huge", str(n), finish(reasoning, form, pick(["boxed", "final", "think"])), True, "bare")
        if i >= 10:
            continue
        wrong = pick([f"{big} - {big} {signed(n + 1)}", f"({big} {signed(n)}) - {big} + 1",
                      f"\\frac{{{n} \\cdot {big}}}{{{big} + 1}}", f"{big} \\cdot 1 {signed(n)}", f"{n} - {big} - {big}"])
        add("cheap", "not_cancelling_huge", str(n), finish(reasoning, wrong, pick(["boxed", "final", "think"])), False, "bare")
    euler = [("-1", "e^{i\\pi}", "e^{i\\pi/2}"), ("0", "e^{i\\pi} + 1", "e^{i\\pi} - 1"), ("1", "e^{2\\pi i}", "e^{\\pi i}"),
             ("i", "e^{i\\pi/2}", "e^{-i\\pi/2}"), ("-i", "e^{3\\pi i/2}", "e^{i\\pi/2}"), ("1", "-e^{i\\pi}", "e^{i\\pi}"),
             ("-2", "2e^{i\\pi}", "2e^{2i\\pi}"), ("0", "e^{i\\pi/3} + e^{-i\\pi/3} - 1", "e^{i\\pi/3} + e^{-i\\pi/3}")]
    for gold, right, wrong in euler:
        reasoning = "By Euler's formula, $e^{i\\theta} = \\cos\\theta + i\\sin\\theta$."
        add("cheap", "euler_identity", gold, finish(reasoning, right, pick(["boxed", "final", "think"])), True, "bare")
        add("cheap", "euler_wrong_angle", gold, finish(reasoning, wrong, pick(["boxed", "final", "think"])), False, "bare")
    for gold, right, wrong in [("e^{i\\pi/3}", "\\frac{1}{2} + \\frac{\\sqrt{3}}{2}i", "\\frac{\\sqrt{3}}{2} + \\frac{1}{2}i"),
                               ("\\cos\\frac{\\pi}{4} + i\\sin\\frac{\\pi}{4}", "e^{i\\pi/4}", "e^{i\\pi/2}"),
                               ("2e^{i\\pi/6}", "\\sqrt{3} + i", "1 + \\sqrt{3}i")]:
        add("cheap", "polar_form", gold, finish("Writing the number in polar form.", right, pick(MATH_STYLES)), True)
        add("cheap", "wrong_polar_form", gold, finish("Writing the number in polar form.", wrong, pick(MATH_STYLES)), False)
    for _ in range(8):  # very long sums of small terms
        count = rng.randint(150, 700)
        term, value = pick([("1", Fraction(1)), ("\\frac{1}{2}", Fraction(1, 2)), ("2", Fraction(2)), ("0.1", Fraction(1, 10)),
                            ("\\frac{1}{4}", Fraction(1, 4))])
        total = value * count
        gold = tex_frac(total) if total.denominator > 1 or rng.random() < 0.5 else str(total.numerator)
        if term == "0.1":
            gold = format(float(total), "g")
        reasoning = f"Each of the {count} terms contributes {term}, so we just write them all out."
        add("cheap", "long_sum", gold, finish(reasoning, " + ".join([term] * count), pick(["boxed", "think"])), True, "bare")
        add("cheap", "long_sum_one_short", gold, finish(reasoning, " + ".join([term] * (count - 1)),
                                                        pick(["boxed", "think"])), False, "bare")
    for _ in range(4):  # 1 + 2 + ... + N written out in full
        n = rng.randint(60, 200)
        terms = list(range(1, n + 1))
        add("cheap", "long_arithmetic_series", str(n * (n + 1) // 2),
            finish("Adding the integers one by one.", " + ".join(map(str, terms)), "boxed"), True, "bare")
        terms.remove(rng.randint(2, n))
        add("cheap", "series_missing_term", str(n * (n + 1) // 2),
            finish("Adding the integers one by one.", " + ".join(map(str, terms)), "boxed"), False, "bare")
    for _ in range(8):  # a value nested in hundreds of brackets
        depth = rng.randint(100, 500)
        n = rng.randint(1, 99)
        value = pick([str(n), f"\\frac{{{n}}}{{{n + 1}}}", f"{n}.5"])
        open_, close = pick([("(", ")"), ("\\left(", "\\right)"), ("{", "}"), ("[", "]")])
        if open_ == "[":  # [x] may be read as the floor of x: only integers, so both readings agree
            value = str(n)
        nested = open_ * depth + value + close * depth
        add("cheap", "nested_brackets", value, finish("Simplifying the brackets from the inside out.", nested,
                                                      pick(["boxed", "think"])), True, "bare")
        bad_value = pick([str(n + 1), f"\\frac{{{n + 1}}}{{{n}}}", f"{n}.05"]) if open_ != "[" else str(n + 1)
        add("cheap", "nested_brackets_wrong", value, finish("Simplifying the brackets from the inside out.",
                                                           open_ * depth + bad_value + close * depth,
                                                           pick(["boxed", "think"])), False, "bare")
    for _ in range(6):  # nested negations: the sign follows their parity
        depth = rng.randint(100, 300)
        n = rng.randint(2, 50)
        nested = "-(" * depth + str(n) + ")" * depth
        sign = -1 if depth % 2 else 1
        add("cheap", "nested_negations", str(sign * n), finish("Each minus sign flips the sign once.", nested, "boxed"),
            True, "bare")
        add("cheap", "nested_negations_parity", str(-sign * n),
            finish("Each minus sign flips the sign once.", nested, "boxed"), False, "bare")
    powers = [("2^{100}", "4^{50}", "2^{99}"), ("10^{2024}", "100^{1012}", "10^{2023}"), ("3^{3000}", "27^{1000}", "9^{1501}"),
              ("2^{2^{20}}", "4^{2^{19}}", "2^{2^{19}}"), ("5^{600}", "25^{300}", "25^{600}"), ("10^{-500}", "\\frac{1}{10^{500}}", "\\frac{1}{10^{499}}"),
              ("2^{1000} \\cdot 3^{1000}", "6^{1000}", "5^{1000}"), ("\\frac{1}{2^{99}}", "2^{-99}", "2^{-98}"),
              ("7^{7^{7}}", "7^{823543}", "7^{823542}"), ("1000^{1000}", "10^{3000}", "10^{1003}")]
    for gold, right, wrong in powers:
        reasoning = "Rewrite both sides with the same base and compare exponents."
        add("cheap", "equal_power_form", gold, finish(reasoning, right, pick(MATH_STYLES)), True)
        add("cheap", "wrong_power_form", gold, finish(reasoning, wrong, pick(MATH_STYLES)), False)


# ---------------------------------------------------------------------------------------------- family: box
def family_box() -> None:
    golds = [("42", "41"), ("\\frac{3}{4}", "\\frac{4}{3}"), ("2\\sqrt{5}", "5\\sqrt{2}"), ("-7", "7"), ("128", "256"),
             ("\\frac{\\pi}{6}", "\\frac{\\pi}{3}"), ("0.25", "0.52"), ("1009", "1008")]
    lead = ["Putting everything together, we get", "Hence the answer is", "So the final answer is", "Therefore"]
    for gold, wrong in golds:  # an unclosed box at the very end
        for answer, label in ((gold, True), (wrong, False)):
            dollar = pick(["$", "", "\\[\n"])
            add("box", "unclosed_at_end" if label else "unclosed_at_end_wrong", gold,
                f"Let me simplify step by step.\n\n{pick(lead)} {dollar}\\boxed{{{answer}", label)
    for gold, cut in [("425", "42"), ("\\frac{3}{4}", "\\frac{3}{"), ("1024", "10"), ("3\\sqrt{2}", "3\\sqrt{")]:
        add("box", "unclosed_truncated", gold, f"Working it out.\n\nThe answer is \\boxed{{{cut}", False)
    for gold, _ in golds:
        add("box", "unclosed_at_end", gold, f"So we get\n\n**Final Answer**\n\\boxed{{{gold}", True)
    intervals = [("(2, 5)", "\\left(2, 5)", "\\left(2, 6)"), ("[1, 4)", "\\left[1, 4)", "\\left[1, 4]"),
                 ("(-\\infty, 3]", "\\left(-\\infty, 3]", "\\left(-\\infty, 3)"), ("(3, -1)", "\\left( 3, -1 )", "\\left( -1, 3 )"),
                 ("\\{1, 2, 3\\}", "\\left\\{1, 2, 3\\}", "\\left\\{1, 2\\}"), ("(0, \\infty)", "\\left(0, \\infty)", "\\left[0, \\infty)"),
                 ("(\\frac{1}{2}, 3)", "\\left(\\frac{1}{2}, 3)", "\\left(\\frac{1}{2}, -3)")]
    for gold, right, wrong in intervals:  # an unmatched \left
        add("box", "unmatched_left", gold, finish("Solving the inequality and checking the endpoints.", right,
                                                  pick(["boxed", "final", "think"])), True)
        add("box", "unmatched_left_wrong", gold, finish("Solving the inequality and checking the endpoints.", wrong,
                                                        pick(["boxed", "final", "think"])), False)
    for gold, wrong in golds + [("x^2 + 1", "x^2 - 1"), ("(1, 2)", "(2, 1)")]:  # a trailing line break inside the box
        br = pick(["\\\\", " \\\\", "\\\\ ", " \\\\\n", "\\newline"])
        add("box", "trailing_break", gold, f"Combining the results.\n\\[\n\\boxed{{{gold}{br}}}\n\\]", True)
        add("box", "trailing_break_wrong", gold, f"Combining the results.\n\\[\n\\boxed{{{wrong}{br}}}\n\\]", False)
        add("box", "trailing_break", gold, f"Hence\n$$\\boxed{{{gold} \\\\[4pt]}}$$", True)
        if gold[0].isdigit() and "\\" not in gold:
            add("box", "break_between_two", gold, f"Combining the results.\n\\[\n\\boxed{{{gold} \\\\ {wrong}}}\n\\]", False)
    tokens = [("7", "7", "8"), ("5", "5", "3"), ("A", "A", "B"), ("\\pi", "\\pi", "e"), ("x", "x", "y"), ("0", "0", "1"),
              ("\\text{(C)}", "C", "D"), ("9", "9", "6"), ("e", "e", "\\pi"), ("2", "2", "4")]
    for gold, token, wrong in tokens:  # \boxed with one token and no braces
        sep = "" if token.startswith("\\") else " "
        tail = pick([".", "", "$.", "\n"])
        open_ = "$" if tail == "$." else ""
        add("box", "unbraced_token", gold, f"After checking all cases, the answer is {open_}\\boxed{sep}{token}{tail}", True)
        wsep = "" if wrong.startswith("\\") else " "
        add("box", "unbraced_token_wrong", gold, f"After checking all cases, the answer is {open_}\\boxed{wsep}{wrong}{tail}", False)
    sentences = [("42", "\\text{The answer is } 42", "\\text{The answer is not } 42"),
                 ("42", "\\text{There are } 42 \\text{ ways.}", "\\text{There are between } 40 \\text{ and } 45 \\text{ ways.}"),
                 ("15", "\\text{She needs 15 more stickers}", "\\text{She needs at least 15 more stickers}"),
                 ("8", "8 \\text{ is the smallest such } n", "8 \\text{ or } 9 \\text{ is the smallest such } n"),
                 ("\\frac{1}{3}", "\\text{The probability is } \\frac{1}{3}", "\\text{The probability is about } \\frac{1}{3}"),
                 ("12", "\\text{It takes 12 days.}", "\\text{It takes 12 or 13 days.}"),
                 ("3", "\\text{Exactly } 3 \\text{ solutions}", "\\text{Either 3 or 4 solutions}"),
                 ("2020", "\\text{The year is 2020}", "\\text{The year is 2021}"),
                 ("90", "\\text{The train travels } 90 \\text{ km}", "\\text{The train travels } 180 \\text{ km}"),
                 ("6", "\\text{Six}", "\\text{Six or seven}")]
    for gold, right, wrong in sentences:  # a sentence around the answer in the box
        add("box", "sentence_in_box", gold, finish("We set up the equation and solve it.", right,
                                                   pick(["boxed", "final", "think"])), True)
        add("box", "sentence_in_box_wrong", gold, finish("We set up the equation and solve it.", wrong,
                                                         pick(["boxed", "final", "think"])), False)
    for gold, right in [("7", "\\text{The minimum is } 7"), ("\\frac{2}{5}", "\\text{Probability} = \\frac{2}{5}"),
                        ("30", "\\text{Total: } 30 \\text{ students}"), ("4", "\\text{Answer: } 4"),
                        ("100", "\\text{She saved } \\$100 \\text{ in all}"), ("9", "\\text{the smallest } n \\text{ is } 9")]:
        add("box", "sentence_in_box", gold, finish("We set up the equation and solve it.", right, pick(["boxed", "final", "think"])),
            True)
    for gold, two in [("12", "12, 13"), ("12", "12 \\quad 24"), ("5", "5 \\text{ and } 6"), ("-3", "-3, 3"),
                      ("\\frac{1}{2}", "\\frac{1}{2}, \\frac{1}{3}"), ("4", "4 \\; 16")]:  # two numbers in one box
        add("box", "two_numbers_in_box", gold, finish("Both candidates satisfy the first equation.", two,
                                                      pick(["boxed", "final"])), False)


# ---------------------------------------------------------------------------------------------- family: other
def family_other() -> None:
    for _ in range(8):  # answer phrases
        n = rng.randint(2, 5000)
        reasoning = count_story(n)
        phrase = pick([f"Final Answer: The final answer is ${n}$. I hope it is correct.", f"**Answer:** ${n}$",
                       f"The answer is: {n}", f"#### {n}", f"Final answer: {n}", f"**Final answer:** $\\boxed{{{n}}}$",
                       f"Answer: $\\boxed{{{n}}}$"])
        add("other", "answer_phrase", str(n), f"{reasoning}\n\n{phrase}", True)
        m = n + pick([1, -1, 10, 100])
        phrase_wrong = phrase.replace(str(n), str(m))
        add("other", "answer_phrase_wrong", str(n), f"{reasoning}\n\n{phrase_wrong}", False)
    sets = [("\\{1, 2, 3\\}", "\\{3, 1, 2\\}", "\\{1, 2\\}"), ("\\{-2, 5\\}", "\\{5, -2\\}", "\\{-5, 2\\}"),
            ("\\{0, 1\\}", "\\{1, 0\\}", "\\{0, 1, 2\\}"), ("\\{\\frac{1}{2}, 3\\}", "\\{3, 0.5\\}", "\\{3, 0.2\\}"),
            ("\\{-1, 1\\}", "\\{\\pm 1\\}", "\\{1\\}"), ("\\{2, 4, 6\\}", "\\{6, 4, 2\\}", "\\{2, 4, 8\\}")]
    for gold, right, wrong in sets:
        add("other", "set_reordered", gold, finish("Solving the equation gives the following roots.", right,
                                                   pick(MATH_STYLES)), True)
        add("other", "set_wrong", gold, finish("Solving the equation gives the following roots.", wrong,
                                               pick(MATH_STYLES)), False)
    units = [("12", "12\\text{ cm}", "12\\text{ cm}^2", "12 \\text{ cm}"), ("18.5", "\\$18.50", "\\$1.85", "18.5"),
             ("45", "45^\\circ", "4.5^\\circ", "45"), ("50\\text{ cm}", "0.5\\text{ m}", "50\\text{ m}", None),
             ("3\\text{ hours}", "180\\text{ minutes}", "3\\text{ minutes}", None), ("60", "60 \\text{ mph}", "6 \\text{ mph}", "60"),
             ("2.5\\text{ kg}", "2500\\text{ g}", "25\\text{ g}", None), ("7", "7\\text{ apples}", "9\\text{ apples}", "7")]
    for gold, right, wrong, wrong_gold in units:
        add("other", "units", gold, finish("Converting and simplifying.", right, pick(MATH_STYLES)), True)
        add("other", "units_wrong", wrong_gold or gold, finish("Converting and simplifying.", wrong, pick(MATH_STYLES)), False)
    add("other", "units_wrong", "12\\text{ cm}", finish("The side is 12.", "12\\text{ cm}^2", "boxed"), False)
    science = [("6.02\\times10^{23}", "6.02 \\cdot 10^{23}", "6.02\\times10^{22}"), ("3.2\\times10^{5}", "320000", "32000"),
               ("1.5\\times10^{-3}", "0.0015", "0.015"), ("4\\times10^{6}", "4{,}000{,}000", "400{,}000"),
               ("2.99\\times10^{8}", "299000000", "2.9\\times10^{8}"), ("7.5\\times10^{-6}", "7.5e-6", "7.5e-5"),
               ("1.2\\times 10^{4}", "12 \\times 10^{3}", "12 \\times 10^{4}")]
    for gold, right, wrong in science:
        add("other", "scientific_notation", gold, finish("Multiplying the mantissas and adding exponents.", right,
                                                         pick(MATH_STYLES)), True)
        add("other", "scientific_notation_wrong", gold, finish("Multiplying the mantissas and adding exponents.", wrong,
                                                               pick(MATH_STYLES)), False)
    radicals = [("2\\sqrt{3}", "\\sqrt{12}", "3\\sqrt{2}"), ("5\\sqrt{2}", "\\sqrt{50}", "2\\sqrt{5}"),
                ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{3}}{2}"), ("4\\sqrt{3}", "\\sqrt{48}", "2\\sqrt{6}"),
                ("\\frac{\\sqrt{6}}{3}", "\\sqrt{\\frac{2}{3}}", "\\sqrt{\\frac{3}{2}}"), ("3\\sqrt[3]{2}", "\\sqrt[3]{54}", "\\sqrt[3]{18}"),
                ("1+\\sqrt{2}", "\\frac{1}{\\sqrt{2}-1}", "\\frac{1}{\\sqrt{2}+1}"), ("6\\sqrt{5}", "\\sqrt{180}", "\\sqrt{150}")]
    for gold, right, wrong in radicals:
        add("other", "radical_form", gold, finish("Simplifying the radical.", right, pick(MATH_STYLES)), True)
        add("other", "radical_wrong", gold, finish("Simplifying the radical.", wrong, pick(MATH_STYLES)), False)
    more = [("6.02\\times10^{23}", "602\\times 10^{21}"), ("3.2\\times10^{5}", "320{,}000"), ("2.99\\times10^{8}", "2.99e8"),
            ("1.5\\times10^{-3}", "1.5 \\cdot 10^{-3}"), ("7.5\\times10^{-6}", "0.0000075"), ("2\\sqrt{3}", "\\frac{6}{\\sqrt{3}}"),
            ("\\frac{\\sqrt{2}}{2}", "\\frac{\\sqrt{8}}{4}"), ("4\\sqrt{3}", "2\\sqrt{12}"), ("5\\sqrt{2}", "\\sqrt{2} \\cdot 5"),
            ("\\{1, 2, 3\\}", "x \\in \\{2, 3, 1\\}"), ("\\{-2, 5\\}", "\\{5,-2\\}"), ("x^2 - 1", "-1 + x^2"),
            ("2x + 3", "2(x + 1.5)"), ("(a+b)^2", "(b+a)^2"), ("\\frac{1}{x(x+1)}", "\\frac{1}{x^2+x}"),
            ("12", "12 \\text{ centimeters}"), ("45", "45 \\text{ degrees}"), ("3n^2 - n", "-n + 3n^2")]
    for gold, right in more:  # one more right form for the families above
        add("other", "equal_form", gold, finish("Simplifying and checking the result.", right, pick(MATH_STYLES)), True)
    expressions = [("x^2 - 1", "(x-1)(x+1)", "(x-1)^2"), ("\\frac{x+1}{x-1}", "1 + \\frac{2}{x-1}", "1 - \\frac{2}{x-1}"),
                   ("2x + 3", "3 + 2x", "2x - 3"), ("\\sin 2x", "2\\sin x \\cos x", "2\\sin x"),
                   ("(a+b)^2", "a^2 + 2ab + b^2", "a^2 + b^2"), ("\\frac{1}{x(x+1)}", "\\frac{1}{x} - \\frac{1}{x+1}", "\\frac{1}{x} + \\frac{1}{x+1}"),
                   ("3n^2 - n", "n(3n-1)", "n(3n+1)"), ("\\ln 6", "\\ln 2 + \\ln 3", "\\ln 2 \\cdot \\ln 3")]
    for gold, right, wrong in expressions:
        add("other", "expression_form", gold, finish("Expanding and collecting like terms.", right, pick(MATH_STYLES)), True)
        add("other", "expression_wrong", gold, finish("Expanding and collecting like terms.", wrong, pick(MATH_STYLES)), False)
    turns = [("\n\nHuman: Thanks! Can you also compute 17 times 3?\n\nAssistant: Sure, 17 times 3 is $\\boxed{{{x}}}$.", "51"),
             ("<|im_end|>\n<|im_start|>user\nNow solve x + 4 = 10.<|im_end|>\n<|im_start|>assistant\nThe answer is $\\boxed{{{x}}}$.",
              "6"),
             ("\n\nUser: What about 2^10?\nAssistant: That is {x}.", "1024"),
             ("\n\n### Instruction:\nFind the remainder when 100 is divided by 7.\n\n### Response:\nThe remainder is "
              "$\\boxed{{{x}}}$.", "2"),
             ("\n\nQuestion: How many sides does a hexagon have?\nAnswer: {x}", "6")]
    for turn, answer in turns:  # a completion that runs on into a new chat turn after the answer
        n = rng.randint(10, 400)
        add("other", "run_on_turn", str(n), finish(count_story(n), str(n), pick(["boxed", "final", "prose"]))
            + turn.format(x=answer), True)
        m = n + pick([1, 2, -3])  # the gold only in the next turn, after a wrong answer to this one
        add("other", "run_on_turn_gold_in_next", str(n), finish(count_story(m), str(m), pick(["boxed", "final", "prose"]))
            + turn.format(x=n), False)
    angles = [("\\frac{\\pi}{3}", "60"), ("\\frac{\\pi}{4}", "45"), ("\\frac{2\\pi}{3}", "120"), ("30", "\\frac{\\pi}{6}"),
              ("90", "\\frac{\\pi}{2}"), ("\\pi", "180")]
    for gold, wrong in angles:  # degrees for radians and the other way round (no degree sign)
        add("other", "degrees_for_radians", gold, finish("The angle between the vectors follows from the dot product.",
                                                         wrong, pick(MATH_STYLES)), False)
    trig = [("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}"), ("\\frac{\\pi}{6}", "\\frac{\\pi}{3}"), ("2\\pi", "\\pi"),
            ("-\\frac{\\sqrt{2}}{2}", "\\frac{\\sqrt{2}}{2}"), ("\\sqrt{3}", "\\frac{\\sqrt{3}}{3}"), ("\\frac{3\\pi}{4}", "\\frac{\\pi}{4}")]
    for gold, wrong in trig:
        add("other", "wrong_trig_value", gold, finish("Using the unit circle.", wrong, pick(MATH_STYLES)), False)
    for gold, right in [("\\frac{\\sqrt{3}}{2}", "\\cos\\frac{\\pi}{6}"), ("\\frac{\\pi}{6}", "\\arcsin\\frac{1}{2}"),
                        ("1", "\\sin^2 x + \\cos^2 x")]:
        add("other", "trig_form", gold, finish("Using the unit circle.", right, pick(["boxed", "final", "think"])), True, "bare")
    decimals = [("2.75", "2.57"), ("0.125", "0.0125"), ("\\frac{1}{8}", "0.18"), ("3.14", "3.41"), ("0.6", "0.06"),
                ("1.5", "15"), ("\\frac{2}{3}", "0.6"), ("\\frac{5}{4}", "1.2")]
    for gold, wrong in decimals:
        add("other", "wrong_decimal", gold, finish("Converting to a decimal.", wrong, pick(MATH_STYLES)), False)
    for gold, right in [("2.75", "\\frac{11}{4}"), ("0.125", "\\frac{1}{8}"), ("\\frac{3}{8}", "0.375"), ("1.5", "1\\frac{1}{2}")]:
        add("other", "decimal_fraction", gold, finish("Converting the fraction.", right, pick(MATH_STYLES)), True)
    wrong_fracs = [("\\frac{3}{8}", "\\frac{8}{3}"), ("\\frac{3}{8}", "\\frac{3}{5}"), ("\\frac{5}{12}", "\\frac{5}{21}"),
                   ("\\frac{7}{9}", "\\frac{7}{8}"), ("-\\frac{2}{3}", "\\frac{2}{3}"), ("\\frac{1}{4}", "\\frac{2}{4}")]
    for gold, wrong in wrong_fracs:
        add("other", "wrong_fraction", gold, finish("Reducing the fraction.", wrong, pick(MATH_STYLES)), False)
    for _ in range(8):  # the right number only in the reasoning, and its honest mirror
        n = rng.randint(5, 900)
        m = n + pick([1, -1, 2, 5, n])
        body = pick([f"Adding the two parts gives {n}. But we must subtract the overlap counted twice, which leaves {m}.",
                     f"My first estimate was {n}, however the problem asks for the number of distinct values, which is {m}.",
                     f"So $x = {n}$ before the last step; doubling back over the constraint gives {m}."])
        add("other", "gold_only_in_reasoning", str(n), finish(body, str(m), pick(MATH_STYLES)), False)
        add("other", "reasoning_then_final", str(m), finish(body, str(m), pick(MATH_STYLES)), True)
    near = [("1000", "1001"), ("-5", "5"), ("0.5", "5"), ("17", "71"), ("64", "46"), ("\\frac{1}{2}", "2"), ("99", "100"),
            ("2^{10}", "1023"), ("\\sqrt{2}", "2"), ("\\pi", "\\frac{22}{7}")]
    for gold, wrong in near:
        add("other", "near_miss", gold, finish("Checking the boundary cases carefully.", wrong, pick(MATH_STYLES)), False)
    for gold, right in [("1000", "1{,}000"), ("-5", "- 5"), ("0.5", ".5"), ("1024", "2^{10}"), ("\\pi", "\\pi")]:
        policy = "bare" if right == "2^{10}" else "marked"
        add("other", "same_number", gold, finish("Checking the boundary cases carefully.", right, pick(MATH_STYLES)), True, policy)
    for gold, several in [("5", "\\boxed{5} \\quad \\boxed{6}"), ("5", "5 \\text{ or } 6"), ("12", "\\boxed{12}, \\boxed{21}"),
                          ("3", "\\boxed{3} or maybe \\boxed{4}")]:
        add("other", "several_answers", gold, f"Both values seem to work.\n\nThe answer is ${several}$.", False)


# ---------------------------------------------------------------------------------------------- hand-written cases
HAND: list[tuple[str, str, str, bool, str]] = [
    # (family, gold, completion, label, policy): full completions written one by one
    ("words", "1000000", "<think>\nA million is 10^6. The number of ways is 10 choices for each of 6 digits, so 10^6 = "
     "1,000,000.\n</think>\n<answer>one million</answer>", True, "marked"),
    ("words", "2024", "Okay, let's see. The year the event repeats is the least common multiple offset... we found the "
     "next year is 2024.\n\nSo the answer is $\\boxed{\\text{two thousand twenty-four}}$.", True, "marked"),
    ("words", "2024", "The cycle has length 12 and 2012 + 12 = 2024, so the event repeats in 2024.\n\n"
     "**Final Answer**\n\\[\n\\boxed{\\text{twenty twenty-four}}\n\\]", True, "marked"),
    ("words", "11", "Hmm, let me list them: 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31. That's eleven primes below 32. Wait, "
     "is 1 prime? No. So eleven.\n\nThe answer is **eleven**.", True, "marked"),
    ("words", "11", "Listing the primes below 32: 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31 (eleven of them). The question "
     "asks for the largest prime below 12, though, which is seven... no, it is 11. Hmm, reading again: the question asks "
     "for the number of primes below 30, which excludes 31.\n\nThe answer is **ten**.", False, "marked"),
    ("words", "\\frac{1}{2}", "<think>\nThe coin is fair, so heads has probability one half on each toss, and the tosses "
     "are independent. P(last toss heads) = 1/2.\n</think>\n<answer>a half</answer>", True, "marked"),
    ("words", "\\frac{1}{4}", "Two fair tosses: P(HH) = 1/2 * 1/2. That's one quarter.\n\nSo the answer is "
     "$\\boxed{\\text{one-quarter}}$.", True, "marked"),
    ("words", "\\frac{1}{4}", "Two fair tosses: P(at least one head) = 1 - 1/4.\n\nSo the answer is "
     "$\\boxed{\\text{three quarters}}$.", False, "marked"),
    ("words", "12", "A dozen eggs cost $3, and she buys 36 eggs, which is three dozen... no wait, the question asks how "
     "many eggs are left: 48 - 36 = 12.\n\n**Answer:** twelve eggs", True, "marked"),
    ("words", "12", "She had 48 eggs and used 36, leaving 12. Then she bought a dozen more.\n\n**Answer:** twenty-four "
     "eggs", False, "marked"),
    ("words", "\\text{second}", "<think>\nAfter the swap, Bea moves ahead of Cal but stays behind Ana. So Bea is second.\n"
     "</think>\n<answer>2nd place</answer>", True, "marked"),
    ("words", "\\text{Thursday}", "Day 0 is Monday. 100 = 14*7 + 2, so 100 days later is two days after Monday.\n\n"
     "The answer is $\\boxed{\\text{a Wednesday}}$.", False, "marked"),
    ("words", "\\text{Wednesday}", "Day 0 is Monday. 100 = 14*7 + 2, so 100 days later is two days after Monday.\n\n"
     "The answer is $\\boxed{\\text{a Wednesday}}$.", True, "marked"),
    ("words", "-3", "The lowest point of the parabola y = (x-2)^2 - 3 is its vertex.\n\nFinal answer: negative three", True,
     "marked"),
    ("words", "7", "Seven people shook hands at first; then the host arrived and shook everyone's hand, so 8 people "
     "took part in all.\n\nThe answer is $\\boxed{\\text{eight}}$.", False, "marked"),
    ("words", "8", "Seven people shook hands at first; then the host arrived and shook everyone's hand, so 8 people "
     "took part in all.\n\nThe answer is $\\boxed{\\text{eight}}$.", True, "marked"),
    ("matrix", "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "<think>\nA rotation by 360 degrees is the identity.\n"
     "</think>\n<answer>$I_2$</answer>", True, "marked"),
    ("matrix", "\\begin{pmatrix} 2 & 0 \\\\ 0 & 2 \\end{pmatrix}", "Scaling by 2 in every direction.\n\n"
     "Therefore, the final answer is $\\boxed{2I}$.", True, "marked"),
    ("matrix", "\\begin{pmatrix} 2 & 0 \\\\ 0 & 2 \\end{pmatrix}", "Scaling by 2 in every direction.\n\n"
     "Therefore, the final answer is $\\boxed{\\begin{pmatrix} 2 & 0 \\\\ 0 & 0 \\end{pmatrix}}$.", False, "marked"),
    ("matrix", "\\begin{pmatrix} -1/3 \\\\ 2/3 \\\\ 2/3 \\end{pmatrix}", "The unit vector in the direction of (-1, 2, 2) "
     "has length 3.\n\n**Final Answer**\n\\[\n\\boxed{\\frac{1}{3}\\begin{pmatrix} -1 \\\\ 2 \\\\ 2 \\end{pmatrix}}\n\\]", True,
     "marked"),
    ("matrix", "\\begin{pmatrix} -1/3 \\\\ 2/3 \\\\ 2/3 \\end{pmatrix}", "The unit vector in the direction of (-1, 2, 2) "
     "has length 3.\n\n**Final Answer**\n\\[\n\\boxed{\\frac{1}{9}\\begin{pmatrix} -1 \\\\ 2 \\\\ 2 \\end{pmatrix}}\n\\]", False,
     "marked"),
    ("matrix", "\\begin{pmatrix} 3 \\\\ -1 \\end{pmatrix}", "The projection is 3 times (1, -1/3).\n\nSo the answer is "
     "$\\begin{pmatrix} 3 \\\\ -1 \\end{pmatrix}$.", True, "marked"),
    ("matrix", "\\begin{pmatrix} 3 \\\\ -1 \\end{pmatrix}", "Checking: (3, -1) is orthogonal to (1, 3). The reflection "
     "flips the sign of the component along (1, 3), which is zero here.\n\nSo the answer is $\\begin{pmatrix} -3 \\\\ 1 "
     "\\end{pmatrix}$.", False, "marked"),
    ("matrix", "\\begin{pmatrix} 0.5 & -0.5 \\\\ 0.5 & 0.5 \\end{pmatrix}", "Rotation by 45 degrees scaled by 1/sqrt(2)."
     "\n\nThe answer is $\\boxed{\\frac{1}{2}\\begin{pmatrix} 1 & -1 \\\\ 1 & 1 \\end{pmatrix}}$.", True, "marked"),
    ("matrix", "\\begin{pmatrix} 0.5 & -0.5 \\\\ 0.5 & 0.5 \\end{pmatrix}", "Rotation by 45 degrees scaled by "
     "1/sqrt(2).\n\nThe answer is $\\boxed{\\frac{1}{2}\\begin{pmatrix} 1 & 1 \\\\ -1 & 1 \\end{pmatrix}}$.", False, "marked"),
    ("matrix", "\\begin{pmatrix} 4 \\\\ 6 \\end{pmatrix}", "Adding the two displacement vectors.\n\nThe answer is "
     "$\\boxed{\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix} + \\begin{pmatrix} 3 \\\\ 4 \\end{pmatrix}}$.", True, "marked"),
    ("matrix", "\\begin{pmatrix} 4 \\\\ 6 \\end{pmatrix}", "Adding the two displacement vectors.\n\nThe answer is "
     "$\\boxed{\\begin{pmatrix} 4 \\\\ 6 \\end{pmatrix}, \\begin{pmatrix} 6 \\\\ 4 \\end{pmatrix}}$.", False, "marked"),
    ("cheap", "5", "<think>\nThe telescoping terms cancel: (10^{100} + 5) - 10^{100} = 5.\n</think>\n<answer>5</answer>",
     True, "marked"),
    ("cheap", "5", "<think>\nThe telescoping terms cancel: (10^{100} + 5) - 10^{100} = 5. Hmm, but we also need the "
     "extra term from the boundary, so it is 6.\n</think>\n<answer>6</answer>", False, "marked"),
    ("cheap", "10^{100}", "A googol has 101 digits, so it is $10^{100}$.\n\n**Final Answer**\n\\[\n\\boxed{(10^{10})^{10}}"
     "\n\\]", True, "marked"),
    ("cheap", "10^{100}", "A googol has 101 digits.\n\n**Final Answer**\n\\[\n\\boxed{10^{10^{10}}}\n\\]", False,
     "marked"),
    ("cheap", "2^{2023}", "Each step doubles the count, starting from 2 after one step, so after 2023 steps we have "
     "$2^{2023}$.\n\nThe answer is $\\boxed{2 \\cdot 4^{1011}}$.", True, "marked"),
    ("cheap", "2^{2023}", "Each step doubles the count, starting from 1, so after 2023 steps we have $2^{2022}$... "
     "\n\nThe answer is $\\boxed{4^{1011}}$.", False, "marked"),
    ("cheap", "0", "The sum of all 2024th roots of unity is zero, since they are symmetric about the origin. Writing it "
     "out with Euler's formula:\n\n$\\boxed{\\sum_{k=0}^{2023} e^{2\\pi i k/2024}}$", True, "bare"),
    ("box", "42", "<think>\nSo 6 * 7 = 42.\n</think>\n\nThe answer is $\\boxed{42}$\n\n\\boxed{", True, "marked"),
    ("box", "17", "Let me compute: 8 + 9 = 17.\n\nFinal answer: \\boxed{17}}", True, "marked"),
    ("box", "17", "Let me compute: 8 + 9 = 17.\n\nFinal answer: \\boxed{{17}", True, "marked"),
    ("box", "\\frac{9}{2}", "Half of nine.\n\n\\[\\boxed{\\dfrac{9}{2}\\\\[2pt]}\\]", True, "marked"),
    ("box", "x = 3", "Subtract 5 from both sides: 2x = 6, so x = 3.\n\n\\boxed{\\text{So } x = 3 \\text{ is the only "
     "solution.}}", True, "marked"),
    ("box", "x = 3", "Subtract 5 from both sides: 2x = 6, so x = 3, or x = -3 if we square first.\n\n\\boxed{\\text{So } "
     "x = 3 \\text{ or } x = -3.}", False, "marked"),
    ("box", "24", "Four factorial is 24.\n\nThe answer is $\\fbox{24}$.", True, "marked"),
    ("box", "24", "Four factorial is 24, plus the empty arrangement.\n\nThe answer is $\\fbox{25}$.", False, "marked"),
    ("other", "25\\%", "<think>\n1 out of 4 is a quarter.\n</think>\n<answer>$25$ percent</answer>", True, "marked"),
    ("other", "25\\%", "<think>\n1 out of 4 is a quarter.\n</think>\n<answer>$2.5\\%$</answer>", False, "marked"),
    ("other", "\\$2.50", "Each pen costs $10 / 4 = $2.50.\n\n**Answer:** $\\$2.5$", True, "marked"),
    ("other", "\\$2.50", "Each pen costs $10 / 4 = $2.50. With tax it is $2.70.\n\n**Answer:** $\\$2.70$", False, "marked"),
    ("other", "(-\\infty, -2) \\cup (2, \\infty)", "We need x^2 > 4.\n\nThe solution set is $\\boxed{|x| > 2}$.", True,
     "marked"),
    ("other", "(-\\infty, -2) \\cup (2, \\infty)", "We need x^2 > 4.\n\nThe solution set is $\\boxed{x > 2}$.", False,
     "marked"),
    ("other", "\\frac{\\sqrt{3}}{3}", "tan 30 degrees = 1/sqrt(3).\n\nTherefore, $\\boxed{\\frac{1}{\\sqrt{3}}}$.", True,
     "marked"),
    ("other", "\\frac{\\sqrt{3}}{3}", "tan 30 degrees... I recall it is sqrt(3).\n\nTherefore, $\\boxed{\\sqrt{3}}$.",
     False, "marked"),
    ("other", "y = 2x + 1", "The slope is 2 and the intercept 1.\n\nThe line is $\\boxed{2x - y + 1 = 0}$.", True,
     "marked"),
    ("other", "y = 2x + 1", "The slope is 2 and the intercept 1.\n\nThe line is $\\boxed{2x + y + 1 = 0}$.", False,
     "marked"),
    ("other", "\\pi r^2", "The area of a circle of radius r.\n\nFinal Answer: The final answer is $r^2\\pi$. I hope it is "
     "correct.", True, "marked"),
    ("other", "\\pi r^2", "The area of a circle of radius r.\n\nFinal Answer: The final answer is $2\\pi r$. I hope it is "
     "correct.", False, "marked"),
    ("other", "36", "The answer is 36.\n\n\\boxed{36}<|endoftext|>Human: What is 6 squared? Assistant: 36", True, "marked"),
    ("other", "1.2\\times10^{-4}", "Dividing, 0.00012 = 1.2 x 10^-4.\n\n**Final Answer**\n\\[\n\\boxed{1.2 \\times "
     "10^{-4}\\text{ m}}\n\\]", True, "marked"),
    ("other", "1.2\\times10^{-4}", "Dividing, 0.00012.\n\n**Final Answer**\n\\[\n\\boxed{1.2 \\times 10^{4}}\n\\]", False,
     "marked"),
    ("other", "\\sqrt[4]{8}", "Raise both sides to the fourth power.\n\nSo the answer is $\\boxed{2^{3/4}}$.", True,
     "marked"),
    ("other", "\\sqrt[4]{8}", "Raise both sides to the fourth power.\n\nSo the answer is $\\boxed{2^{4/3}}$.", False,
     "marked"),
]


def main(path: str) -> None:
    for family in (family_words, family_matrix, family_cheap, family_box, family_other):
        family()
    for family, gold, completion, label, policy in HAND:
        add(family, "hand_written", gold, completion, label, policy)
    labels: dict[tuple, bool] = {}
    for c in CASES:
        key = (c["gold"], c["completion"], c["answer_policy"])
        assert labels.setdefault(key, c["label"]) == c["label"], f"one case, two labels: {key}"
    unique = list({(c["gold"], c["completion"], c["answer_policy"]): c for c in CASES}.values())
    with open(path, "w") as f:
        f.writelines(json.dumps(case) + "\n" for case in unique)
    print(f"{len(unique)} cases ({sum(not c['label'] for c in unique)} wrong answers) -> {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/data/math_fresh.jsonl")
