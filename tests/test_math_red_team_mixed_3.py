"""Third red team on the mixed-number rule (11b8223, 93a7a62, 486f4bf): the bounded window that `_mixed_number`
reads around ``3 1/2`` (the parenthesization before a variable, ``/`` or ``^``, the list split, the neighbours
that open or end a term), unicode vulgar fractions next to digits and letters, and ``\\pm``.

Written by a helper who wrote none of it; no case repeats tests/test_math_red_team_mixed.py or
tests/test_math_red_team_mixed_2.py. Each verdict is decided by mathematics, with a comment where it is
debatable. A case that fails against the code as committed is a strict xfail saying why; "regression" marks one
that passed before 11b8223.
"""

import time

import pytest

from trl_r1.verifiers.math import verify
from trl_r1.verifiers.math.screening import canonical


def ANSWER(text):
    return f"<think>...</think><answer>{text}</answer>"


def xfail(*case, reason):
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason))


THIN_SPACES = "\\," * 13  # thirteen thin spaces: one more than the 12 characters _mixed_number reads after a match

# (gold, answer in an answer block, policy, expected verdict)
HACKS = [  # under "marked" a calculation built around a mixed number restates the question, however it is bracketed
    ("5", "(2 1/2)2", "marked", False),
    ("5", "2 1/2 2", "marked", False),  # parenthesized into the product (2 1/2)2: still a product
    ("7", "3 1/2 \\times 2", "marked", False),
    ("7", "3 1/2 * 2", "marked", False),
    ("7", "2(3 1/2)", "marked", False),
    ("7", "(3 1/2)(2)", "marked", False),
    ("7", "3 1/2 (2)", "marked", False),
    ("7", "3 1/2 \\, 2", "marked", False),
    ("7", "2 \\cdot 3½", "marked", False),
    ("\\frac{7}{4}", "3 1/2 \\div 2", "marked", False),
    ("\\frac{7}{4}", "3 1/2 : 2", "marked", False),
    ("\\frac{7}{4}", "3½/2", "marked", False),
    ("\\frac{7}{4}", "\\frac{3 1/2}{2}", "marked", False),
    ("\\frac{5}{6}", "(2 1/2)/3", "marked", False),
    ("12.25", "3 1/2^2", "marked", False),
    ("\\frac{49}{4}", "3½^2", "marked", False),
    ("\\frac{5}{2}", "2 1/2^1", "marked", False),
    ("\\frac{5}{2}", "2 1/2 \\cdot 1", "marked", False),
    ("\\frac{5}{2}", "2 1/2 + 0", "marked", False),
    ("6", "2 1/2 + 3 1/2", "marked", False),
    ("1", "3 1/2 - 2 1/2", "marked", False),
    ("5", "+2 1/2 +2 1/2", "marked", False),  # the leading + that now makes +2 1/4 a result does not cover a sum
    ("\\frac{5}{2}", "--2 1/2", "marked", False),
    ("\\frac{5}{2}", "-(-2 1/2)", "marked", False),
    ("\\frac{7}{2}", "\\sqrt{12 1/4}", "marked", False),
    ("\\frac{7}{2}", "\\frac{7 1/2}{2 1/7}", "marked", False),
    ("\\frac{7}{4}", "3 1/2" + THIN_SPACES + "/2", "marked", False),
    ("3.5", "\\pm 3 1/2", "marked", False),  # two values for one
    ("\\frac{5}{2}", "1 3/2", "marked", False),  # improper: two numbers, not 5/2
    ("5", "2½ 2", "marked", False),
    ("5", "2½2", "marked", False),
    ("2", "1 1/2 1/2", "marked", False),
    ("\\frac{3}{4}", "1 1/2 1/2", "marked", False),
]

RESULTS = [  # honest mixed numbers: a result under "marked"
    ("\\frac{7}{2}", "(3 1/2)", "marked", True),
    ("\\frac{7}{2}", "((3 1/2))", "marked", True),
    ("\\frac{7}{2}", "\\{3 1/2\\}", "marked", True),
    ("3.5", "\\left(3 1/2\\right)", "marked", True),
    ("-3.5", "-(3 1/2)", "marked", True),
    ("\\frac{13}{4}", "3 ¼", "marked", True),
    ("\\frac{3x}{2}", "1½x", "marked", True),
    ("3.5\\pi", "3 1/2 \\pi", "marked", True),
    ("\\pm 2.5", "\\pm2 1/2", "marked", True),
    ("\\frac{5}{2}", "2 10/20", "marked", True),  # unreduced fraction part, as 2 2/4
    ("2 1/2", "\\frac{5}{2}", "marked", True),  # a plain-text mixed number as the gold
    ("0.5", "0 1/2", "marked", True),  # debatable: a zero whole part, but 0 + 1/2 is the only reading
]

