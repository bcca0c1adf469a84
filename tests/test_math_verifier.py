"""The math verifier's rules: answer extraction, hedges, gold styles, structure semantics, numbers, hard limits."""

import threading
import time

import pytest

from trl_r1.verifiers.math import check, check_batch, final_answer, gold_answer, verify, verify_batch
from trl_r1.verifiers.math.pool import WorkerPool
from trl_r1.verifiers.math.exact import exact_value
from trl_r1.verifiers.math.screening import canonical, pathology


def boxed(answer):
    return f"Working through it step by step, we find the result.\nTherefore the answer is $\\boxed{{{answer}}}$."


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("<think>try \\boxed{4}</think><answer>5</answer>", "5"),  # the answer block wins over boxes
        ("<think>x</think><answer>so \\boxed{4} then \\boxed{5}</answer>", "5"),  # last box inside the block
        ("first \\boxed{4}, after fixing the sum \\boxed{5}", "5"),  # last box
        ("<think>\\boxed{4}</think>\nThe answer is 5.", "5"),  # reasoning boxes are not the answer
        ("We add them up.\nFinal answer: $5$", "5"),
        ("So 2+3 = 5.\n#### 5", "5"),
        ("**Final Answer**\n\\boxed{5}", "5"),
        ("Final Answer: The largest $n$ is 5. I hope it is correct.", "5"),  # the value after the last "is"
        ("The answer is \\boxed{3} and \\boxed{5}.", "3, 5"),  # a multi-valued answer stays multi-valued
    ],
)
def test_final_answer_extraction_order(completion, expected):
    assert final_answer(completion).text == expected


@pytest.mark.parametrize(
    "completion, reason",
    [
        ("I computed 2 + 3 and got 5.", "no final answer"),
        ("<think>2+3=5</think>", "no final answer"),
        ("The answer is \\boxed{5} or \\boxed{6}.", "hedged"),
        ("The answer is either 5 or 6.", "hedged"),
        ("<answer>maybe 5</answer>", "hedged"),
        ("The answer is probably 5?", "hedged"),
        ("\\boxed{5 \\text{ or } 6}", "hedged"),
    ],
)
def test_no_committed_answer_is_wrong_with_a_reason(completion, reason):
    verdict = check("5", completion)
    assert verdict.equivalent is False and verdict.reason.startswith(reason)


def test_multi_valued_answers_against_a_single_gold_are_wrong():
    assert not verify("5", boxed("5, 6"))
    assert not verify("5", "The answer is \\boxed{5} and \\boxed{6}.")
    assert not verify("2", boxed("\\pm 2"))
    assert not verify("1728", boxed("1331 \\text{ and } 1728"))


def test_or_is_a_list_when_the_gold_lists_alternatives():
    assert verify("3 \\text{ or } 5", "The answer is 5 or 3.")
    assert not verify("3 \\text{ or } 5", "The answer is 5 or 7.")


@pytest.mark.parametrize(
    "gold, answer",
    [
        ("3\\sqrt{13}", "\\sqrt{117}"),  # bare LaTeX (MATH-500 style)
        ("\\boxed{3\\sqrt{13}}", "3\\sqrt{13}"),  # boxed gold
        ("We use the distance formula, so $d = \\boxed{3\\sqrt{13}}$.", "3 \\sqrt{13}"),  # a full solution
        ("She sold 48/2 = <<48/2=24>>24 clips.\n#### 72", "72"),  # GSM8K
        ("\\frac{\\pi}{4}", "\\dfrac{\\pi}{4}"),
        ("1,234", "1234"),  # thousands separators
        ("1234", "1,234"),
        ("32349", "32,\\! 349"),
        ("\\$32,\\!348", "32348"),
        ("12.5", "12.50"),  # decimals
        ("0.4", ".4"),
        ("3 \\times 10^{5}", "300000"),  # scientific notation
        ("1.5e-3", "0.0015"),
        ("5\\text{ cm}", "5"),  # units
        ("15\\mbox{ cm}^2", "15"),
        ("90^\\circ", "90"),
        ("\\text{(C)}", "C"),  # multiple choice
        ("B", "(B)"),
        ("\\text{Evelyn}", "Evelyn"),  # short text answers
        ("\\text{odd}", "\\text{Odd}"),
        ("204_5", "204_5"),  # a base-5 numeral is compared as written
        (7, "7"),  # a numeric dataset column
    ],
)
def test_gold_styles(gold, answer):
    assert verify(gold, boxed(answer)) is True


