"""Answer forms a blind set (fresh set 5) found missed or wrongly accepted, each read as a family: the rule, its
variants and the near misses it must not accept."""

import pytest

from trl_r1.verifiers.math import check


def verdict(gold: str, completion: str, policy: str = "marked") -> bool | None:
    return check(gold, completion, answer_policy=policy).equivalent


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        (r"[0,\infty)", r"[0,\infty]", False),  # no interval of reals is closed at infinity
        (r"(-\infty,2]", r"[-\infty,2]", False),
        (r"(-\infty,-1)\cup(1,\infty)", r"(-\infty,-1)\cup(1,\infty]", False),
        (r"[0,\infty)", r"[0,\infty)", True),
        (r"[0,\infty)", r"x \geq 0", True),
    ],
)
def test_an_interval_closed_at_infinity_is_wrong(gold, answer, expected):
    assert verdict(gold, rf"<think>...</think> The answer is $\boxed{{{answer}}}$.") is expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        (r"(-\infty,-2)\cup(3,\infty)", r"\mathbb{R}\setminus[-2,3]", True),
        (r"(-\infty,0]\cup[1,\infty)", r"\mathbb{R} \setminus (0, 1)", True),
        (r"(-\infty,0)\cup[1,\infty)", r"\mathbb{R}\setminus[0,1)", True),
        (r"(-\infty,-2)\cup(3,\infty)", r"\mathbb{R}\setminus(-2,3)", False),  # the ends' brackets flip
        (r"(-\infty,-2)\cup(3,\infty)", r"\mathbb{R}\setminus[-3,2]", False),
    ],
)
def test_the_reals_minus_an_interval_is_the_union_outside_it(gold, answer, expected):
    assert verdict(gold, rf"So the solution set is $\boxed{{{answer}}}$.") is expected


@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        (r"\frac{\pi}{3}", r"\frac\pi3", True),  # TeX reads one token per argument: a digit, a letter, a command
        (r"\frac{\pi}{6}", r"\frac\pi 6", True),
        (r"\frac{a}{b}", r"\frac ab", True),
        (r"\frac{\pi}{4}", r"\frac{\pi}4", True),
        (r"\frac{\pi}{3}", r"\frac3\pi", False),
        (r"3\sqrt{13}", r"3\sqrt13", True),  # a digit run after \sqrt is the radicand every writer means
        (r"2\sqrt{10}", r"2\sqrt10", True),
        (r"3\sqrt{13}", r"3\sqrt31", False),
        (r"\frac{1}{2}x", r"\frac12x", True),
    ],
)
def test_brace_less_arguments(gold, answer, expected):
    assert verdict(gold, rf"<answer>$\boxed{{{answer}}}$</answer>") is expected


@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("(a) 12, (b) 5", r"(a) $\boxed{12}$, (b) $\boxed{5}$", True),
        ("(i) 3, (ii) 7", r"(i) \boxed{3}; (ii) \boxed{7}", True),
        ("6, 5", r"Mean $= \boxed{6}$, median $= \boxed{5}$.", True),
        ("6, 5", r"Mean: \boxed{6}, median: \boxed{4}.", False),
        ("6, 5", r"Mean $= \boxed{5}$, median $= \boxed{6}$.", False),  # labelled parts keep their order
        (r"35\text{ cm}, 4", r"$\boxed{{35 cm, 4}}$", True),
        (r"9\text{ cm}, 4\text{ cm}", r"Final answer: $\boxed{9 \text{ and } 4}$", True),
        (r"9\text{ cm}, 4\text{ cm}", r"Final answer: $\boxed{9 \text{ and } 5}$", False),
        ("4", r"The answer is \boxed{3}. Wait, actually: \boxed{4}", True),  # a correction, not a second part
        ("3, 4", r"The answer is \boxed{3}. Wait, actually: \boxed{4}", False),
        ("1500", "The answer is 1,500 g.", True),  # a thousands separator is not a list
    ],
)
def test_answers_in_labelled_parts(gold, completion, expected):
    assert verdict(gold, completion) is expected


@pytest.mark.parametrize(
    "gold, block, expected",
    [
        ("18", "Janet makes $18 per day.", True),  # one sentence with one number states it
        ("18", "Janet makes $17 per day.", False),
        ("42", "She needs 42 tiles in all.", True),
        ("5", "5 (if n is odd)", False),  # a condition is never dropped
        ("5", "We get 5 when n is odd.", False),
        ("12", "He buys 12 apples and 13 pears.", False),  # two numbers: no one value stated
        ("5", "I believe it's 5", False),  # a belief commits to nothing
        ("24", "There are 24 ways.", True),
        (r"\text{no}", r"No, because 2047 = 23 \times 89.", True),
        (r"\text{yes}", "Yes. Every even square is divisible by 4.", True),
        (r"\text{yes}", r"No, because 2047 = 23 \times 89.", False),
        (r"\text{yes}", "No, wait, actually yes.", False),
    ],
)
def test_an_answer_block_holding_one_sentence(gold, block, expected):
    assert verdict(gold, f"<think>...</think>\n<answer>{block}</answer>") is expected


@pytest.mark.parametrize(
    "gold, closing, expected",
    [
        (r"\frac{3}{7}", "So the probability that the first marble drawn is red is 3/7.", True),
        ("55", "Therefore the sum of the first ten terms is 55.", True),
        ("5", "So the first guess is 5.", None),  # "first" heads the subject: a proposal, not the answer
    ],
)
def test_a_closing_sentence_about_the_subject(gold, closing, expected):
    got = verdict(gold, f"<think>counting</think>\n\n{closing}", policy="bare")
    assert got is (False if expected is None else expected)
