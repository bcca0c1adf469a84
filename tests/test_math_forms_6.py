"""The sixth set of answer-form rules, each a family with its near misses (issue 36): labelled parts in more
spellings, a unit on any part, words set as text, brace-less TeX root indices and script commands, a provisional
("at first") answer, and exact arithmetic reading ``1/2(3)`` as the parser does."""

from fractions import Fraction

import pytest

from trl_r1.verifiers.math import check
from trl_r1.verifiers.math.exact import exact_value
from trl_r1.verifiers.math.extraction import final_answer

POLICIES = ["marked", "bare"]


def verdict(gold: str, completion: str, policy: str) -> bool | None:
    return check(gold, completion, answer_policy=policy).equivalent


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion",
    [
        r"a) \boxed{12}, b) \boxed{5}",
        r"**a)** \boxed{12}, **b)** \boxed{5}",
        r"**(a)** \boxed{12}, **(b)** \boxed{5}",
        r"__(a)__ \boxed{12}, __(b)__ \boxed{5}",
        r"(a): \boxed{12}. (b): \boxed{5}.",
        r"(i) \boxed{12}, (ii) \boxed{5}",
        r"i) \boxed{12}, ii) \boxed{5}",
        r"(1) \boxed{12}, (2) \boxed{5}",
        r"1) \boxed{12}, 2) \boxed{5}",
        r"Part 1: \boxed{12}. Part 2: \boxed{5}.",
        r"Part A: \boxed{12}. Part B: \boxed{5}.",
        r"Part (a): \boxed{12}; Part (b): \boxed{5}",
        r"Part I: \boxed{12}. Part II: \boxed{5}.",
        r"x $= \boxed{12}$, y $= \boxed{5}$",
        r"m = \boxed{12}, n = \boxed{5}",
        r"x_1 = \boxed{12}, x_2 = \boxed{5}",
    ],
)
def test_labelled_parts_in_common_spellings_are_the_ordered_answer(completion, policy):
    assert verdict("(12, 5)", completion, policy) is True
    assert verdict("(5, 12)", completion, policy) is False  # the order is the labels'


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion",
    [
        r"a) \boxed{12}, c) \boxed{5}",  # part (b) skipped: 5 answers (c)
        r"b) \boxed{12}, a) \boxed{5}",  # out of order
        r"**(a)** \boxed{12}, **(a)** \boxed{5}",  # (a) answered twice
        r"Part 2: \boxed{12}. Part 1: \boxed{5}.",
        r"Part 1: \boxed{12}. Part 3: \boxed{5}.",
        r"(1) \boxed{12}, (b) \boxed{5}",  # two numbering schemes
        r"(h) \boxed{12}, (i) \boxed{5}",  # (i) after (h) is a roman numeral, not a ninth letter
        r"(a) \boxed{12}, (i) \boxed{5}",
        r"Step 1: \boxed{12}. Step 2: \boxed{5}.",  # steps and cases are not parts
        r"Case 1: \boxed{12}. Case 2: \boxed{5}.",
        r"y $= \boxed{12}$, x $= \boxed{5}$",  # (x, y) = (5, 12)
        r"y = \boxed{12}, x = \boxed{5}",
        r"Part 1: \boxed{12}. Wait, Part 2: \boxed{5}.",
        r"Part 1: \boxed{12} or Part 2: \boxed{5}",
        r"(x+1) \boxed{12}, (x+2) \boxed{5}",  # a bracket closing an expression is no label
        r"(0.1) \boxed{12}, (0.2) \boxed{5}",
        r"2*(1) \boxed{12}, 2*(2) \boxed{5}",
    ],
)
def test_labels_that_are_not_the_parts_in_order_are_no_tuple(completion, policy):
    assert verdict("(12, 5)", completion, policy) is False


