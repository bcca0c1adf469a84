"""Second red team on 11b8223 and 93a7a62: plain-text mixed numbers (``3 1/2``), unicode vulgar fractions (``½``)
and the fraction slash (``⁄``) in `screening.canonical`, and the whitespace runs it now collapses first.

Written by a helper who wrote none of it; no case repeats tests/test_math_red_team_mixed.py. Each verdict is
decided by mathematics, with a comment where it is debatable. A case that fails against the code as committed is
a strict xfail saying why; "regression" marks one that passed before 11b8223.
"""

import time

import pytest

from trl_r1.verifiers.math import verify
from trl_r1.verifiers.math.screening import canonical


def ANSWER(text):
    return f"<think>...</think><answer>{text}</answer>"


def xfail(*case, reason):
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason))


PMATRIX_22 = "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}"

# (gold, answer in an answer block, policy, expected verdict)
WHITESPACE = [  # answers whose layout is whitespace: newlines, tabs, unicode spaces
    (PMATRIX_22, "\\begin{pmatrix}\n1 & 2 \\\\\n3 & 4\n\\end{pmatrix}", "bare", True),
    (PMATRIX_22, "\\begin{pmatrix}\t1 & 2\t\\\\\t3 & 4\t\\end{pmatrix}", "bare", True),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\left[\\begin{array}{c}\n1 \\\\\n2\n\\end{array}\\right]", "bare", True),
    ("\\begin{pmatrix} 1.5 & 0 \\\\ 0 & 2.5 \\end{pmatrix}",
     "\\begin{pmatrix}\n1 1/2 & 0 \\\\\n0 & 2 1/2\n\\end{pmatrix}", "bare", True),
    ("\\begin{pmatrix} 1.5 & 0 \\end{pmatrix}", "\\begin{pmatrix} 1 1/2 & 0 \\end{pmatrix}", "bare", True),
    ("5, 6", "5\n6", "bare", True),  # two lines, two numbers
    ("5, 6", "5\t6", "bare", True),
    ("56", "5\n6", "bare", False),  # ... never the concatenation
    ("1234567", "1\u202f234\u202f567", "bare", True),  # narrow no-break space as thousands separator (SI)
    ("1234567", "1\u2009234\u2009567", "bare", True),  # thin space
    ("1000", "1\\\n000", "bare", True),  # backslash-newline is TeX's control space, as "1\ 000"
    ("x=1, y=2", "x = 1,\ny = 2", "bare", True),  # a multi-line answer
    ("2\\pi r", "2\\pi\nr", "bare", True),  # a newline still separates a command from a variable
    ("2\\pi r", "2\\pi\tr", "bare", True),
    ("3.5", "3\\\n1/2", "bare", True),
    ("3.5", "3\u30001/2", "bare", True),  # ideographic space
    ("3.5", "3\u20071/2", "bare", True),  # figure space
    ("15.5", "3\u200b1/2", "bare", False),  # a zero-width space is no space, and 31/2 is no reading of it either
    ("[1.5, 3]", "[1 1/2,\n3]", "bare", True),
    ("1.5, 2.5", "1 1/2 \\text{\tand\n} 2 1/2", "bare", True),
    ("1.5, 2.5", "1 1/2,\n2 1/2", "bare", True),
]

MIXED = [  # honest plain-text mixed numbers in context
    ("[1.5, \\infty)", "x \\geqslant 1 1/2", "bare", True),
    ("3.5", "x \\approx 3 1/2", "marked", True),
    ("3.5", "x = 3 1/2", "marked", True),
    ("-1.5", "y = -1 1/2", "marked", True),
    ("-1.5", "-1 1/2", "marked", True),
    ("2.25", "+2 1/4", "bare", True),
    ("3.5", "3 1/2\\,\\mathrm{cm}", "bare", True),
    ("(-1.5,-2.5)", "(-1 1/2,-2 1/2)", "bare", True),
    ("(2, -1.5)", "(2, -1 1/2)", "bare", True),
    ("\\pm 1.5", "\\pm 1 1/2", "bare", True),
    ("(1.5, 3]", "(1 1/2, 3]", "bare", True),
    ("[-2.5, 0)", "[-2 1/2, 0)", "bare", True),
    ("1.5, 2.5", "1 1/2 \\text{ and } 2 1/2", "bare", True),
    ("3.5", "3 2/4", "marked", True),  # unreduced, as 2/4 for 1/2 is accepted under "marked"
    ("\\{1.5, 15.5\\}", "\\lbrace 1 1/2, 3 1/2 \\rbrace", "bare", False),
    ("1.75", "3 1/2 1/2", "marked", False),  # at best the product (3 1/2)(1/2): a calculation, not a result
]