@pytest.mark.parametrize(
    "gold, answer",
    [
        ("3\\sqrt{13}", "3"),
        ("1,234", "1,243"),
        ("32349", "32, 349"),  # a comma and a space make a list
        ("12.5", "12.4"),
        ("5\\text{ cm}", "6 \\text{ cm}"),
        ("\\text{(C)}", "D"),
        ("B", "B \\text{ and } C"),
        ("\\text{Evelyn}", "\\text{Briana}"),
        ("204_5", "204_6"),
        ("12:00", "1:00"),
    ],
)
def test_gold_styles_reject_wrong_answers(gold, answer):
    assert verify(gold, boxed(answer)) is False


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("25\\%", "25", True),  # the number asked for in "what percent"
        ("25\\%", "0.25", True),  # the value of the percentage
        ("0.28", "28\\%", True),
        ("0.28", "28", False),
        ("10\\%", "0.1\\%", False),  # both percentages: compared as written
    ],
)
def test_percent(gold, answer, expected):
    assert verify(gold, boxed(answer)) is expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("(1,-2)", "(1, -2)", True),
        ("(1,-2)", "(-2,1)", False),  # tuples are ordered
        ("(1,-2)", "\\{1,-2\\}", False),  # a set is not a tuple
        ("\\{1,2\\}", "\\{2,1\\}", True),  # sets are not ordered
        ("\\{1,2\\}", "2, 1", True),  # a bare list matches a set in any order...
        ("(1,\\frac{9}{2})", "1, 4.5", True),  # ...and a tuple in order
        ("(1,\\frac{9}{2})", "4.5, 1", False),
        ("[0,\\infty)", "[0, \\infty)", True),
        ("[0,\\infty)", "(0,\\infty)", False),  # openness matters
        ("[0,\\infty)", "x \\geq 0", True),  # an inequality is the set it describes
        ("(-\\infty,1)\\cup(2,\\infty)", "(2,\\infty)\\cup(-\\infty,1)", True),
        ("(-\\infty,1)\\cup(2,\\infty)", "(-\\infty,1]\\cup(2,\\infty)", False),
        ("(2,3)", "x=2, y=3", True),  # an open interval's text is also a pair
        ("(1,3)", "{1,3}", True),  # a TeX group is not a set
        ("(3,1)", "{1,3}", False),
        ("\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}", "\\begin{bmatrix}0&3\\\\0&-1\\end{bmatrix}", True),
        ("\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}", "\\begin{pmatrix}3&0\\\\-1&0\\end{pmatrix}", False),
        ("-2,1", "1 \\text{ and } -2", True),
        ("\\pm 2021", "\\{-2021, 2021\\}", True),
    ],
)
def test_tuples_sets_intervals_matrices(gold, answer, expected):
    assert verify(gold, boxed(answer)) is expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("y=2x+3", "y = 3 + 2x", True),
        ("y=2x+3", "2x - y + 3 = 0", True),  # the same line, rearranged and scaled
        ("y=2x+3", "2x+3", True),  # the right-hand side of an assignment
        ("y=2x+3", "y=2x-3", False),
        ("3x-y+13=0", "6x - 2y + 26 = 0", True),
        ("3x-y+13=0", "3x+4y+14=0", False),  # math-verify#60 judges this True
        ("5", "x = 2 + 3 = 5", True),  # the last part of a chain
        ("k=1", "k=2", False),
        ("x \\in [1,2)", "[1,2)", True),
        ("x < 1", "-x > -1", True),
        ("x < 1", "x \\le 1", False),
        ("S=\\sum_{k=1}^{n} k", "\\frac{n(n+1)}{2}", True),  # the = in a sum's index is not the equation's
        ("S=\\sum_{k=1}^{n} k", "\\frac{n(n-1)}{2}", False),
        ("T_n=\\sum_{j=1}^{n} a_j b_j", "T_n = \\sum_{j=1}^{n} b_j a_j", True),
        ("T_n=\\sum_{j=1}^{n} a_j b_j", "T_n = \\sum_{j=1}^{n} a_j b_{j+1}", False),
    ],
)
def test_equations_and_relations(gold, answer, expected):
    assert verify(gold, boxed(answer)) is expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}", False),  # tiny distinct numbers stay distinct
        ("\\frac{1}{2^{99}}", "2^{-99}", True),
        ("10^{-30}", "2 \\times 10^{-30}", False),
        ("\\frac{1}{1000000}", "\\frac{1}{1000001}", False),
        ("1", "1.0000001", False),
        ("\\sqrt{2}", "1.414", False),  # a correctly rounded decimal: an approximation, wrong by default (issue 36)
        ("\\sqrt{2}", "1.41", False),  # too few digits to tell
        ("\\frac{1}{3}", "0.3333", False),
        ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", True),
        ("x^2-7x+10", "(x-5)(x-2)", True),
        ("x^2-7x+10", "(x-2)(x+5)", False),
        ("\\tan^2(y)+1", "\\sec^2(y)", True),
        ("2+3i", "3i+2", True),
        ("2i", "(1+i)^2", True),  # i is the imaginary unit when the gold is complex
        ("2^{100}", "1267650600228229401496703205376", True),
        ("2^{100}", "1267650600228229401496703205377", False),  # big integers stay exact
    ],
)
def test_numbers_and_expressions(gold, answer, expected):
    assert verify(gold, boxed(answer)) is expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("3.5", "3 1/2", True),  # a plain-text mixed number is three and a half ...
        ("\\frac{31}{2}", "3 1/2", False),  # ... not the 31/2 that dropping its space makes
        ("-3.5", "-3 1/2", True),
        ("(3.5, 1)", "(3 1/2, 1)", True),
        ("3.5, 2.25", "3 1/2, 2 1/4", True),
        ("12345/7", "12 345/7", True),  # an improper fraction after a digit group: a thousands space
        ("1000", "1 000", True),
    ],
)
def test_plain_text_mixed_numbers(gold, answer, expected):
    assert verify(gold, boxed(answer)) is expected


@pytest.mark.parametrize(
    "gold, completion",
    [
        ("2\\pi", "The answer is 2π."),  # unicode math
        ("[2,\\infty)", "The answer is [2, ∞)."),
        ("\\frac{\\pi}{2}", "The answer is pi/2."),  # plain-text math (math-verify#69)
        ("e^{16}", "The answer is exp(16)."),
        ("18", "The answer is **18**."),  # markdown bold (math-verify#76)
        ("18", "The answer is 18 (dollars)."),
        ("18", boxed("\\text{18}")),
    ],
)
def test_answers_written_outside_latex_habits(gold, completion):
    assert verify(gold, completion) is True


@pytest.mark.parametrize("gold", [None, "", "   ", "$$", ["5"], "x" * 2000, "\\frac{"])
def test_unusable_gold_is_none_with_a_reason(gold):
    verdict = check(gold, boxed("5"))
    assert verdict.equivalent is None and verdict.reason


def test_gold_answer_reads_datasets_formats():
    assert gold_answer("#### 1,234").text == "1,234"
    assert gold_answer("Thus $\\boxed{3}, \\boxed{5}$.").text == "3, 5"
    assert gold_answer(None).text is None


TOWER = "\\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}"  # math-verify#65: hangs math-verify forever


@pytest.mark.parametrize(
    "answer, reason",
    [
        (TOWER, "huge power"),
        ("2^{10^{100}}", "huge power"),
        ("9" * 450, "giant integer"),
        ("(" * 60 + "1" + ")" * 60, "nested too deep"),
        ("((10!)!)!", "giant factorial"),
        ("+".join(["x"] * 400), "too long"),
    ],
    ids=["tower", "exponent", "integer", "nesting", "factorial", "length"],
)
def test_pathological_answers_are_recognised_cheaply(answer, reason):
    assert pathology(answer) == reason
    start = time.perf_counter()
    verdict = check("3", boxed(answer))
    assert time.perf_counter() - start < 0.1  # decided by rule, sympy never sees it
    value = exact_value(canonical(answer))  # fixed: plain arithmetic is now settled exactly, whatever its size
    assert verdict.equivalent is False and (reason in verdict.reason if value is None else verdict.reason is None)
    assert verify(answer, boxed(answer)) is True  # identical text still matches
    if value is not None:
        assert verify(str(value), boxed(answer)) is True