NEIGHBOURS = [  # honest mixed numbers next to every kind of neighbour ("bare": grading)
    ("\\begin{pmatrix}3.5\\end{pmatrix}", "\\begin{pmatrix}3 1/2\\end{pmatrix}", "bare", True),
    ("\\begin{bmatrix}3.5 & 1\\end{bmatrix}", "\\begin{bmatrix}3 1/2 & 1\\end{bmatrix}", "bare", True),
    ("\\begin{pmatrix}1 & 3.5\\end{pmatrix}", "\\begin{pmatrix}1 & 3 1/2\\end{pmatrix}", "bare", True),
    ("\\begin{pmatrix}3.5 \\\\ 1\\end{pmatrix}", "\\begin{pmatrix}3 1/2 \\\\ 1\\end{pmatrix}", "bare", True),
    ("\\begin{pmatrix}15.5 & 1\\end{pmatrix}", "\\begin{pmatrix*}3 1/2 & 1\\end{pmatrix*}", "bare", False),
    ("3.5^\\circ", "3 1/2^\\circ", "bare", True),
    ("3.5", "3 1/2\\;", "bare", True),
    ("3.5", "3 1/2 \\text{inches}", "bare", True),
    ("3.5", "3 1/2\\ \\text{m}", "bare", True),
    ("3.5", "3 1/2 \\mathrm{kg}", "bare", True),
    ("3.5", "\\text{\\$}3 1/2", "bare", True),
    ("3.5", "3 1/2 \\quad", "bare", True),
    ("(1.5, 2.5)", "\\left( 1 1/2 , 2 1/2 \\right)", "bare", True),
    ("[1.5, 2.5]", "\\left[1 1/2, 2 1/2\\right]", "bare", True),
    ("|x| = 3.5", "|x| = 3 1/2", "bare", True),
    ("3.5", "|3 1/2|", "bare", True),
    ("\\{3.5\\}", "\\{3 1/2\\}", "bare", True),
    ("(3.5, 1)", "\\langle 3 1/2, 1\\rangle", "bare", True),
    ("3.5, 4.5", "3 1/2; 4 1/2", "bare", True),
    ("1.5 < x < 2.5", "1 1/2 < x < 2 1/2", "bare", True),
    ("1.5 \\le x \\le 2.5", "1 1/2 \\leq x \\leq 2 1/2", "bare", True),
    ("1.5 \\le x \\le 2.5", "1 1/2 ≤ x ≤ 2 1/2", "bare", True),
    ("x > 1.5", "x \\gt 1 1/2", "bare", True),
    ("x \\ne 1.5", "x\\ne1 1/2", "bare", True),
    ("[1.5, 2]", "x\\in[1 1/2, 2]", "bare", True),
    ("(-\\infty,1.5)\\cup(2.5,\\infty)", "(-\\infty,1 1/2)\\cup(2 1/2,\\infty)", "bare", True),
    ("(-\\infty,-3.5]", "(-\\infty,-3 1/2]", "bare", True),
    ("-3.5 \\pm 2", "-3 1/2 \\pm 2", "bare", True),
    ("x = -1.5", "x = - 1 1/2", "bare", True),
    ("3.5", "x \\equiv 3 1/2", "bare", True),
    ("\\sqrt{3.5}", "\\sqrt{3 1/2}", "bare", True),
    ("\\frac{2}{3.5}", "\\frac{2}{3 1/2}", "bare", True),
    ("x^{3.5}", "x^{3 1/2}", "bare", True),
    ("4\\sqrt{2}", "2^{2 1/2}", "bare", True),
    ("2", "2^{2 1/2}", "bare", False),
    ("3", "\\lfloor 3 1/2 \\rfloor", "bare", True),
    ("3.5\\sqrt{2}", "3 1/2 \\sqrt{2}", "bare", True),
    ("3.5(x+1)", "3 1/2(x+1)", "bare", True),
    ("3.5x^2", "3 1/2 x^2", "bare", True),
    ("2 + 3.5i", "2 + 3 1/2 i", "bare", True),
    ("x = 1.5 \\text{ or } x = 2.5", "x = 1 1/2 \\text{ or } x = 2 1/2", "bare", True),
    ("1.5 \\text{ or } 2.5", "1 1/2 \\text{ or } 2 1/2", "bare", True),
    ("2.5", "2~1/2", "bare", True),
    ("2.5", "2\\;1/2", "bare", True),
    ("1.5", "1 1/2.", "bare", True),  # a sentence's full stop
    ("x=3.5", "x=3 1/2" + THIN_SPACES, "bare", True),
]

UNCHANGED = [  # no mixed number: the rule must not change these
    ("\\text{3 1/2 cups}", "\\text{3 1/2 cups}", "bare", True),
    ("\\text{March 3 1/2}", "\\text{March 3 1/2}", "bare", True),
    ("3:1/2", "3:1/2", "bare", True),
    ("12 345/7", "12345/7", "bare", True),
    ("1 2/3", "\\frac{5}{3}", "bare", True),
    ("3", "x2 1/2", "bare", False),
    ("\\frac{35}{2}", "3½5", "bare", False),  # a digit after ½ starts a new number, never 3½·5
    ("15.5", "\\mathrm{x}=3 1/2", "bare", False),
]