@pytest.mark.parametrize("policy", POLICIES)
def test_one_unknown_labelled_twice_is_its_list_of_values(policy):
    assert verdict("3, -3", r"x = \boxed{3}, x = \boxed{-3}", policy) is True


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("(12, 5)", r"(a) \boxed{12\text{ cm}}, (b) \boxed{5\text{ cm}}", True),
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5\text{ cm}}", True),  # a unit on one part only
        ("(12, 5)", r"(a) \boxed{12\text{ cm}}, (b) \boxed{5}", True),
        ("(12, 5)", r"(a) \boxed{12\text{ m}}, (b) \boxed{5\text{ s}}", True),
        ("(12, 5)", r"(a) \boxed{12\text{ cm}}, (b) \boxed{5\text{ cm}^2}", True),
        ("(12, 5)", r"Mean $= \boxed{12\text{ kg}}$, median $= \boxed{5\text{ kg}}$", True),
        ("(12, 5)", r"(a) \boxed{12\text{ cm}}, (b) \boxed{6\text{ cm}}", False),
        ("(12, 5)", r"(a) \boxed{5\text{ cm}}, (b) \boxed{12\text{ cm}}", False),
        ("(12, 5)", r"(a) \boxed{12x}, (b) \boxed{5}", False),  # a variable is no unit
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5 \text{ or more}}", False),  # words that bound or hedge a part
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5 \text{ at least}}", False),  # are not its unit
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5\text{ cm at most}}", False),
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5\text{ dollars max}}", False),
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5\text{ cm if n is odd}}", False),
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5\text{ cm (estimate)}}", False),
        ("(12, 5)", r"(a) \boxed{12}, (b) \boxed{5\text{ cm, probably}}", False),
    ],
)
def test_a_unit_on_any_labelled_part(gold, completion, expected, policy):
    assert verdict(gold, completion, policy) is expected


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("No", r"The answer is $\boxed{\text{No}}$.", True),
        ("No", r"$\boxed{\text{No}}$, because 4 is even.", True),
        ("No", r"The answer is $\boxed{\textbf{No}}$.", True),
        ("No", r"The answer is $\boxed{\mathrm{No}}$.", True),
        ("No", r"The answer is $\boxed{\text{ no }}$.", True),
        ("Yes", r"$\boxed{\text{Yes}}$, because 4 is even.", True),
        (r"\text{Evelyn}", r"The answer is $\boxed{\textit{Evelyn}}$.", True),
        ("No", r"The answer is $\boxed{\text{Yes}}$.", False),
        ("Yes", r"$\boxed{\text{No}}$, because 4 is even.", False),
        ("No", r"The answer is $\boxed{\text{No solution}}$.", False),
        ("No", r"The answer is $\boxed{\text{None}}$.", False),
        ("No", r"The answer is $\boxed{\text{Not}}$.", False),
        ("No", r"The answer is $\boxed{\text{No or yes}}$.", False),  # a hedge inside the text
        ("No", r"The answer is $\boxed{\text{Maybe no}}$.", False),
        (r"\text{Evelyn}", r"The answer is $\boxed{\text{Evelina}}$.", False),
    ],
)
def test_words_set_as_text_are_the_words(gold, completion, expected, policy):
    assert verdict(gold, completion, policy) is expected


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "gold, answer, expected",
    [
        (r"\sqrt[3]{2}", r"\sqrt[3]2", True),
        (r"2^{1/3}", r"\sqrt[3]2", True),
        (r"\sqrt[3]{2}", r"\sqrt[3] 2", True),
        (r"\sqrt[3]{25}", r"\sqrt[3]25", True),  # a digit run, as \sqrt13 is the root of 13
        (r"\sqrt[3]{2}x", r"\sqrt[3]2x", True),  # TeX's one token: the root of 2, times x
        (r"\sqrt[3]{\pi}", r"\sqrt[3]\pi", True),
        (r"\sqrt[n]{x}", r"\sqrt[n]x", True),
        (r"\sqrt{2}", r"2^\frac12", True),
        (r"\sqrt{2}", r"2^\frac{1}{2}", True),
        (r"\sqrt{2}", r"2^\tfrac12", True),
        (r"\sqrt{x}", r"x^\frac12", True),
        (r"x^{\frac{a}{b}}", r"x^\frac ab", True),
        (r"3\sqrt{2}", r"2^\frac12 3", True),
        (r"2^{\sqrt{2}}", r"2^\sqrt2", True),
        (r"2^{\sqrt{2}}", r"2^\sqrt{2}", True),
        (r"2^{\sqrt[3]{2}}", r"2^\sqrt[3]2", True),
        (r"\sqrt{2}", r"\sqrt[3]2", False),
        (r"\sqrt[3]{2x}", r"\sqrt[3]2x", False),
        (r"\sqrt[3]{2.5}", r"\sqrt[3]2.5", False),  # no token: unread, never the root of 2 then .5
        (r"\frac{1}{2}", r"2^\frac12", False),
        (r"1", r"2^\frac12", False),
        (r"\frac{x^a}{b}", r"x^\frac ab", False),
        (r"2\sqrt{2}", r"2^\sqrt2", False),
    ],
)
def test_brace_less_root_indices_and_script_commands(gold, answer, expected, policy):
    assert verdict(gold, rf"The answer is $\boxed{{{answer}}}$.", policy) is expected


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion",
    [
        "So at first, the answer is 5.",
        r"Initially I got \boxed{5}.",
        r"At first, the answer was \boxed{5}.",
        r"The answer at first was \boxed{5}.",
        r"The answer was initially \boxed{5}.",
        r"Originally, my answer was $\boxed{5}$.",
        "For now, the answer is 5.",
        r"To begin with, the answer is \boxed{5}.",
        "<answer>So at first, the answer is 5.</answer>",
        "So far, the answer is 5.",
        r"The answer so far is \boxed{5}.",
    ],
)
def test_an_answer_given_at_first_is_provisional(completion, policy):
    assert verdict("5", completion, policy) is False
    assert final_answer(completion, policy=policy).reason.startswith("hedged: provisional")