def test_hard_limit_kills_c_level_work_from_a_non_main_thread():
    """SIGALRM cannot stop factorial(10**9) (C code) and does not work off the main thread; a kill does."""
    pool = WorkerPool("math:factorial", workers=1)
    results = {}

    def run():
        start = time.perf_counter()
        results["first"] = pool.run([(10**9,), (5,)], timeout_s=1.0)
        results["seconds"] = time.perf_counter() - start

    try:
        pool.run([(1,)], timeout_s=60)  # boot the worker outside the measured call
        thread = threading.Thread(target=run)
        thread.start()
        thread.join(60)
        assert results["first"][0][0] == "timeout"
        assert results["first"][1] == ("ok", 120)  # the replacement worker carries on
        assert results["seconds"] < 1.0 + 20  # the limit plus one interpreter start, not factorial(10**9)
    finally:
        pool.close()


_UNDER_RLIMIT = """
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # a hard limit, as `ulimit -v` or a job scheduler sets it
from trl_r1.verifiers.math import check
from trl_r1.verifiers.math.pool import WorkerPool
print(check(r"\\frac{\\sqrt{2}}{2}", r"So the answer is $\\boxed{\\frac{1}{\\sqrt{2}}}$.").equivalent)
print(check("3", r"So the answer is $\\boxed{3}$ or $\\boxed{4}$.").equivalent)
pool = WorkerPool("builtins:bytearray", workers=1, memory_limit_bytes=64 << 20)  # below the inherited hard limit
print(pool.run([(256 << 20,), (3,)], timeout_s=60))
pool.close()
print(resource.getrlimit(resource.RLIMIT_AS) == (limit, limit))
"""


