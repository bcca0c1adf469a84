"""Numbers written in words: a final answer spelled out ("forty-two", "three quarters", "the fifth term") scores like
its digits, in both answer policies; a number word that is not the final answer never does.
"""

import time

import pytest

from trl_r1.verifiers.math import check
from trl_r1.verifiers.math.words import digits_for_words, spelled_number

REASONING = "<think>\nThere are 6 boxes with 7 apples each, so 6 times 7 apples in all.\n</think>\n"

SPELLED = [  # (gold, completion): the final answer in words, each read as its value
    ("42", "The answer is forty-two."),
    ("42", "So the final answer is Forty-Two."),
    ("42", r"\boxed{\text{forty-two}}"),
    ("42", r"Therefore the answer is $\boxed{\textbf{forty two}}$."),
    ("42", "<answer>forty-two</answer>"),
    ("42", "The answer is that there are forty-two apples."),
    ("42", "The answer is forty-two apples."),
    ("7", r"\boxed{\text{seven}}"),
    ("0", "The answer is zero."),
    ("105", "The answer is one hundred and five."),
    ("105", "The answer is one hundred five."),
    ("1234", "The answer is one thousand, two hundred and thirty-four."),
    ("1200", "The answer is twelve hundred."),
    ("2500", "The answer is twenty-five hundred."),
    ("1000005", "The answer is one million and five."),
    ("3000000", "The answer is three million."),
    ("10^{24}", "The answer is one septillion."),
    ("2 \\cdot 10^{15}", "The answer is two quadrillion."),
    ("3000000", "The answer is 3 million."),
    ("7425000", "The answer is 7.425 million."),
    ("100", "The answer is a hundred."),
    ("-7", "The answer is negative seven."),
    ("-7", "The answer is minus seven."),
    ("-3", "The answer is minus 3."),
    (r"\frac{3}{4}", "The answer is three quarters."),
    ("2.5", "The answer is two point five."),
    (r"\frac{1}{24}", "The answer is one twenty-fourth."),
    (r"\frac{5}{36}", "The answer is five thirty-sixths."),
    (r"\frac{3}{4}", "The answer is three over four."),
    ("-1.05", "The answer is minus one point zero five."),
    ("25\\%", "The answer is twenty-five percent."),
    (r"\frac{3}{4}", "The answer is three-fourths."),
    ("0.75", "The answer is three quarters."),
    (r"\frac{2}{3}", "The answer is two thirds."),
    (r"\frac{1}{2}", "The answer is one half."),
    (r"\frac{1}{2}", "The answer is a half."),
    (r"\frac{5}{8}", r"\boxed{\text{five eighths}}"),
    (r"\frac{1}{5}", "The answer is one fifth."),
    (r"\frac{1}{100}", "The answer is one hundredth."),
    (r"\frac{3}{2}", "The answer is one and a half."),
    (r"\frac{11}{4}", "The answer is two and three quarters."),
    (r"-\frac{1}{2}", "The answer is minus one half."),
    ("5", "The answer is the fifth term."),
    ("5", r"\boxed{\text{the fifth}}"),
    ("21", "The answer is the twenty-first."),
    ("100", "The answer is the hundredth term."),
    ("5", "The answer is the 5th term."),
    ("5", r"\boxed{5^{\text{th}}}"),
    ("21", r"So the answer is \boxed{21st}."),
    ("42", "We add them up.\nTherefore forty-two is the answer."),  # a closing claim without math
    ("42", "We add them up. Forty-two is our final answer."),
    ("42", "We add them up. So 42 is the answer."),
    ("circle", r"The answer is \boxed{\text{a circle}}."),
    (r"\text{circle}", r"\boxed{\text{A circle}}"),
    (r"\text{an ellipse}", r"\boxed{\text{ellipse}}"),
    (r"\text{second quadrant}", r"\boxed{\text{second quadrant}}"),  # a text gold with a number word matches itself
    ("seven", r"\boxed{7}"),  # a gold in words reads as answers do
]


@pytest.mark.parametrize("policy", ["marked", "bare"])
@pytest.mark.parametrize("gold, completion", SPELLED)
def test_spelled_final_answer_scores(gold, completion, policy):
    assert check(gold, REASONING + completion, answer_policy=policy).equivalent is True


@pytest.mark.parametrize("gold, completion", [("9", "nine"), (r"\frac{1}{2}", "one half"), ("42", "forty-two apples"),
                                              ("42", "The total is forty-two.")])
def test_spelled_bare_answer_scores_when_graded(gold, completion):
    assert check(gold, completion).equivalent is True
    assert check(gold, completion, answer_policy="marked").equivalent is False  # no marker: no RL reward