VULGAR = [  # unicode vulgar fractions and the fraction slash
    ("0.5", "½", "marked", True),
    ("-0.75", "-¾", "marked", True),
    ("-0.5", "\u2212½", "bare", True),  # unicode minus
    ("\\frac{3}{4}x", "¾x", "bare", True),
    ("\\frac{1}{2}\\pi", "½π", "bare", True),
    ("1.5", "1½", "marked", True),
    ("\\frac{7}{3}", "2⅓", "marked", True),
    ("-2.5", "-2½", "bare", True),
    ("-1.5", "-2½", "bare", False),  # the sign covers the whole mixed number
    ("3.5", "3 ½", "marked", True),
    ("\\frac{7}{8}", "⅞", "marked", True),
    ("\\frac{1}{9}", "⅑", "bare", True),
    ("0.1", "⅒", "bare", True),
    ("0.25", "½^2", "bare", True),  # LaTeX \frac12^2 is (1/2)^2
    ("(1.5,2)", "(1½,2)", "bare", True),
    ("\\{0.5, 0.25\\}", "\\{½, ¼\\}", "bare", True),
    ("\\frac{7}{8}", "7⁄8", "marked", True),
    ("0.0625", "1⁄16", "marked", True),
    ("2.5", "2 1⁄2", "marked", True),
    ("2.75", "2 3⁄4", "marked", True),
    ("x/2", "x⁄2", "bare", True),
    ("\\frac{1}{6}", "1⁄2⁄3", "bare", True),  # plain-text division is left-associative: (1/2)/3
    ("\\frac{3}{2}", "1⁄2⁄3", "bare", False),  # ... not 1/(2/3)
    ("5", "10½", "bare", False),  # ten and a half, not 10 * 1/2
    ("1", "½½", "bare", False),  # no reading of this gives 1
    ("2.75", "2¾3", "bare", False),  # a digit after a mixed number: no number
    ("0.01", "⅒0", "bare", False),
    ("3.5", "½ 3", "bare", False),  # a fraction before a whole number is no mixed number
    # reward hacks: a calculation written with vulgar fractions is no result
    ("3.5", "3+½", "marked", False),
    ("3.5", "½+3", "marked", False),
    ("5", "10 × ½", "marked", False),
    ("4.5", "2¾3", "marked", False),
    ("1.5", "½ 3", "marked", False),
    ("0.25", "½½", "marked", False),  # at best the product ½·½
]

FOUND = [  # what this red team found wrong: fixed since ("# fixed:" says what was wrong), or a strict xfail
    ("x", "2½x", "bare", False),  # fixed: regression: 2\frac{1}{2}x is parsed as the product 2*(1/2)*x = x (the plain 2 1/2 x is guarded, ½ is not)
    ("\\frac{1}{2}\\pi", "1½π", "bare", False),  # fixed: regression: 1\frac{1}{2}\pi is parsed as the product 1*(1/2)*pi, so one and a half pi equals pi/2
    # debatable: juxtaposed numerals are never a product in plain text, so these are no numbers at all
    ("4.5", "2¾3", "bare", False),  # fixed: regression: 2\frac{3}{4}3 is parsed as the product 2*(3/4)*3
    ("0", "⅒0", "bare", False),  # fixed: regression: \frac{1}{10}0 is parsed as the product (1/10)*0
    ("1.5", "½ 3", "bare", False),  # fixed: regression: \frac{1}{2}3 (space dropped) is parsed as the product (1/2)*3
    # a mixed number before a command outside the allowed list is not rewritten, and dropping its space makes 11/2
    ("(-\\infty, 1.5) \\cup (2, \\infty)", "x < 1 1/2 or x > 2", "bare", True),  # fixed: 'or' becomes \lor before the mixed-number rule, which skips a number before \lor: x<11/2
    ("(-\\infty, 5.5) \\cup (2, \\infty)", "x < 1 1/2 or x > 2", "bare", False),  # fixed: 'or' becomes \lor before the mixed-number rule, which skips a number before \lor: x<11/2
    ("(1.5, 3)", "x > 1 1/2 and x < 3", "bare", True),  # fixed: 'and' becomes \land before the mixed-number rule, which skips a number before \land: x>11/2
    ("(-\\infty, 1.5]", "1 1/2 \\geqslant x", "bare", True),  # fixed: \geqslant is not in the rule's operator list: 11/2\geqslant x
    ("15.5", "3 1/2 \\approx 3.5", "bare", False),  # fixed: \approx is not in the rule's operator list: 31/2 (15.5) is accepted
    xfail("\\{1.5, 2.5\\}", "\\lbrace 1 1/2, 2 1/2 \\rbrace", "bare", True,
          reason="\\lbrace ... \\rbrace is not read as a set (\\lbrace 1.5, 2.5 \\rbrace fails too)"),
    # a whole part glued to a command or to a lone number
    ("\\pm 1.5", "\\pm1 1/2", "bare", True),  # fixed: the lookbehind reads \pm's m as a word character: \pm11/2
    ("\\pm 5.5", "\\pm1 1/2", "bare", False),  # fixed: the lookbehind reads \pm's m as a word character: \pm11/2
    ("65.5", "1 3 1/2", "bare", False),  # fixed: '1 3 1/2' is left as written and dropping its spaces makes 131/2
    ("3.5", "2 1/2/3", "bare", False),  # fixed: a fraction followed by / is skipped and dropping the space makes 21/2/3
    # honest answers rejected
    ("\\frac{5}{2}x", "2½x", "bare", True),  # fixed: 2\frac{1}{2}x is parsed as a product
    ("\\frac{3}{2}\\pi", "1½π", "bare", True),  # fixed: 1\frac{1}{2}\pi is parsed as a product
    ("\\frac{3}{2}\\text{ cups}", "1½ cups", "bare", True),  # fixed: the unit is stripped only after a digit, } or ): 1\frac{1}{2}cups keeps it
    ("1.5", "1 ½ cups", "marked", True),  # fixed: the unit is not stripped after a vulgar fraction
    xfail("10.5\\%", "10½%", "bare", True, reason="10\\frac{1}{2}% does not parse"),
    xfail("\\sqrt{x}", "x^½", "bare", True, reason="x^\\frac{1}{2} (valid TeX) does not parse"),
    xfail("0.5", "¹⁄₂", "bare", True, reason="superscript/subscript digits around the fraction slash are not read"),
    ("2.25", "+2 1/4", "marked", True),  # fixed: +2\frac{1}{4} counts as a calculation, though +2.25 is a result
]


