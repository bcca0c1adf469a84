"""Red team: the plain-text mixed-number rule of `screening.canonical` (``3 1/2`` is 3.5, commit 11b8223).

Written by a helper who did not write the rule. Each verdict is decided by mathematics; where a case is
debatable the comment says why. A case that fails against the code as committed is a strict xfail with its
reason; "fixed:" marks a case the red team found wrong, with what was wrong (the integrator's fix followed).
"""

import time

import pytest

from trl_r1.verifiers.math import verify
from trl_r1.verifiers.math.screening import canonical


def ANSWER(text):
    return f"<think>...</think><answer>{text}</answer>"


def xfail(*case, reason, raises=None):
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason, raises=raises))


# (gold, answer in an answer block, policy, expected verdict)
HONEST = [
    ("3.5", "3 1/2", "bare", True),
    ("3.5", "3 1/2", "marked", True),  # a mixed number is a result, not the calculation 3 + 1/2
    ("7/2", "3 1/2", "marked", True),  # exact gold: the stricter unevaluated-arithmetic test
    ("\\frac{7}{2}", "3 1/2", "marked", True),
    ("10.75", "10 3/4", "marked", True),
    ("100\\frac13", "100 1/3", "marked", True),
    ("9 3/4", "9.75", "marked", True),  # the mixed number on the gold side
    ("2 1/3", "7/3", "bare", True),
    ("3 1/2", "3.5", "bare", True),
    ("3.5", "3  1/2", "bare", True),  # spacing variants
    ("3.5", "3 1 / 2", "bare", True),
    ("3.5", "3\t1/2", "bare", True),
    ("3.5", "3\u00a01/2", "bare", True),  # no-break space
    ("3.5", "3\\ 1/2", "bare", True),
    ("3.5", "3~1/2", "bare", True),
    ("3.5", "3\\,1/2", "bare", True),
    ("3.5", "3 \\frac{1}{2}", "bare", True),  # LaTeX mixtures
    ("3.5", "3 \\tfrac12", "marked", True),
    ("-3.5", "\u22123 1/2", "bare", True),  # unicode minus: the sign covers the whole mixed number
    ("(-3.5, 2)", "(-3 1/2, 2)", "bare", True),
    ("[1.5, 2.5]", "[1 1/2, 2 1/2]", "bare", True),  # interval
    ("(1.5, \\infty)", "(1 1/2, \\infty)", "bare", True),
    ("\\{1.5, 2.5\\}", "\\{1 1/2, 2 1/2\\}", "bare", True),  # set
    ("(3.5, 4)", "\\left(3 1/2, 4\\right)", "bare", True),
    ("3.5", "3 1/2 cm", "bare", True),  # units
    ("3.5", "3 1/2 cm", "marked", True),
    ("3.5 cm", "3 1/2 \\text{ cm}", "bare", True),
    ("3.5", "3 1/2 \\text{ cups}", "bare", True),
    ("3.5", "3 1/2 inches", "bare", True),
    ("3.5", "3 1/2\\,\\text{m}", "bare", True),
    ("3.5", "\\$3 1/2", "bare", True),  # dollars
    ("3.5", "$3 1/2$", "bare", True),  # math delimiters
    ("12.5", "12 1/2 hours", "bare", True),  # a time
    ("3.5", "x = 3 1/2", "bare", True),
    ("2.5", "\\sqrt{6 1/4}", "bare", True),  # a mixed number inside a group
    ("1.75", "\\frac{3 1/2}{2}", "bare", True),
    ("6.25", "(2 1/2)^2", "bare", True),
    ("7", "3 1/2 \\cdot 2", "bare", True),
    ("7", "2 \\cdot 3 1/2", "bare", True),
    ("3", "1 2/3 + 1 1/3", "bare", True),  # a calculation on mixed numbers is still graded under "bare"
    ("3.5", "3 1/2.", "bare", True),  # a closing full stop
    ("1000.5", "1 000 1/2", "bare", True),  # thousands spaces before a mixed number
    ("1234.5", "1 234 1/2", "bare", True),
    ("1234567", "1 234 567", "bare", True),  # thousands spaces alone
    ("246.8", "1 234/5", "bare", True),  # an improper fraction after a digit group: 1234/5
    ("3, \\frac12", "3 and 1/2", "bare", True),  # against a list gold, "and" joins a list
    ("0.5", "0 1/2", "bare", True),  # debatable form, but as a mixed number zero and a half
    ("x/2", "x 1/2", "bare", True),  # a variable is no whole part
    ("9 3/4", "9\\frac34", "bare", True),
    ("12 1/2", "25/2", "marked", True),
]