WRONG = [  # (gold, completion): the right number in words somewhere, but not as the final answer
    ("3", "There are three cases. The answer is 7."),
    ("42", "<think>forty-two, I think</think><answer>41</answer>"),
    ("42", r"Forty-two would be wrong here. \boxed{43}"),
    ("42", "The answer is forty-three."),
    ("42", "The answer is forty-two or forty-three."),
    ("42", "The answer is maybe forty-two."),
    ("42", "The answer is probably forty-two."),
    ("42", "The answer is not forty-two."),
    ("42", "The answer is forty-two. Wait, actually it is forty-three."),
    ("42", r"\boxed{\text{forty two and seven}}"),
    ("42", r"\boxed{\text{forty}} \boxed{\text{two}}"),
    ("55", "The answer is five five."),
    ("42", "The answer is forty twelve."),
    ("1", "The answer is one in four."),
    ("1", "The answer is one of the roots, 5."),
    ("1", "The answer is the one with 5 sides."),
    ("5", "The answer is the fifth root of 2."),
    ("2", "The answer is two and three."),
    ("2", "The answer is between two and three."),
    ("3", "The answer is at least three."),
    ("3", "The answer is about three."),
    ("3", "The answer is three, if n is odd."),
    ("12", "The answer is that each of the three friends gets twelve."),  # two numbers: no single value
    ("4", "The answer is one quarter."),  # 1/4, not 4
    ("2", "The answer is the 2nd of 3."),
    ("5", "The answer is just over five."),
    ("35", "The answer is five thirty-sixths."),
    ("2.12", "The answer is two point twelve."),  # decimals are read digit by digit
    ("3", "At this point the answer is three point."),
    ("3", "The answer is a third."),  # 1/3, not 3
    ("5", "The answer is one fifth."),  # 1/5, not 5
    ("42", "So in total there are forty-two apples, and we add seven more."),
    ("42", "We counted forty-two apples along the way, so the total must be large."),
    ("7", r"\boxed{\text{seven or eight}}"),
    ("7", r"\boxed{\text{seven}} or \boxed{\text{eight}}"),
    ("100", "The answer is the hundredth."[:-1] + " of a meter, so 0.01."),
    ("42", "I think forty-two is the answer."),
    ("42", "Forty-two or forty-three is the answer."),
    ("42", r"\boxed{42}. Therefore forty-three is the answer."),
    ("circle", r"\boxed{\text{not a circle}}"),
    ("circle", r"\boxed{\text{a square}}"),
]


@pytest.mark.parametrize("policy", ["marked", "bare"])
@pytest.mark.parametrize("gold, completion", WRONG)
def test_number_words_that_are_not_the_final_answer_never_score(gold, completion, policy):
    assert check(gold, REASONING + completion, answer_policy=policy).equivalent is False


OPERATORS = ["squared", "cubed", "factorial", "inverse", "reciprocal", "root", "dozen", "thousandths", "millionths",
             "billionths", "quintillionths", "to the power of two"]
FRAMES = ["<answer>{}</answer>", "The answer is {}.", r"\boxed{{\text{{{}}}}}", "**Final Answer**: {}"]


@pytest.mark.parametrize("number", ["seven", "7"])
@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("operator", OPERATORS)
def test_a_number_before_an_operator_word_never_scores_as_the_bare_number(operator, frame, number):
    """ "seven squared" is 49 and "seven dozen" 84: the operator word is no noun the number counts (a hack
    otherwise)."""
    for policy in ("marked", "bare"):
        assert check("7", REASONING + frame.format(f"{number} {operator}"), answer_policy=policy).equivalent is False
    assert spelled_number(f"{number} {operator}") is None


@pytest.mark.parametrize("frame", FRAMES[:2] + ["The final answer is {}."])
@pytest.mark.parametrize("rest", ["of the options", "that works", "such number", "which satisfies both",
                                  "among many", "of these", "who knows"])
def test_one_as_a_pronoun_never_scores_one(rest, frame):
    for policy in ("marked", "bare"):
        assert check("1", REASONING + frame.format(f"one {rest}"), answer_policy=policy).equivalent is False
        if rest.startswith("of"):  # "1 of the options" names no value either
            assert check("1", REASONING + frame.format(f"1 {rest}"), answer_policy=policy).equivalent is False
    assert "1" not in digits_for_words(f"The answer is one {rest}.")


def test_spelled_number_reads_whole_answers_only():
    assert spelled_number("nine hundred ninety-nine thousand nine hundred ninety-nine") == "999999"
    assert spelled_number("twenty-third") == "23" and spelled_number("twenty thirds") == r"\frac{20}{3}"
    assert spelled_number("seven apples") == "7 apples" and spelled_number("forty percent") == "40 percent"
    for text in ("a circle", "the one", "hundred", "tenths", "one two three", "sixty-ten", "seven hundred and",
                 "five times larger", "three quarters of the pie", "42", "a seven", "the forty-two"):
        assert spelled_number(text) is None, text


def test_digits_for_words_leaves_what_is_not_one_number():
    text = "one, two, three and four; between two and three; the fifth step; one and a half"
    assert digits_for_words(text) == r"1, 2, three and four; between two and three; the fifth step; \frac{3}{2}"


@pytest.mark.parametrize("text", [
    "one " * 25_000,
    "The answer is " + "forty-" * 16_000 + "x.",
    "The answer is " + "one and " * 12_000 + "a half.",
    "The answer is " + "minus " * 16_000 + "x",
    "The answer is one" + ", one" * 20_000,
    r"\boxed{The answer is " + "twelve " * 14_000 + "}",
    "The answer is " + " " * 100_000 + "five",
    "The answer is " + "seven squared " * 7_000,
    "The answer is " + "one of the " * 9_000,
])
def test_long_adversarial_word_inputs_stay_fast(text):
    start = time.perf_counter()
    for policy in ("marked", "bare"):
        check("5", text, answer_policy=policy)
    spelled_number(text), digits_for_words(text)
    assert time.perf_counter() - start < 5.0  # linear: about a second on a loaded CPU, minutes if quadratic