@pytest.mark.parametrize("gold, answer, policy, expected", WHITESPACE + MIXED + VULGAR + FOUND)
def test_mixed_number_and_vulgar_fraction(gold, answer, policy, expected):
    assert verify(gold, ANSWER(answer), answer_policy=policy) is expected


@pytest.mark.parametrize(
    "gold, completion, policy, expected",
    [
        ("3.5", "<think>...</think> So the answer is $\\boxed{3 1/2}$.", "marked", True),
        ("2.5", "<think>...</think>\n#### 2 1/2", "marked", True),  # GSM8K style
        ("0.5", "<think>...</think> The answer is $\\boxed{½}$.", "marked", True),
        ("0.75", "<think>...</think>\n#### ¾", "marked", True),
        ("#### 2 1/2", ANSWER("2½"), "marked", True),
        ("\\boxed{1½}", ANSWER("1 1/2"), "bare", True),
    ],
)
def test_completions(gold, completion, policy, expected):
    assert verify(gold, completion, answer_policy=policy) is expected


@pytest.mark.parametrize(
    "text",
    [
        "½" * 20_000,
        "1½" * 10_000,
        "1⁄" * 10_000,
        "⁄" * 20_000,
        "½ 1/2 ⁄ 3, " * 1_800,
        "1,000 " * 3_400 + "1/2",
        "1 1/2\\pi " * 2_200,
        "1 1/" + "2" * 20_000 + " x",
        "1" * 20_000 + "⁄" + "2" * 100,
        "1 1/2" + " " * 20_000 + "\\alpha",
        "\u00a0" * 20_000 + "1 1/2",
        "1 1/2 or x < " * 1_500,
        # _mixed_number re-searches the whole text before each match: quadratic in the number of mixed numbers
        "1 1/2 " * 8_000,  # fixed: regression: _mixed_number searches the whole prefix per match (quadratic)
    ],
    ids=lambda text: f"{text[:12]!r}..<{len(text)} chars>",
)
def test_canonical_stays_fast(text):
    start = time.perf_counter()
    canonical(text)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    "answer",
    [
        "1 1⁄2 " * 3_000,  # too long: refused before any rule runs
        "½⁄" * 9_000,
        "1" + " " * 24_000 + "1",  # fixed: extraction.final_answer scanned a long run of spaces from every space
    ],
    ids=lambda text: f"{text[:8]!r}..<{len(text)} chars>",
)
def test_verify_stays_fast(answer):
    start = time.perf_counter()
    assert verify("3.5", ANSWER(answer), answer_policy="bare") is False
    assert time.perf_counter() - start < 1.0