WRONG = [
    ("15.5", "3 1/2", "marked", False),  # the hack 11b8223 closed: 3 1/2 is not 31/2
    ("15.5", "3 1/2", "bare", False),
    ("\\frac{31}{2}", "3 1/2", "bare", False),
    ("1.5", "3 1/2", "bare", False),  # nor the product 3 * 1/2
    ("3 1/2", "31/2", "bare", False),  # the gold side is read the same way
    ("-2.5", "-3 1/2", "bare", False),  # -3 1/2 is -(3 + 1/2), not -3 + 1/2
    ("0", "0 1/2", "bare", False),
    ("16", "15 1/1", "bare", False),  # a whole fraction never completes a mixed number
    ("3.5", "3 + 1/2", "marked", False),  # the calculation stays a calculation
    ("3.5", "3 1/2 + 0", "marked", False),
    ("7", "2 \\cdot 3 1/2", "marked", False),
    ("3", "1 2/3 + 1 1/3", "marked", False),
    ("3.5", "2 3/2", "bare", False),  # an improper "mixed number" is not read as 2 + 3/2 (debatable, rejecting is safe)
    ("\\frac{21}{2}x", "2 1/2 x", "bare", False),
    ("\\frac{31}{2}\\pi", "3 1/2 \\pi", "bare", False),
]

FOUND = [  # what the red team found wrong: fixed since, or a strict xfail with its reason
    # a leading zero makes a digit group, never a numerator: 1 001/3 is 1001/3 (before 11b8223 it was)
    ("4/3", "1 001/3", "bare", False),  # fixed: a zero-led digit group is read as the numerator of 1 1/3
    ("1001/3", "1 001/3", "bare", True),  # fixed: a zero-led digit group is read as the numerator of 1 1/3
    ("2010/11", "2 010/11", "bare", True),  # fixed: a zero-led digit group is read as the numerator of 2 10/11
    # 3 1/2 x is three and a half x, as 3 1/2 is three and a half; the LaTeX parser reads 3\frac{1}{2}x as a product
    ("x", "2 1/2 x", "bare", False),  # fixed: 2\\frac{1}{2}x is parsed as the product 2*(1/2)*x
    ("\\frac{3}{2}\\pi", "3 1/2 \\pi", "bare", False),  # fixed: 3\\frac{1}{2}\\pi is parsed as 3*(1/2)*pi
    ("\\frac{5}{2}x", "2 1/2 x", "bare", True),  # fixed: 3\frac{1}{2} is a mixed number only when it stands alone
    ("\\frac{7}{2}\\pi", "3 1/2 \\pi", "bare", True),  # fixed: 3\frac{1}{2} is a mixed number only when it stands alone
    # only a 3-digit group is a thousands group: 3 5/2 is no way of writing 35/2
    ("17.5", "3 5/2", "bare", False),  # fixed: an improper fraction after a number drops the space (35/2), though 5 is no digit group
    ("11.5", "2 3/2", "bare", False),  # fixed: an improper fraction after a number drops the space (23/2), though 3 is no digit group
    ("11.5", "2 3/2", "marked", False),  # fixed: an improper fraction after a number drops the space (23/2): a reward hack
    # a tuple written without spaces after its commas
    ("(3.5,4)", "(3 1/2,4)", "bare", True),  # fixed: the rule skips a mixed number followed by ',<digit>'
    ("(15.5,4)", "(3 1/2,4)", "bare", False),  # fixed: the rule skips a mixed number followed by ',<digit>': 31/2
    ("(4,3.5)", "(4,3 1/2)", "bare", True),  # fixed: the rule skips a mixed number after '<digit>,'
    ("(4,15.5)", "(4,3 1/2)", "bare", False),  # fixed: the rule skips a mixed number after '<digit>,': 31/2
    ("1000.5", "1,000 1/2", "bare", True),  # fixed: a mixed number after a comma-grouped whole part is not read
    # "1 3" alone is two numbers; before a mixed number they are glued into its whole part (before 11b8223: 131/2)
    ("13.5", "1 3 1/2", "bare", False),  # fixed: a lone digit before a mixed number is glued to its whole part (13 1/2)
    # no reading of these gives the concatenation that dropping the space makes
    ("5.25", "2 1/2^2", "bare", False),  # fixed: a fraction with an exponent drops the space: 21/2^2 = 5.25
    ("0.255", "0.5 1/2", "bare", False),  # fixed: a fraction after a decimal drops the space: 0.51/2
    # honest spellings not read
    ("3.5", "3\u00bd", "bare", True),  # fixed: the vulgar fraction \u00bd is not read
    ("3.5", "3 \u00bd", "bare", True),  # fixed: the vulgar fraction \u00bd is not read
    ("3.5", "3 1\u20442", "bare", True),  # fixed: the unicode fraction slash is not read
    # debatable: "3 and 1/2" is a list elsewhere, but against a one-number gold only "three and a half" fits
    xfail("3.5", "3 and 1/2", "bare", True, reason="'and' is read as a list separator (3, 1/2)"),
    xfail("3.5", "\\text{3 1/2}", "bare", True, reason="\\text{3\\frac{1}{2}} does not parse"),
    xfail("12.5\\%", "12 1/2\\%", "bare", True, reason="12\\frac{1}{2}% does not parse (also in LaTeX)"),
]


