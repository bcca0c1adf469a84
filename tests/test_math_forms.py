"""Issue 36, item 3: answer forms read as the field reads them, each a family with its wrong answers (no new
false positives): Unicode mathematics, relation commands, Python/sympy syntax, a closing sentence about the
question's subject, a trailing unit the gold lacks, a malformed ``\\left( 12 \\right.``."""

import pytest

from trl_r1.verifiers.math import check

FAMILIES = {  # family: [(gold, answer written in that form, right?)]
    "unicode": [
        (r"3\sqrt{13}", "3√13", True), (r"3\sqrt{13}", "3√14", False), (r"\sqrt{x+1}", "√(x+1)", True),
        (r"4.5\times10^{33}", "4.5 × 10³³", True), (r"4.5\times10^{33}", "4.5 × 10³²", False),
        (r"x^{-1}", "x⁻¹", True), (r"x^{2}+1", "x²+1", True), (r"x^{2}+1", "x³+1", False),
        (r"\pm 2", "±2", True), (r"\frac{1}{2}", "½", True), (r"3\frac{1}{2}", "3½", True), (r"2\pi", "2π", True),
        ("-5", "−5", True), ("5", "−5", False), (r"\infty", "∞", True), (r"x \le 3", "x ≤ 3", True),
        (r"x \ge 3", "x ≥ 3", True), (r"x \neq 3", "x ≠ 3", True), (r"x \le 3", "x ≥ 3", False),
        (r"2\cdot 3^{x}", "2⋅3^x", True), (r"\sqrt[3]{2}", "∛2", True), (r"\sqrt[3]{2}", "√2", False),
        (r"x \le 3", "x ⩽ 3", True), (r"x \ge 3", "x ⩾ 3", True), (r"x \le 3", "x ⩾ 3", False),
    ],
    "relation commands": [
        ("x<3", r"x \lt 3", True), ("x>3", r"x \gt 3", True), (r"x\le3", r"x \leq 3", True),
        (r"x\ge3", r"x \geq 3", True), (r"x\neq3", r"x \ne 3", True), (r"x\neq3", r"x \neq 3", True),
        ("x<3", r"x \gt 3", False), (r"x \le 3", r"x \lt 3", False),
    ],
    "python syntax": [
        ("x^2+2x+1", "x**2 + 2*x + 1", True), ("x^2+2x+1", "x**3 + 2*x + 1", False),
        (r"2\sqrt{2}", "2*sqrt(2)", True), (r"2\sqrt{2}", "2*sqrt(3)", False), (r"\frac{\pi}{2}", "pi/2", True),
        (r"\frac{\pi}{3}", "pi/2", False), (r"e^{16}", "exp(16)", True),
    ],
    "sympy printing": [
        (r"\frac{1}{3}", "Rational(1, 3)", True), (r"\frac{1}{3}", "Rational(1, 4)", False), (r"\frac{1}{3}", "S(1)/3", True),
        (r"\frac{\pi}{2}", "sympy.pi/2", True), ("e^{2}", "E**2", True), ("e^{2}", "E**3", False), ("1+2i", "1 + 2j", True),
        ("1+2i", "1 - 2j", False), (r"\sin^2 x", "sin(x)**2", True), (r"\sin^2 x", "1 - cos(x)**2", True),
        (r"\sin^2 x", "cos(x)**2", False), ("E", r"\textbf{(E)}", True),
    ],
    "trailing unit": [
        ("72", "72 km/h", True), ("73", "72 km/h", False), ("9.8", "9.8 m/s^2", True), ("72", "72 mph", True),
        ("8", "8 L", True), ("1500", "1,500 g", True), ("1500", "1,400 g", False),
    ],
    "modulus": [("2", r"2 \pmod 7", True), ("2", r"2 \pmod{7}", True), ("2", "2 (mod 7)", True), ("3", r"2 \pmod 7", False)],
    "null delimiter": [
        ("12", r"\left( 12 \right.", True), ("13", r"\left( 12 \right.", False),
        (r"\frac{1}{2}", r"\left( \frac{1}{2} \right.", True), (r"2\sqrt{3}", r"\left( 2\sqrt{3} \right.", True),
        (r"2\sqrt{3}", r"\left( 3\sqrt{2} \right.", False),
    ],
}


@pytest.mark.parametrize("policy", ["marked", "bare"])
@pytest.mark.parametrize(
    ("gold", "answer", "expected"), [case for cases in FAMILIES.values() for case in cases],
)
def test_answer_forms_in_a_box_and_in_an_answer_statement(gold, answer, expected, policy):
    for completion in (f"<think>...</think> The answer is {answer}.", f"So \\boxed{{{answer}}}."):
        assert check(gold, completion, answer_policy=policy).equivalent is expected, completion


CLOSING = [
    (r"\frac{2}{3}", "... So the probability that Alice wins the game is 2/3.", True),
    (r"\frac{2}{3}", r"... Thus, the probability that Alice wins the game is $\frac{2}{3}$.", True),
    (r"\frac{2}{3}", r"... Thus, the probability that Alice wins the game is $\frac{1}{3}$.", False),
    ("72", "... Hence the speed of the train is 72 km/h.", True),
    ("5", "... Therefore the first guess is 5.", False),  # a proposal, not the answer
    ("5", "... So the number is at least 5.", False),  # a bound
    ("5", "... So the number is maybe 5.", False),  # a hedge
    ("5", "... So the number of apples is 5. Let me check: 2+3=5 and also 6 is possible", False),  # not last
    ("5", "... So we get 5 apples in total.", False),  # a number in prose, not a statement of the subject
    (r"\frac{1}{6}", "<think>x</think>\n\nThe probability of rolling a four is therefore 1/6.", True),  # alone
    ("72", "48 + 24 = 72. The total is 72.", False),  # without "so", only a sentence alone in its region
    ("120", "<think>x</think>\n\nSo there are 120 ways to arrange the books on the shelf.", True),
    ("120", "... So there are at least 120 ways to arrange them.", False),
    ("72", "<think>x</think>\n\nSo Natalia sold 72 clips altogether in April and May.", True),
    ("72", "<think>x</think>\n\nSo Natalia sold 70 clips altogether in April and May.", False),
    ("5", "... So John has at least 5 apples.", False),
    ("5", "... So John has 5 apples left after giving 3 away.", False),  # two numbers
]


@pytest.mark.parametrize(("gold", "completion", "expected"), CLOSING)
def test_a_closing_sentence_about_the_subject_states_the_answer(gold, completion, expected):
    """Read when grading ("bare"); the RL reward ("marked") still needs a marker: a sentence is prose."""
    assert check(gold, completion, answer_policy="bare").equivalent is expected
    assert check(gold, completion, answer_policy="marked").equivalent is False