@pytest.mark.parametrize("completion", ["Initially: 5", "Answer for now: 5", "The answer so far is 5.", "The result so far is 5."])
def test_a_provisional_label_or_subject_is_no_bare_answer(completion):
    assert verdict("5", completion, "bare") is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion",
    [
        r"Janet had 10 apples at first, so she has \boxed{5} apples.",  # the time word belongs to the problem
        r"She had \boxed{5} apples at first.",
        r"The number of apples she had initially is \boxed{5}.",
        r"Initially there were 12 apples; the answer is \boxed{5}.",
        "At first glance it looks hard, but the answer is 5.",
        r"At first I got \boxed{4}, but rechecking, the answer is \boxed{5}.",  # the first try is taken back
        "First, the answer is 5.",
        r"She has read \boxed{5} pages so far.",  # what the question asks about, not the answer's status
        r"The number of pages read so far is \boxed{5}.",
    ],
)
def test_a_time_word_that_does_not_qualify_the_answer_is_no_hedge(completion, policy):
    assert verdict("5", completion, policy) is True


@pytest.mark.parametrize(
    "text, value",
    [
        ("1/2(3)", Fraction(1, 6)),  # latex2sympy's reading: a product without a sign binds first
        ("6/2(1+2)", Fraction(1)),
        ("1/2^2(3)", Fraction(1, 12)),
        ("2(3)/4", Fraction(3, 2)),
        ("(1/2)(3)", Fraction(3, 2)),
        (r"\frac{1}{2}(3)", Fraction(3, 2)),
        ("2*3(4)", Fraction(24)),
        ("-2(3)", Fraction(-6)),
    ],
)
def test_exact_arithmetic_binds_a_product_without_a_sign_before_a_division(text, value):
    assert exact_value(text) == value


def test_a_divisor_with_a_bracket_reads_as_the_parser_reads_it():
    # graded ("bare"): a calculation is read; the RL reward ("marked") wants its result, so scores it 0 either way
    assert verdict("1/6", r"The answer is $\boxed{1/2(3)}$.", "bare") is True
    assert verdict("3/2", r"The answer is $\boxed{1/2(3)}$.", "bare") is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "answer",
    [
        r"5 \text{ at least}",
        r"5 \text{ at most}",
        r"5\text{ minimum}",
        r"\text{at least } 5",
        r"\text{up to } 5",
        r"5 \text{ or fewer}",
        r"\text{no more than } 5",
    ],
)
def test_a_bound_written_into_the_box_is_no_value(answer, policy):
    assert verdict("5", rf"The answer is $\boxed{{{answer}}}$.", policy) is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion", [r"The minimum is $\boxed{5}$.", r"The maximum value is \boxed{5}.", r"\boxed{5\text{ cm}}"]
)
def test_a_bound_named_outside_the_value_is_no_bound(completion, policy):
    assert verdict("5", completion, policy) is True