@pytest.mark.parametrize("gold, answer, policy, expected", HONEST + WRONG + FOUND)
def test_mixed_number(gold, answer, policy, expected):
    assert verify(gold, ANSWER(answer), answer_policy=policy) is expected


@pytest.mark.parametrize(
    "gold, completion, policy, expected",
    [
        ("3.5", "<think>...</think> So the answer is $\\boxed{3 1/2}$.", "marked", True),
        ("3.5", "<think>...</think> The answer is 3 1/2.", "marked", True),
        ("15.5", "<think>...</think> The answer is 3 1/2.", "marked", False),
        ("3.5", "The answer is $3 1/2$.", "bare", True),
        ("3.5", "3 1/2", "bare", True),  # a bare completion is graded ...
        ("3.5", "3 1/2", "marked", False),  # ... but is no marked answer
        ("\\boxed{3 1/2}", ANSWER("3.5"), "marked", True),
        ("#### 3 1/2", ANSWER("3.5"), "marked", True),
        # a giant numerator or denominator: an int() past Python's 4300-digit limit once crashed verify
        ("3.5", ANSWER("1 " + "1" * 4301 + "/2"), "bare", False),
        ("\\boxed{1 1/" + "9" * 4301 + "}", ANSWER("3.5"), "bare", False),
    ],
    ids=lambda value: value if not isinstance(value, str) or len(value) < 80 else f"<{len(value)} chars>",
)
def test_mixed_number_completions(gold, completion, policy, expected):
    assert verify(gold, completion, answer_policy=policy) is expected


@pytest.mark.parametrize(
    "text",
    [
        "1 " * 10_000,  # digits and spaces: each a candidate whole part
        "1 1/" * 5_000,  # fractions without denominators
        "1 2/3 " * 3_400,  # thousands of rewrites
        "1" * 10_000 + " " + "1" * 10_000,  # two long digit runs
        "1 " + "2" * 20_000 + "x",  # a long numerator that fails at its end
        "9 99/" * 4_000,
        "(1 1/2," * 2_800,
        "1 234 " * 3_400,
        # a long run of spaces: _LIST_WORD's ",?\s*(?:and|or)" once retried from every space
        "1" + " " * 14_000 + "1",
    ],
    ids=lambda text: f"{text[:12]!r}..<{len(text)} chars>",
)
def test_canonical_stays_fast(text):
    start = time.perf_counter()
    canonical(text)
    assert time.perf_counter() - start < 1.0
