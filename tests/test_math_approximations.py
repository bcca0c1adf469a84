"""Issue 36, item 2: a decimal for an exact gold it does not equal is wrong unless the dataset opts in
(``approximations="rounded"``) or the question asks for that rounding."""

import pytest

from trl_r1.verifiers.math import check, verify
from trl_r1.verifiers.math.screening import asked_places

APPROXIMATIONS = [  # the false positives the hidden set found (issue 36), and their family
    (r"\frac{3840}{289}", "13.29"),
    (r"\sqrt{2}", "1.414"),
    (r"288\pi", "904.78"),
    ("e", "2.718"),
    (".35625", "0.3563"),
    (r"\frac{1}{3}", "0.3333"),
    (r"\frac{1}{3}", r"33.33\%"),
    (r"\pi", "3.14159265358979"),
    (r"\frac{\sqrt{3}}{2}", "0.8660"),
]


@pytest.mark.parametrize(("gold", "answer"), APPROXIMATIONS)
@pytest.mark.parametrize("policy", ["marked", "bare"])
def test_an_approximation_is_wrong_by_default(gold, answer, policy):
    completion = f"<think>...</think> The answer is $\\boxed{{{answer}}}$."
    assert check(gold, completion, answer_policy=policy).equivalent is False
    assert check(gold, completion, answer_policy=policy, approximations="rounded").equivalent is True


@pytest.mark.parametrize(
    ("gold", "answer"),
    [(r"\frac{1}{4}", "0.25"), (r"\frac{3}{8}", "0.375"), ("0.5", r"\frac{1}{2}"), (r"12.5\%", r"\frac{1}{8}"),
     ("3.1416", r"\pi"), ("0.0666668", "0.066666793")],
)
def test_exact_decimals_and_rounded_golds_still_match(gold, answer):
    """A decimal that is the exact value, or a gold that is itself rounded, is not an approximation by the answer."""
    assert verify(gold, f"\\boxed{{{answer}}}") is True


@pytest.mark.parametrize(
    ("question", "gold", "answer", "expected"),
    [
        ("What is sqrt 2? Round your answer to the nearest hundredth.", r"\sqrt{2}", "1.41", True),
        ("What is sqrt 2? Round your answer to the nearest hundredth.", r"\sqrt{2}", "1.42", False),
        ("What is sqrt 2? Round your answer to the nearest hundredth.", r"\sqrt{2}", "1.414", False),  # not as asked
        ("Express 1/3 to 3 decimal places.", r"\frac{1}{3}", "0.333", True),
        ("Express 1/3 to three decimal places.", r"\frac{1}{3}", "0.33", False),
        ("Give 2*pi to the nearest integer.", r"2\pi", "6", True),
        ("Give 2*pi to the nearest whole number.", r"2\pi", "7", False),
        ("Give the area to the nearest 0.1.", r"288\pi", "904.8", True),
        ("What is 2/3?", r"\frac{2}{3}", "0.67", False),  # no rounding asked: an approximation
    ],
)
def test_a_rounding_the_question_asks_for_is_compared_as_asked(question, gold, answer, expected):
    assert check(gold, f"\\boxed{{{answer}}}", answer_policy="marked", question=question).equivalent is expected


def test_asked_places_reads_the_usual_phrasings():
    assert [asked_places(q) for q in [
        "Round to the nearest tenth.", "to the nearest thousandth", "Express your answer to 4 decimal places.",
        "to the nearest cent", "Round to the nearest integer.", "How many apples?", None,
    ]] == [1, 3, 4, 2, 0, None, None]


def test_an_unknown_policy_fails_fast():
    with pytest.raises(ValueError, match="approximations"):
        check("1", r"\boxed{1}", approximations="close")


def test_the_reward_passes_the_policy_and_the_prompt_through():
    from trl_r1.rewards.math import MathAccuracyReward

    completions, golds = [r"\boxed{1.41}", r"\boxed{1.41}", r"\boxed{1.414}"], [r"\sqrt{2}"] * 3
    prompts = ["What is sqrt 2 to the nearest hundredth?", "What is sqrt 2?", "What is sqrt 2?"]
    assert MathAccuracyReward()(completions=completions, solution=golds, prompts=prompts) == [1.0, 0.0, 0.0]
    rounded = MathAccuracyReward(approximations="rounded")
    assert rounded(completions=completions, solution=golds, prompts=prompts) == [1.0, 0.0, 1.0]