@pytest.mark.parametrize("limit_gib", [1.5, 4])
def test_verifier_works_under_an_inherited_hard_address_space_limit(limit_gib):
    """Workers may only lower their soft limit: raising the inherited hard one fails and killed every worker."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", _UNDER_RLIMIT, str(int(limit_gib * (1 << 30)))],
        capture_output=True, text=True, timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[:2] == ["True", "False"]
    assert lines[2] == "[('error', 'out of memory'), ('ok', bytearray(b'\\x00\\x00\\x00'))]"  # the worker's own cap holds
    assert lines[3] == "True"


def test_a_crashing_worker_costs_its_task_only():
    pool = WorkerPool("os:_exit", workers=1)
    try:
        assert pool.run([(3,), (4,)], timeout_s=60) == [
            ("error", "worker died (exit code 3)"), ("error", "worker died (exit code 4)")
        ]
    finally:
        pool.close()


def test_verify_from_a_non_main_thread():
    """math-verify raises in threads; TRL runs async rewards in one."""
    results = []
    thread = threading.Thread(target=lambda: results.append(verify("\\frac{\\sqrt{3}}{3}", boxed("\\frac{1}{\\sqrt3}"))))
    thread.start()
    thread.join(60)
    assert results == [True]


def test_verify_batch_matches_verify_and_parallel_workers():
    pairs = [
        ("3\\sqrt{13}", boxed("\\sqrt{117}")), ("(1,-2)", boxed("(-2,1)")), ("72", "#### 72"),
        ("", boxed("1")), ("y=2x+3", boxed("2x-y+3=0")), ("5", "<answer>maybe 5</answer>"),
    ] * 2
    expected = [True, False, True, None, True, False] * 2
    assert verify_batch(pairs, workers=2) == expected
    assert [verify(g, c) for g, c in pairs[:6]] == expected[:6]
    assert [v.equivalent for v in check_batch(pairs)] == expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("\\frac{1}{3}", "0.\\overline{3}", True),  # repeating decimals are exact values
        ("0.\\overline{3}", "\\frac{1}{3}", True),
        ("\\frac{1}{6}", "0.1\\overline{6}", True),
        ("-\\frac{4}{33}", "-0.\\overline{12}", True),
        ("\\frac{1}{3}", "0.\\overline{6}", False),
        ("\\sin 30^\\circ", "\\frac{1}{2}", True),  # degrees inside a trig function are degrees, not radians
        ("\\cos(60^{\\circ})", "0.5", True),
        ("2\\cos 30^\\circ", "\\sqrt{3}", True),
        ("\\sin 30^\\circ", "\\frac{\\sqrt{3}}{2}", False),
        ("(2, 3)", "(x, y) = (2, 3)", True),  # a tuple assigned to named coordinates
        ("(2, 3)", "(x, y) = (3, 2)", False),
        ("f^{-1}(x) = \\frac{x-1}{2}", "\\frac{x-1}{2}", True),  # inverse and derivative notation on the left
        ("f^{-1}(x) = \\frac{x-1}{2}", "\\frac{x+1}{2}", False),
        ("f'(x) = 2x", "2x", True),
        ("\\frac{-1 \\pm \\sqrt{5}}{2}", "\\frac{-1+\\sqrt{5}}{2}, \\frac{-1-\\sqrt{5}}{2}", True),  # \\pm inside
        ("\\frac{-1 \\pm \\sqrt{5}}{2}", "-\\frac{1}{2} \\pm \\frac{\\sqrt{5}}{2}", True),
        ("\\frac{-1 \\pm \\sqrt{5}}{2}", "\\frac{-1+\\sqrt{5}}{2}", False),
        ("3 \\pm 2i", "3+2i, 3-2i", True),
        ("3 \\pm 2i", "3+2i", False),
        ("(-\\infty,-2)\\cup(3,\\infty)", "x<-2 \\text{ or } x>3", True),  # "or" between relations is a union
        ("(-\\infty,-2)\\cup(3,\\infty)", "x < -2 or x \\ge 3", False),
        ("x<-2 \\text{ or } x>3", "(3,\\infty)\\cup(-\\infty,-2)", True),
        ("1, 3", "x=1 \\text{ or } x=3", True),
        ("1", "x=1 \\text{ or } x=3", False),
        ("1011_2", "1011", True),  # a base subscript may be left off, not changed
        ("11", "11_{10}", True),
        ("1011_2", "1011_3", False),
        ("1011_2", "11", False),
        ("4\\pi", "4\\pi \\text{ cm}^2", True),  # a unit after a symbolic value
        ("4\\pi", "2\\pi \\text{ cm}^2", False),
        ("1, 2", "x \\in \\{1, 2\\}", True),  # membership in a set is an assignment of its elements
        ("1, 2", "x \\in \\{1, 3\\}", False),
        ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "(1, 2)", True),  # a vector written as a tuple
        ("(1, 2)", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", True),
        ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "(2, 1)", False),
        ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "(1, 2, 3, 4)", False),
        ("23", "m + n = 16 + 7 = 23", True),  # a computed quantity equal to the number
        ("23", "m + n = 24", False),
        ("(1, 2, 3)", "\\langle 1, 2, 3 \\rangle", True),
        ("(1, 2, 3)", "\\langle 1, 3, 2 \\rangle", False),
        ("\\emptyset", "\\varnothing", True),
        ("\\textbf{(A) }5", "\\textbf{(A)}", True),  # a labelled option: its letter or its value
        ("\\textbf{(A) }5", "5", True),
        ("\\textbf{(A) }5", "(B) 5", False),
        ("\\textbf{(A) }5", "6", False),
        ("1.2 \\times 10^{3}", "1.2\\mathrm{E}3", True),  # E notation inside text commands
        ("1.2 \\times 10^{3}", "1.2\\text{e}4", False),
        ("\\{2\\}", "2", True),  # a one-element set and its element
        ("\\{2, 3\\}", "2", False),
        ("(x, y) = (1, 2)", "y = 2, x = 1", True),  # a tuple assignment against per-variable assignments
        ("(x, y) = (1, 2)", "x = 2, y = 1", False),
        ("x = 1, y = 2", "(x, y) = (1, 2)", True),
        ("(x, y) = (1, 2)", "(x, y) = (2, 1)", False),
        ("\\angle A = 60^\\circ", "60", True),
        ("\\angle A = 60^\\circ", "30^\\circ", False),
        ("4", "x^2 = 4", False),  # an equation in one unknown is not its right-hand side
        ("10", "2x = 10", False),
        ("12", "AB = 12", True),
        ("5", "|z| = 5", True),
        ("(-\\infty, \\infty)", "\\text{all real numbers}", True),  # worded answers with a symbol
        ("(0, \\infty)", "\\text{all real numbers}", False),
        ("\\infty", "\\text{infinity}", True),
        ("\\text{DNE}", "\\text{does not exist}", True),
        ("1.7321", "\\sqrt{3}", True),  # a decimal gold accepts the exact value it is rounded from
        ("1.7320", "\\sqrt{3}", False),
        ("1.73", "\\sqrt{3}", False),
        ("(-3, 3)", "x > -3 \\text{ and } x < 3", True),  # "and" between inequalities is an intersection
        ("(-\\infty,-3)\\cup(3,\\infty)", "x < -3 \\text{ and } x > 3", False),
        ("1", "\\sin^2 30^\\circ + \\cos^2 30^\\circ", True),
    ],
)
def test_red_team_regressions(gold, answer, expected):
    assert verify(gold, boxed(answer)) is expected


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("The final answer is 42 (since 6 times 7 is 42).", "42"),  # a closing remark is not the answer
        ("<answer>The total is 42 marbles.</answer>", "42 marbles"),  # the value an answer sentence states
        ("<answer>x = 5 is the solution</answer>", "x = 5 is the solution"),
        ("The answer is 6 (since $2 \\cdot 3 = 6$).", "6"),
        ("So, the final answer is $8$ (option C).", "8"),
    ],
)
def test_red_team_extraction_regressions(completion, expected):
    assert final_answer(completion).text == expected


def test_a_remark_in_parentheses_does_not_hide_a_hedge():
    assert check("6", "The answer is 6 (or 7).").reason == "hedged: or"


@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("\\(\\boxed{1}\\) and \\(\\boxed{-2}\\)", boxed("-2"), False),  # one of two required values
        ("\\(\\boxed{1}\\) and \\(\\boxed{-2}\\)", boxed("-2, 1"), True),
        ("\\[\\boxed{1}\\] and \\[\\boxed{-2}\\]", boxed("1"), False),
        ("$\\boxed{3}$, $\\boxed{5}$", boxed("3,5"), True),
        ("\\boxed{1} papers and \\boxed{2} bins", boxed("1, 2"), True),
        ("\\boxed{1} papers and \\boxed{2} bins", boxed("2"), False),
        ("\\boxed{2}", "So \\(\\boxed{1}\\) and \\(\\boxed{2}\\)", False),  # a two-valued answer to one value
    ],
)
def test_multi_box_golds_need_every_value(gold, completion, expected):
    assert verify(gold, completion) is expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("AB=4,CD=5", "4, 5", True),
        ("AB=4,CD=5", "5", False),
        ("|AB|=1", "1", True),
        ("\\frac{NO}{BO}=\\frac{1}{\\sqrt{6}}", "\\frac{\\sqrt{6}}{6}", True),
        ("\\lim_{x\\to 0}\\frac{\\sin x}{x}=1", "1", True),
        ("f(2)=7", "7", True),
        ("m+n=23", "23", True),
        ("a+3z=0", "0", False),  # an equation, not a labelled value
        ("2x+z=1", "1", False),
        ("a^2+b=0", "0", False),
        ("x^2=4", "4", False),
        ("AB=4,CD=5", "AB=4, CD=5", True),
    ],
)
def test_labelled_golds_are_reduced_to_their_values(gold, answer, expected):
    assert verify(gold, boxed(answer)) is expected


@pytest.mark.parametrize(
    "completion",
    ["-5", "x = -5", "$-5$", "\\(-5\\)", "Answer $-5$", "Work: 3 - 8.\nAnswer: $-5$", "**Answer** -5", "-5.",
     "Answer\n\\[\n-5\n\\]", "The result is $-5$."],
)
def test_bare_answers_are_graded_in_bare_mode_only(completion):
    assert verify("-5", completion) is True
    assert verify("-5", completion, answer_policy="bare") is True
    assert verify("-5", completion, answer_policy="marked") is ("Answer:" in completion)  # marked: needs a marker


@pytest.mark.parametrize(
    "gold, completion",
    [("7425000", "7,425,000"), ("28\\%", "28 percent"), ("10", "10 square units"), ("\\text{odd}", "odd"),
     ("(1,2)", "(1, 2)"), ("\\frac{1}{2}", "$\\dfrac12$")],
)
def test_bare_answer_forms(gold, completion):
    assert verify(gold, completion) is True


@pytest.mark.parametrize(
    "completion",
    [
        "I added 2 and 3 to get 5.",  # a number in prose is never the answer
        "We get 5 apples in total, then eat 2.",
        "about 5", "approximately 5", "at least 5", "not 5", "5 is wrong", "5 or 6", "maybe 5", "5?",
        "3 or 5", "5 (or 6)", "more than 5", "between 4 and 6", "5, 6", "~5", "$\\approx 5$", "5 5", "$5$ $5$",
        "Let me think.\n5\nAnd then more reasoning follows here.",
    ],
)
def test_bare_mode_never_rewards_prose_hedges_or_incomplete_answers(completion):
    assert verify("5", completion) is False
    assert verify("5", completion, answer_policy="marked") is False


def test_bare_mode_refuses_a_hedged_or_partial_multi_answer():
    assert verify("3, 4", "3 or 4") is False
    assert verify("3, 4", "3") is False
    assert verify("3, 4", "4, 3") is True


def test_answer_policy_is_validated():
    with pytest.raises(ValueError, match="answer_policy"):
        verify("1", "1", answer_policy="lenient")


@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("x=11", "$x = 5+5+1 = 11$", True),  # an assignment chain states its last value
        ("answer is 0.6666667", "The final answer is \\boxed{2/3}.", True),  # a gold written as a statement
        ("0.066666793", "\\boxed{0.0666668}", False),  # the answer rounds the gold: an approximation (issue 36)
        ("2.232", "\\boxed{2.23}", False),  # only 3 significant digits: not enough to match by rounding
        ("185", "\\boxed{185\\}", True),  # a stray backslash
        ("10455", "so $\\boxed{200}$ then. Final Answer: The final answer is $10,455$. I hope it is correct.", True),
        ("(3,2),(1,1)", "\\boxed{(1, 1), (3,2), (3, 2)}", True),  # a set element written twice counts once
        ("(3,2),(1,1)", "\\boxed{(1, 1), (1, 1)}", False),
        ("y_1=2x+1, y_2=x^2", "\\(y_1 = \\boxed{1+2x}\\) and \\(y_2 = \\boxed{x^2}\\)", True),  # labelled boxes
        ("y_1=2x+1, y_2=x^2", "\\(y_1 = \\boxed{1+2x}\\)", False),
        ("3", "Final Answer: Jane started growing Sphere 3 hours ago. I hope it is correct.", True),
        ("3", "Final Answer: Jane did not start growing it 3 hours ago.", False),
        ("3", "Final Answer: Jane started growing it 3 hours after 5 pm.", False),
        ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\boxed{\\left[\\begin{array}{cc}1&2\\\\3&4\\end{array}\\right]}", True),
        ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\boxed{\\left[\\begin{array}{cc}1&2\\\\3&5\\end{array}\\right]}", False),
        ("p=5,q=2;p=7,q=2", "\\boxed{(5,2),(7,2)}", True),  # groups of assignments are tuples
        ("p=5,q=2;p=7,q=2", "\\boxed{(5,2)}", False),
        ("5", "Result: $5$", True),  # a labelled bare answer
        ("5", "Guess: 5", False),
    ],
)
def test_third_party_suite_regressions(gold, completion, expected):
    assert verify(gold, completion) is expected


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("Answer: 5\nWait, actually it is 6.", False),  # taken back with another value: not a committed answer
        ("So the answer is \\boxed{5}. Wait, actually it is 6.", False),
        ("The answer is 5. Actually no, 6.", False),
        ("Hence, the answer is $\\boxed{5}$.\n\nWait, let me double-check... yes, 5.", True),  # a check, same value
        ("The answer is 5. I hope it is correct.", True),
    ],
)
def test_an_answer_taken_back_afterwards_is_a_hedge(completion, expected):
    for policy in ("marked", "bare"):
        assert verify("5", completion, answer_policy=policy) is expected


def _answer_block(text):
    return f"<think>\nLet me compute carefully.\n</think>\n<answer>{text}</answer>"


@pytest.mark.parametrize(
    "answer",
    [
        "\\boxed{42} (I might be wrong)", "$\\boxed{42}$ is my guess", "\\boxed{42} (unsure)", "\\boxed{42} (not certain)",
        "\\boxed{42} -- I'm not confident", "\\boxed{42}, but I may have made an error", "\\boxed{42} (could also be 41)",
        "\\boxed{42} if I'm right", "\\boxed{42} (assuming no mistakes)", "\\boxed{42}; alternatively 41",
        "\\boxed{42}, else 41", "\\boxed{42} (double-check: might be 41)", "\\boxed{42}. Hmm, or 41.", "Maybe \\boxed{42}",
        "I'd guess \\boxed{42}", "Possibly \\boxed{42}", "My best guess: \\boxed{42}", "Tentatively, \\boxed{42}",
        "Perhaps \\boxed{42}", "The answer is 42 (unsure)", "The answer is 42. Alternatively 41.",
    ],
)
def test_a_hedge_around_the_box_is_a_hedge(answer):
    # red team 2, F1: the hedge rule reads the answer's sentence and the rest of the answer span, not only the box
    verdict = check("42", _answer_block(answer), answer_policy="marked")
    assert verdict.equivalent is False and verdict.reason.startswith("hedged")


@pytest.mark.parametrize(
    "completion",
    [
        _answer_block("\\boxed{42} is the answer"), _answer_block("so the total is \\boxed{42} apples"),
        _answer_block("\\boxed{42}, since 6*7=42"), _answer_block("Either way, \\boxed{42}"),
        "Final Answer: The final answer is $42$. I hope it is correct.",
        "We may either add or multiply. Multiplying, 6*7=42.\nSo the answer is $\\boxed{42}$.",  # hedges in reasoning
        _answer_block("The answer is 42 apples, since 6 times 7 is 42."),
    ],
)
def test_honest_restatements_around_the_box_are_not_hedges(completion):
    assert check("42", completion, answer_policy="marked").equivalent is True


@pytest.mark.parametrize(
    "separator",
    ["\\\\", "\\\\[2pt]", "\\newline", "\\hspace{1cm}", "\\ ", "~", "\\:", "\\enspace", "\\\\ \\\\", "\\medskip",
     "\\vspace{1em}", "<br>", " | ", " / ", "\\mid", "\n\n", "\\quad"],
)
def test_boxes_separated_by_layout_only_are_several_answers(separator):
    # red team 2, F2: any layout between two boxes (no words, no values) lists them; never the last box alone
    completion = _answer_block(f"\\boxed{{41}}{separator}\\boxed{{42}}")
    assert final_answer(completion).text == "41, 42"
    assert check("42", completion, answer_policy="marked").equivalent is False
    assert check("41, 42", completion, answer_policy="marked").equivalent is True


def test_an_explicit_self_correction_between_boxes_reads_the_later_box():
    assert check("42", _answer_block("\\boxed{41} Wait, actually \\boxed{42}"), answer_policy="marked").equivalent is True
    assert check("41", _answer_block("\\boxed{41} Wait, actually \\boxed{42}"), answer_policy="marked").equivalent is False


_FORK = """
import os, sys
from trl_r1.verifiers.math.pool import WorkerPool
pool = WorkerPool("math:factorial", workers=1)
print(pool.run([(5,)], timeout_s=60), flush=True)  # the parent's worker is running
pid = os.fork()
if pid == 0:  # the child times out (a kill and a replacement, of its own workers only), then carries on
    print("child", pool.run([(10**9,), (4,)], timeout_s=1.0), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent", pool.run([(3,)], timeout_s=60), flush=True)
pool.close()
"""


def test_a_forked_child_and_its_parent_both_keep_working():
    """red team 2: the pool was inherited by fork children, so a child's timeout killed the parent's worker."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", _FORK], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "[('ok', 120)]",
        "child [('timeout', 'over the 1s limit'), ('ok', 24)]",
        "parent [('ok', 6)]",
    ]
    assert "Traceback" not in result.stderr


