"""Red-team cases against the fifth set of answer-form rules (labelled parts, an answer block's one sentence,
yes/no with a reason): each is a wrong, hedged or self-contradicting answer the rules score as equivalent."""

import pytest

from trl_r1.verifiers.math import check

POLICIES = ["marked", "bare"]


def verdict(gold: str, completion: str, policy: str) -> bool | None:
    return check(gold, completion, answer_policy=policy).equivalent


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion",
    [
        r"Answer: \boxed{12}, check: \boxed{5}",  # 'check' labels a verification, not part (b)
        r"First try: \boxed{12}, final: \boxed{5}",  # a first attempt and its replacement
        r"Wrong: \boxed{12}, Right: \boxed{5}",  # the first box is disowned
        r"Incorrect $= \boxed{12}$, correct $= \boxed{5}$",
        r"(a) \boxed{12}, (a) \boxed{5}",  # two answers to (a), none to (b)
        r"Mean $= \boxed{12}$, mean $= \boxed{5}$",  # one quantity answered twice
        r"Old $= \boxed{12}$, new $= \boxed{5}$",  # a value and its revision
        r"Before $= \boxed{12}$, after $= \boxed{5}$",
        r"(a) \boxed{12}, (c) \boxed{5}",  # 5 is given for part (c), not (b)
        r"(b) \boxed{12}, (c) \boxed{5}",  # every answer under the wrong part
    ],
)
def test_labels_that_are_not_parts_do_not_make_a_tuple(completion, policy):
    assert verdict("(12, 5)", completion, policy) is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "gold, sentence",
    [
        ("2", "Step 2 gives the total."),
        ("2", "Case 2 holds."),
        ("1", "Chapter 1 explains it."),
        ("2024", "In 2024 Janet makes money."),
    ],
)
def test_a_label_number_in_a_sentence_is_not_the_answer(gold, sentence, policy):
    assert verdict(gold, f"<answer>{sentence}</answer>", policy) is False


@pytest.mark.parametrize("policy", POLICIES)
def test_a_restricted_sentence_is_conditional(policy):
    assert verdict("18", "<answer>Janet makes $18 per day on Mondays only.</answer>", policy) is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("modal", ["might", "could", "should", "would"])
def test_a_modal_sentence_is_hedged(modal, policy):
    assert verdict("18", f"<answer>Janet {modal} make $18 per day.</answer>", policy) is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "gold, answer",
    [
        ("No", "No, because yes."),  # the reason contradicts the verdict
        ("No", "No, because maybe not."),  # 'maybe' in the reason is not read as a hedge
        ("Yes", "Yes, because n might be 2, or no."),  # 'or no' hedges both ways
        ("Yes", "Yes, because it is not impossible, or is it?"),
        ("No", "No, because 4 is even; on second thought, yes."),  # a retraction inside the sentence
        ("No", "No, because 4 is even, perhaps."),
    ],
)
def test_a_yes_no_reason_that_retracts_or_hedges_is_wrong(gold, answer, policy):
    assert verdict(gold, f"<answer>{answer}</answer>", policy) is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "gold, answer",
    [
        (r"\sqrt[3]{2}", r"\sqrt[3]2"),  # TeX's brace-less root argument with an index
        (r"\sqrt{2}", r"2^\frac12"),  # TeX's brace-less \frac as an exponent
    ],
)
def test_more_brace_less_tex_arguments_are_read(gold, answer, policy):
    assert verdict(gold, rf"The answer is $\boxed{{{answer}}}$.", policy) is True


@pytest.mark.parametrize("policy", POLICIES)
def test_an_answer_held_at_first_is_provisional(policy):
    assert verdict("5", "So at first, the answer is 5.", policy) is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion",
    [
        r"(a) \boxed{12\text{ cm}}, (b) \boxed{5\text{ cm}}",  # works only when the last unit has an exponent
        r"(a) \boxed{12\text{ m}}, (b) \boxed{5\text{ s}}",
        r"(a) \boxed{12}, (b) \boxed{5\text{ cm}}",
        r"**(a)** \boxed{12}, **(b)** \boxed{5}",  # Markdown-bold labels
        r"a) \boxed{12}, b) \boxed{5}",
        r"Part 1: \boxed{12}. Part 2: \boxed{5}.",
        r"x $= \boxed{12}$, y $= \boxed{5}$",  # 'Mean $=$ ..., median $=$ ...' is read; variable names are not
    ],
)
def test_honest_labelled_parts_are_read(completion, policy):
    assert verdict("(12, 5)", completion, policy) is True


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "sentence",
    [
        "Janet fails to make $18 per day.",  # negations other than 'not'/'never'/'no longer'
        "Janet hardly makes $18 per day.",
        "Nobody makes $18 per day.",
        "Janet makes up to $18 per day.",  # a bound, like 'at most' (which is caught)
        "Janet makes $18 per day plus tips.",  # the number is a part of the answer
        "Janet makes $18 per day minus costs.",
        "Janet makes $18ish per day.",
        "Janet apparently makes $18 per day.",  # hedges other than 'probably'
        "Janet seems to make $18 per day.",
        "Janet makes $18 per day, supposedly.",
        "Janet makes $18 per day, allegedly.",
        "Janet makes $18 per day, presumably.",
        "Janet makes $18 per day, likely.",
    ],
)
def test_a_sentence_that_does_not_assert_the_number_is_wrong(sentence, policy):
    assert verdict("18", f"<answer>{sentence}</answer>", policy) is False


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "gold, answer",
    [
        (r"(-\infty,a)\cup(b,\infty)", r"\mathbb{R}\setminus[a,b]"),  # letters for the ends
        (r"\mathbb{R}\setminus[a,b]", r"(-\infty,a)\cup(b,\infty)"),  # the same, written as the gold
        (r"(-\infty,-2)\cup(3,\infty)", r"\mathbb R\setminus[-2,3]"),  # \mathbb R without braces
        (r"(-\infty,-2)\cup(3,\infty)", r"\mathbb{R}\backslash[-2,3]"),  # \backslash for set minus
        (r"(-\infty,-2)\cup(3,\infty)", r"\mathbb{R}-[-2,3]"),
    ],
)
def test_the_reals_minus_an_interval_in_other_spellings(gold, answer, policy):
    assert verdict(gold, rf"The answer is $\boxed{{{answer}}}$.", policy) is True


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "completion",
    [
        r"The answer is $\boxed{\text{No}}$.",  # \boxed{No} is read; \text{No} inside the box is not (not new)
        r"$\boxed{\text{No}}$, because 4 is even.",
    ],
)
def test_honest_yes_no_spellings_are_read(completion, policy):
    assert verdict("No", completion, policy) is True


@pytest.mark.parametrize("policy", POLICIES)
def test_a_yes_no_with_an_em_dash_before_its_reason(policy):
    assert verdict("No", "<answer>No \u2014 4 is even.</answer>", policy) is True


@pytest.mark.parametrize("policy", POLICIES)
def test_a_part_corrected_before_the_parts_are_listed(policy):
    # a retraction between boxes ends the chain: what follows "no," is the answer, as "\\boxed{3}. Wait, actually
    # \\boxed{4}" is 4 (the lead's call on the red team's case, which expected 0)
    assert verdict("(12, 5)", r"(a) \boxed{13}, no, (a) \boxed{12}, (b) \boxed{5}", policy) is True