FOUND = [  # what this red team found wrong: fixed since ("# fixed:" says what was wrong), or a strict xfail
    # the 12-character window after the match: spacing commands become spaces after the whitespace collapse, so a
    # run of them fills the window, the rule sees only spaces (read as the end) and leaves 3\frac{1}{2}x unbracketed
    ("\\frac{3}{2}x", "3 1/2" + THIN_SPACES + "x", "bare", False),  # fixed: regression: 3 1/2 then 13 \, then x is 3\frac{1}{2}x (the window past the spaces is never read), parsed as 1.5x
    ("\\frac{3}{2}\\pi", "3 1/2" + "\\;" * 12 + "\\pi", "bare", False),  # fixed: regression: 12 \; fill the 12-character window: 3\frac{1}{2}\pi, parsed as 1.5 pi
    ("\\frac{3}{2}\\pi", "3½" + THIN_SPACES + "π", "bare", False),  # fixed: regression: 3½ joins the mixed-number rule, whose window is filled by the spaces: 1.5 pi
    ("\\frac{3}{4}", "3 1/2" + THIN_SPACES + "^2", "bare", False),  # fixed: regression: 3\frac{1}{2}^2 unbracketed past the window, parsed as 3*(1/2)^2
    ("\\frac{3}{2}x", "1 1/2" + THIN_SPACES + "x", "marked", True),  # fixed: honest 1 1/2 x with wide spacing is read as 1\frac{1}{2}x = x/2 (window filled by spaces)
    ("\\frac{7}{2}x", "3 1/2" + THIN_SPACES + "x", "bare", True),  # fixed: honest 3 1/2 x with wide spacing is read as 1.5x (window filled by spaces)
    # ! ends a term in _ENDS_A_TERM, so 3 1/2! stays unbracketed: 3\frac{1}{2}! is 3*(1/2)!
    ("\\frac{3\\sqrt{\\pi}}{2}", "3 1/2!", "bare", False),  # fixed: regression: 3\frac{1}{2}! is parsed as 3*(1/2)! = 3*sqrt(pi)/2 (before: 31/2! = 15.5, rejected)
    # the unicode ± is not mapped to \pm, so the lookbehind sees no term opener and 1 1/2 is glued into 11/2
    ("\\pm 5.5", "±1 1/2", "marked", False),  # fixed: ±1 1/2 is left as written and read ±11/2 = ±5.5 (not a regression)
    ("\\pm 1.5", "±1 1/2", "bare", True),  # fixed: ±1 1/2 is read ±11/2 (± is not mapped to \pm; not a regression)
    # a bracket command glued to the number is no term opener: 1 1/2 is glued
    ("15", "\\lfloor3 1/2\\rfloor", "bare", False),  # fixed: \lfloor3 1/2 is left as written: floor(31/2) = 15 (not a regression)
    ("3", "\\lfloor3 1/2\\rfloor", "bare", True),  # fixed: \lfloor is not a term opener: floor(31/2) (not a regression)
    ("4", "\\lceil3 1/2\\rceil", "bare", True),  # fixed: \lceil is not a term opener: ceil(31/2) = 16 (not a regression)
    # (?!\.\d) skips the match, and dropping the spaces glues 1 1/2.0 into 11/2.0
    ("5.5", "1 1/2.0", "bare", False),  # fixed: 1 1/2.0 becomes 11/2.0 = 5.5 (not a regression)
    # left as written after a subscript (by design), but dropping the space then makes a two-digit subscript
    ("\\frac{x_{21}}{2}", "x_2 1/2", "bare", False),  # fixed: x_2 1/2 becomes x_21/2, read x_{21}/2 (not a regression)
    ("\\frac{x_2}{2}", "x_2 1/2", "bare", True),  # fixed: x_2 1/2 becomes x_21/2, read x_{21}/2 (not a regression)
    # honest neighbours the rule or a later step does not read
    xfail("3.5\\%", "3 1/2\\%", "bare", True, reason="(3\\frac{1}{2})% does not parse; % is not a term end (not a regression)"),
]


@pytest.mark.parametrize("gold, answer, policy, expected", HACKS + RESULTS + NEIGHBOURS + UNCHANGED + FOUND)
def test_mixed_number_in_context(gold, answer, policy, expected):
    assert verify(gold, ANSWER(answer), answer_policy=policy) is expected


@pytest.mark.parametrize(
    "text",
    [
        "\\begin{pmatrix}" * 1_300 + "1 1/2",
        "(" * 20_000 + "1 1/2",
        "1 1/2/" * 3_300,
        "½1" * 10_000,
        "1 " * 10_000 + "1/2",
        "x_1 1/2 " * 2_500,
        "±1 1/2 " * 2_800,
        "1 1/2.0 " * 2_500,
        "\\text{3 1/2}" * 1_600,
        "1 1/2 & " * 2_500,
        "1½⁄" * 7_000,
        "1 1/2" + "\\," * 10_000 + "x",  # fixed: \, become a long space run after the whitespace collapse, and _LIST_WORD is quadratic on it (4.7 s; 5.1 s before 11b8223, so not a regression)
    ],
    ids=lambda text: f"{text[:12]!r}..<{len(text)} chars>",
)
def test_canonical_stays_fast(text):
    start = time.perf_counter()
    canonical(text)
    assert time.perf_counter() - start < 1.0