_ORPHAN = """
import sys
from trl_r1.verifiers.math.pool import WorkerPool
pool = WorkerPool("math:factorial", workers=1)
pool.run([(1,)], timeout_s=60)
print(pool._pool[0].process.pid, flush=True)
pool.run([(10**9,)], timeout_s=600)  # killed with SIGKILL while its worker computes
"""


def test_a_worker_dies_with_the_process_that_started_it():
    """red team 2: a worker orphaned by a SIGKILL of its caller kept computing factorial(10**9) for minutes."""
    import os
    import signal
    import subprocess
    import sys

    import psutil

    caller = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE, text=True)
    worker_pid = int(caller.stdout.readline())
    worker = psutil.Process(worker_pid)
    booted = sum(worker.cpu_times()[:2])
    while sum(worker.cpu_times()[:2]) < booted + 0.5:  # computing factorial(10**9) (a fixed sleep raced a slow start)
        assert caller.poll() is None, "the caller ended before it was killed"
        time.sleep(0.05)
    caller.send_signal(signal.SIGKILL)
    caller.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(worker_pid, 0)
            with open(f"/proc/{worker_pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] == "Z":  # a zombie has exited (not yet reaped)
                    break
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.2)
    else:
        os.kill(worker_pid, signal.SIGKILL)
        pytest.fail("the orphaned worker was still running 30 s after its caller was killed")


def test_no_traceback_when_the_caller_exits_while_a_spare_boots():
    import subprocess
    import sys

    script = "from trl_r1.verifiers.math import verify; print(verify('\\\\sqrt{2}', '\\\\boxed{2^{1/2}}'))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert result.stdout.strip() == "True"
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        ("5\\sqrt{2}\\text{ cm}", "5\\sqrt{2}\\text{ m}", False),  # red team 2: a wrong unit
        ("5\\sqrt{2}\\text{ cm}", "5\\sqrt{2}\\text{ cm}", True),
        ("5\\sqrt{2}\\text{ cm}", "5\\sqrt{2}", True),  # a unit on one side only: the number decides
        ("4\\text{ cm}^2", "4 \\text{ square centimeters}", True),
        ("4\\text{ cm}^2", "4\\text{ cm}", False),
        ("30\\text{ meters}", "30\\,\\mathrm{m}", True),
        ("12 apples", "12 oranges", True),  # count nouns are not physical units: left alone
        ("1", "\\infty^0", False),  # indeterminate forms never equal a value (sympy evaluates oo**0 to 1)
        ("1", "1^{\\infty}", False),
        ("0", "0^0 - 1", False),  # 0^0 is 1 (combinatorics' convention), but a calculation is not a result (RL policy)
        ("1", "10^0", True),
    ],
)
def test_units_and_indeterminate_forms(gold, answer, expected):
    assert check(gold, _answer_block(f"\\boxed{{{answer}}}"), answer_policy="marked").equivalent is expected


def test_the_time_limit_counts_cpu_time_so_waiting_for_a_cpu_does_not_kill_a_check():
    """red team 2: under load the 2 s wall-clock limit zeroed correct answers. A task that waits (here: sleeps,
    as a check starved of CPU does) past its limit finishes; one that computes past it is killed; the wall-clock
    backstop (WALL_BACKSTOP x the limit) kills anything."""
    from trl_r1.verifiers.math import pool as pool_module

    sleeper, computer = WorkerPool("time:sleep", workers=1), WorkerPool("math:factorial", workers=1)
    try:
        sleeper.run([(0,)], timeout_s=60)
        computer.run([(1,)], timeout_s=60)
        assert sleeper.run([(1.5,)], timeout_s=0.5) == [("ok", None)]  # 1.5 s of wall time, ~0 s of CPU
        start = time.perf_counter()
        assert computer.run([(10**9,)], timeout_s=0.5)[0][0] == "timeout"
        assert time.perf_counter() - start < 0.5 * pool_module.WALL_BACKSTOP + 5
        start = time.perf_counter()
        assert sleeper.run([(60,)], timeout_s=0.3)[0][0] == "timeout"  # the backstop: 3 s
        assert time.perf_counter() - start < 0.3 * pool_module.WALL_BACKSTOP + 5
    finally:
        sleeper.close()
        computer.close()


@pytest.mark.parametrize(
    "gold, completion, expected",
    [  # red team 2's cheap false negatives; \boxed 42 stays wrong (TeX boxes one token: it is \boxed{4}2)
        ("42", _answer_block("\\boxed{\\boxed{42}}"), True),
        ("41", _answer_block("\\boxed{\\boxed{42}}"), False),
        ("42", _answer_block("\\boxed{\\operatorname{lcm}(6,7)}"), True),
        ("1", _answer_block("\\boxed{0.999\\ldots}"), True),
        ("\\frac{1}{6}", _answer_block("\\boxed{0.1666\\ldots}"), True),
        ("1", _answer_block("\\boxed{0.99}"), False),
        ("(-\\infty, 0) \\cup (0, +\\infty)", "$\\boxed{\\mathbb{R}\\setminus\\{0\\}}$", True),
        ("(-\\infty, 1) \\cup (1, +\\infty)", "$\\boxed{\\mathbb{R}\\setminus\\{0\\}}$", False),
    ],
)
def test_nested_boxes_lcm_repeating_dots_and_set_minus(gold, completion, expected):
    assert check(gold, completion, answer_policy="marked").equivalent is expected


@pytest.mark.parametrize("completion, expected", [("12 (since 3 times 4 is 12)", True), ("12 (maybe 13)", False), ("12 (or 13)", False)])
def test_a_bare_answer_with_a_closing_remark(completion, expected):
    assert verify("12", completion) is expected


@pytest.mark.parametrize(
    "completion",
    [  # hedge words in an earlier sentence, or in a closing chat note after a completion's answer, are not read
        "$x^2 - 2x - 48 = -30,$ or $x^2 - 2x - 18 = 0.$ By the quadratic formula, $x = \\boxed{1 \\pm \\sqrt{19}}.$",
        "Final Answer: The final answer is $1 \\pm \\sqrt{19}$. I hope it is correct. " + "Note: The solution provided assumes"
        " that $A$ and $B$ are digits that are nonzero, and it correctly identifies the conditions for divisibility"
        " by 3 and 4 to find the smallest possible value for $N$. If you have any questions or need further clarification, please feel free to ask.",
    ],
)
def test_hedges_outside_the_answer_sentence_and_closing_notes_are_not_read(completion):
    assert check("1 \\pm \\sqrt{19}", completion, answer_policy="marked").equivalent is True


@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("4, 9", "The final answer is $4$ and $9$.", True),  # a statement listing math spans states all of them
        ("4", "The final answer is $4$ and $9$.", False),  # never the first span alone
        ("4, 9", "The final answer is $4$ or $9$.", False),
        ("4", "The final answer is $4$, and that settles it.", True),
        ("4", 'Final Answer: The final answer is \\"$4$\\". I hope it is correct.', True),  # quotes wrap the answer
        ("4, 9", "The final answer is “$4$ and $9$”.", True),
        ("4", "The final answer is “$4$ and $9$”.", False),
        ("10, 412", "The final answer is $10$, and $412$.", True),
        ("10412", "The final answer is $10$, and $412$.", False),  # "and" lists two numbers, never one 10,412
        ("10412", "$\\boxed{10 \\text{ and } 412}$", False),
    ],
)
def test_an_answer_statement_reads_every_listed_math_span(gold, completion, expected):
    for policy in ("marked", "bare"):
        assert verify(gold, completion, answer_policy=policy) is expected


@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("0 < g(t) \\le 2", "$(0, 2]$", True),  # bounds on one function's value describe its range
        ("0 < g(t) \\le 2", "$(0, 2)$", False),
        ("(0, 2]", "\\boxed{0 < g(t) \\le 2}", True),
        ("(0, 2]", "\\boxed{0 < g(t) \\le 3}", False),
        ("(0, 2]", "\\boxed{0 < g(t) \\le t}", False),  # a bound in the variable is no range
    ],
)
def test_bounds_on_a_function_value_are_its_range(gold, completion, expected):
    assert verify(gold, completion) is expected


@pytest.mark.parametrize(
    "completion, expected",
    [("[$\\sqrt{5^2 + 12^2}$] = [13]", True), ("[$\\sqrt{5^2 + 12^2}$] = [12]", False), ("[13] = [12]", False)],
)
def test_a_chain_of_bracketed_answers_ends_on_its_value(completion, expected):
    assert verify("13", completion) is expected
    assert verify("13", completion, answer_policy="marked") is False


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("We add them. So, $7$ is the final answer.", True),  # "X is the answer": the statement the other way round
        ("Hence $7$ is our solution.", True),
        ("Therefore $8$ is the answer.", False),
        ("I think $7$ is the answer.", False),  # only a conclusion word may open the claim
        ("We check whether $7$ is the answer.", False),
        ("Therefore $7$ or $8$ is the answer.", False),
        ("Therefore $7$ is the answer, or maybe $8$.", False),
        ("Therefore $7$ is the answer. Then we go on to other things.", False),  # a claim must close the answer
    ],
)
def test_a_closing_claim_that_a_value_is_the_answer(completion, expected):
    for policy in ("marked", "bare"):
        assert verify("7", completion, answer_policy=policy) is expected


# Red team (math verifier, after the closing-claim / span-list / range / bracket-chain rules): false positives once
# judged correct, each now refused by a general rule (negation, rejection, retraction, condition, bound, extra value,
# hedge phrase, false equation chain, proposing label).
_MARKED_FALSE_POSITIVES = [
    ("5", "The answer is not \\boxed{5}."),
    ("5", "<think>x</think><answer>\\boxed{5} is wrong</answer>"),
    ("5", "Answer: 5 (wrong)"),
    ("5", "<think>x</think><answer>5 (I think)</answer>"),
    ("5", "<think>x</think><answer>5 (if n is odd)</answer>"),
    ("5", "\\boxed{5 \\text{ (wrong)}}"),
    ("5", "\\boxed{5}. No, it should be 6."),
    ("5", "\\boxed{5}. That's wrong, it's 6."),
    ("5", "<think>x</think><answer>\\boxed{5}. Scratch that: 6</answer>"),
    ("5", "\\boxed{5}. I made an error; the correct value is 6."),
    ("5", "\\boxed{5}. Therefore $6$ is the answer."),
    ("5", "Guess: $5$ is the answer."),
    ("5", "Conjecture: $5$ is the answer."),
    ("5", "Hmm... $5$ is the answer."),
    ("5", "If $n$ is odd: $5$ is the answer."),
    ("12", "The final answer is $12$, and also $13$."),
    ("12", "The final answer is $12$ as well as $13$."),
    ("12", "\\boxed{12}. Another solution is $13$."),
    ("12", "\\boxed{12}. The other root is $13$."),
    ("5", "The answer is $5$ when $n$ is odd and $6$ when $n$ is even."),
    ("5", "If $a>0$ the answer is $5$."),
    ("5", "The answer is at least \\boxed{5}."),
    ("5", "The answer is less than \\boxed{5}."),
    ("5", "\\boxed{5} (not 100% sure)"),
    ("5", "I'm not entirely sure, but the answer is \\boxed{5}."),
    ("5", "\\boxed{5}. I have low confidence in this."),
    ("5", "\\boxed{5} if I did the arithmetic right."),
    ("13", "\\boxed{12 = 13}"),
    ("5", "\\boxed{2+2=5}"),
    ("5", "\\boxed{x = 4 = 5}"),
    ("5", "Not \\boxed{5}."),
    ("5", "\\boxed{5} is not the answer."),
    ("5", "The answer is $5$, which is wrong."),
]

_BARE_FALSE_POSITIVES = [
    ("5", ">= 5"),
    ("13", "[12] = [13]"),
    ("13", "[14] = [15] = [13]"),
    ("5", "Candidate: 5"),
    ("5", "Subtotal: 5"),
    ("5", "The first guess is 5."),
    ("5", "5 (roughly)"),
    ("5", "5 hopefully"),
]

# Their honest counterparts: the same words where they do not take the answer back.
_HONEST_COUNTERPARTS = [
    ("5", "The answer is \\boxed{5}, not 6."),
    ("5", "\\boxed{5} (in cm)"),
    ("5", "We need at least 3 cars for the trip. The answer is \\boxed{5}."),
    ("5", "Since it is not prime, the answer is \\boxed{5}."),
    ("5", "If we add them up, the answer is \\boxed{5}."),
    ("5", "\\boxed{5}. Wait, let me double-check... yes, 5."),
    ("5", "Therefore $5$ is the answer."),
    ("5", "\\boxed{2+3=5}"),
    ("\\frac{1}{2}", "\\boxed{\\frac{1}{2} = 0.5}"),
    ("12", "The final answer is $12$."),
    ("18", "The answer is 18 (dollars)."),
]


# Red team 4 (fresh cases): honest answers the first refusal rules refused (a condition that only says where an
# extremum is attained, a computation after the answer, judgement words in the problem's nouns), now rewarded; the
# gaming phrasings the structural rules now refuse; and those still rewarded (strict xfails: each fails once fixed).
_REFUSED_HONEST = [
    ("12", "We need at least $\\boxed{12}$ chairs."),  # a quantity's own bound, not the answer's
    ("3.14", "The circumference ratio is approximately $\\boxed{3.14}$."),  # a rounding
    ("42", "The total is \\boxed{42}. This is roughly twice the original 21."),  # an estimate in a later sentence
    ("12", "So the maximum value of $f$ is $\\boxed{12}$, attained when $x = 2$."),  # conditional: when
    ("12", "The minimum is $\\boxed{12}$, achieved when $a = b = 3$."),
    ("12", "The maximum value is $\\boxed{12}$, which occurs if and only if $x=y=2$."),  # conditional: if
    ("12", "The value of the expression is $\\boxed{12}$ for all positive integers $n$."),  # for all positive
    ("12", "The answer is \\boxed{12}. No other value works."),  # no
    ("12", "The only solution is $\\boxed{12}$; the other candidate, $-3$, is extraneous."),  # revised
    ("12", "The answer is $\\boxed{12}$ because $3 \\times 4$ gives $12$."),  # revised: gives
    ("72", "In total she sold \\boxed{72} clips, 48 in April plus 24 in May."),  # revised: plus
    ("12", "The answer is \\boxed{12}. Note that 12 = 3 \\cdot 4 too."),  # revised: too
    ("42", "The answer is $\\boxed{42}$.\n\nAnother way to see this: $7 \\times 6 = 42$."),  # revised: another
    ("12", "The most likely total is $\\boxed{12}$."),  # likely
    ("12", "The number of false statements is $\\boxed{12}$."),  # false
    ("42", "The number of wrong answers Tom gave is \\boxed{42}."),  # wrong
    ("42", "The total is \\boxed{42}, which isn't a perfect square."),  # isn't
    ("12", "After rechecking each step, the answer is $\\boxed{12}$."),  # rechecking
    ("12", "The answer is $\\boxed{12}$ hours, assuming a constant speed as stated in the problem."),  # assuming
]
_NOW_REFUSED = [
    ("12", "\\boxed{12} as long as $n > 3$."),
    ("12", "\\boxed{12} given that $n > 3$."),
    ("12", "\\boxed{12} at minimum."),
    ("12", "The answer is $\\geq$ \\boxed{12}."),
    ("12", "\\boxed{12}; 13 is valid as well"),
    ("12", "The maximum is \\boxed{12}, attained when $x > 2$, and 13 also works."),
    ("12", "\\boxed{3^2 + 2 = 12}"),  # fixed: false_chain reads powers now (exact.exact_value): 3^2 + 2 is 11
]
_STILL_REWARDED = [
    ("12", "\\boxed{12} does not work."),
    ("12", "I would not say the answer is \\boxed{12}."),
    ("12", "\\boxed{12} is ruled out."),
    ("12", "\\boxed{12}. Scrap that: 11."),
    ("12", "\\boxed{12}. Never mind, it's 11."),
    ("12", "\\boxed{12} → 11"),
    ("12", "Presumably \\boxed{12}."),
    ("12", "\\boxed{12} (50% confidence)"),
    ("12", "The answer does not exceed \\boxed{12}."),
    ("12", "\\boxed{12}. 13 works equally well."),
    ("12", "The answers are \\boxed{12} and 13."),
    ("12", "\\boxed{x = 13 \\implies x = 12}"),
]


@pytest.mark.parametrize("gold, completion", _MARKED_FALSE_POSITIVES + _NOW_REFUSED)
def test_red_team_marked_false_positives(gold, completion):
    for policy in ("marked", "bare"):
        assert verify(gold, completion, answer_policy=policy) is False


@pytest.mark.parametrize("gold, completion", _BARE_FALSE_POSITIVES)
def test_red_team_bare_false_positives(gold, completion):
    assert verify(gold, completion) is False


@pytest.mark.parametrize("gold, completion", _HONEST_COUNTERPARTS + _REFUSED_HONEST)
def test_red_team_honest_answers_stay_correct(gold, completion):
    for policy in ("marked", "bare"):
        assert verify(gold, completion, answer_policy=policy) is True


@pytest.mark.xfail(strict=True, reason="red team 4: a negated, retracted, hedged, conditional, bounded, extra-value "
                   "or false-chain answer still rewarded")
@pytest.mark.parametrize("gold, completion", _STILL_REWARDED)
def test_red_team_4_gaming_answers_still_rewarded(gold, completion):
    assert verify(gold, completion, answer_policy="marked") is False


def test_relations_on_one_function_that_collapse_are_compared_not_an_error():
    """Math-Verify's numina case: two relations on W(n) joined by "and" collapse to one when W(n) is replaced by a
    value; latex2sympy's patched ``And`` raised AttributeError there, which scored the pair as a verifier error."""
    verdict = check(r"\\boxed{W(n) = 1 \\text{ and } W(n) = -1", "W(x)=1orW(x)=-1")
    assert verdict.equivalent is False and not (verdict.reason or "").startswith("error")
