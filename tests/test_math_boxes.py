"""Broken or unusual boxes, answer phrases and completions that run on into a new chat turn: read when the answer
they hold is unambiguous, never when they hold two values or an unfinished list or command.
"""

import time

import pytest

from trl_r1.verifiers.math import check

REASONING = "<think>\nThe area is 3 times 4, and the perimeter is 14.\n</think>\n"

READ = [  # (gold, completion)
    ("12", r"So the area is $\boxed{12$."),  # a box never closed, its math closed after it
    ("12", r"So the area is \[\boxed{12\]"),
    (r"\frac{1}{2}", r"The probability is $\boxed{\frac{1}{2}$."),
    ("12", r"So the area is $\boxed{12 \\}$."),  # a line break closing the box
    ("12", r"So the area is $\boxed{12 \\[2pt]}$."),
    ("12", r"So the area is $\boxed{12 \\* }$."),
    ("12", r"So the area is $\boxed{12 \cr}$."),
    ("12", "So the area is \\boxed{12. That is all."),  # a box never closed, its sentence ended
    ("12", "So the area is \\boxed{12 square units"),  # a number followed by its unit is complete
    (r"\frac{1}{2}", "So the probability is \\boxed{\\frac{1}{2}"),  # only the outer brace is missing
    ("12", "The area is \\boxed{12\nLet me double-check: 3 times 4 is 12."),
    ("12", r"So the area is $\boxed{12\newline}$."),
    ("(3,4)", r"The point is $\boxed{\left( 3, 4 )}$."),  # an unmatched \left
    ("(3,4)", r"The point is $\boxed{( 3, 4 \right)}$."),
    ("12", r"So the area is $\boxed 12$."),  # one token without braces
    ("12", r"So the area is $\boxed12$."),
    ("-5", r"So $x = \boxed{-5}$ and we write $\boxed -5$."),
    ("1,000", r"The total is $\boxed 1,000$."),
    ("B", r"The correct option is \boxed B."),
    ("12", r"\boxed{The answer is 12}"),  # a sentence around the answer
    ("12", r"\boxed{\text{The area is } 12 \text{ square units}}"),
    ("12", r"\boxed{\text{There are 12 apples in total}}"),
    ("12", r"\boxed{\text{The answer is twelve}}"),
    ("12", r"\boxed{\text{There are 12}}"),
    ("7", r"\boxed{\text{There are seven}}"),
    ("12", r"\boxed{12 \text{ is the answer}}"),
    ("12", "Final answer: 12"),  # answer phrases
    ("12", "**Final Answer**: 12"),
    ("12", "**Final Answer:** $12$"),
    ("12", "The answer to the problem is 12."),
    ("12", "The answer to this question is $12$."),
    ("12", "the answer is $12$"),
    ("12", "The answer is therefore 12."),
    ("12", "The answer would be 12."),
    ("12", "The answer turns out to be 12."),
    ("12", "Final Answer\n12"),
    ("12", "**Final Answer**\n\n$$12$$"),
    ("12", "The area is $\\boxed{12}$.<|im_end|>\n<|im_start|>user\nAnd the perimeter?<|im_end|>\n"
           "<|im_start|>assistant\nThe perimeter is $\\boxed{14}$."),  # only the first chat turn counts
    ("12", "The answer is 12.\n\nHuman: And the perimeter?\n\nAssistant: The answer is 14."),
    ("12", "The answer is 12.\nUser: And the perimeter?\nAssistant: The answer is 14."),
    ("12", "The answer is 12.\n### Instruction:\nAnd the perimeter?\n### Response:\nThe answer is 14."),
    ("12", "The answer is 12.</s><s>[INST] And the perimeter? [/INST] The answer is 14."),
    ("12", "The answer is 12.<|end|>\n<|user|>\nAnd the perimeter?<|end|>\n<|assistant|>\nThe answer is 14."),
    ("12", "The answer is $\\boxed{12}$<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 7 + 7? "
           "The answer is $\\boxed{14}$"),
    ("42", r"So the answer is $\boxed{42"),  # a completion that ends inside its box (issue 30's unclosed box)
    ("42", r"So the answer is \boxed{42."),
    ("-7", r"Putting everything together, we get \boxed{-7"),
    ("\\frac{3}{4}", "Therefore \\[\n\\boxed{\\frac{3}{4}"),
    ("12", "The answer is $\\boxed{12}$<end_of_turn>\n<start_of_turn>user\nAnd 14?"),
    ("12", "The answer is $\\boxed{12}$.<｜end▁of▁sentence｜><｜User｜>And the perimeter? \\boxed{14}"),
]


@pytest.mark.parametrize("policy", ["marked", "bare"])
@pytest.mark.parametrize("gold, completion", READ)
def test_unusual_boxes_phrases_and_first_turns_are_read(gold, completion, policy):
    assert check(gold, REASONING + completion, answer_policy=policy).equivalent is True


NOT_READ = [  # (gold, completion)
    ("1", r"So the answer is \boxed{1,"),  # a list that runs into the end is unfinished
    ("1", r"So the answer is \boxed{\frac"),  # so is a command
    ("1", r"So the answer is \boxed{x+1"),
    ("12", r"So the area is \boxed{12 or 13 square units"),
    ("12", r"So the area is $\boxed{12$ or $13$."),
    ("12", r"So the area is $\boxed{12 or 13$."),
    ("12", r"So the area is $\boxed{12, 13$."),
    ("12", r"So the area is $\boxed{12$. Wait, actually it is 13."),
    ("12", r"So the area is $\boxed 1 2$."),  # more than one token without braces
    ("12", r"So the area is $\boxed 12 + 1$."),
    ("1", r"The total is $\boxed 1,000$."),
    ("A", r"Put the letter in \boxed A to mark it. The answer is B."),
    ("12", "The wrong answer would be 12."),  # an answer phrase about another answer
    ("12", "A tempting answer is 12, but it fails."),
    ("12", "An incorrect answer is $12$."),
    ("12", "The answer would be 12 if n were even."),
    ("12", "The answer is just over 12."),
    ("12", r"\boxed{The answer is 12 or 13}"),  # a sentence with two values, or a hedge, states none
    ("12", r"\boxed{12 apples and 13 pears in total}"),
    ("12", r"\boxed{\text{The answer is 12, not 13}}"),
    ("12", r"\boxed{\text{The answer is maybe 12}}"),
    ("12", r"\boxed{\text{The answer is not 12}}"),
    ("12", r"\boxed{\text{12 is not the answer}}"),
    ("12", r"\boxed{\text{It is less than 12}}"),
    ("12", r"\boxed{\text{There are at least 12}}"),
    ("12", r"\boxed{\text{There are about 12}}"),
    ("12", r"\boxed{\text{I think 12 is the answer}}"),
    ("12", r"\boxed{\text{There are 12 if n is even}}"),
    ("12", r"\boxed{\text{The answer is 12 because 3 times 4 is 12}}"),
    ("14", "The answer is 12.\n\nHuman: And the perimeter?\n\nAssistant: The answer is 14."),  # a later turn
    ("14", "The answer is 12.\n### Instruction:\nAnd the perimeter?\n### Response:\nThe answer is 14."),
    ("14", "The answer is 12.</s><s>[INST] And the perimeter? [/INST] The answer is \\boxed{14}."),
    ("14", "The answer is 12.\nuser: and the perimeter?\nassistant: \\boxed{14}"),
    ("14", "The area is $\\boxed{12}$.<|im_end|>\n<|im_start|>user\nAnd the perimeter?<|im_end|>\n"
           "<|im_start|>assistant\nThe perimeter is $\\boxed{14}$."),
    ("12", "User: the answer is 12."),  # a new turn from the start: nothing of this completion is left
]


@pytest.mark.parametrize("policy", ["marked", "bare"])
@pytest.mark.parametrize("gold, completion", NOT_READ)
def test_ambiguous_or_cut_off_boxes_and_later_turns_are_not_answers(gold, completion, policy):
    assert check(gold, REASONING + completion, answer_policy=policy).equivalent is False


@pytest.mark.parametrize("text", [
    "\\boxed{5" + " " * 100_000 + "$",  # was minutes: a closing-claim scan from every space
    "$\\boxed{" + "{" * 100_000 + "$",
    "\\boxed{" * 14_000,
    "\\boxed 5 " * 11_000,
    "User:" * 20_000,
    "\\boxed{" + "\\left(" * 16_000 + "}",
    "The answer is 5" + " (" * 50_000,
    "The answer is 5" + " " * 100_000 + "(note)",
])
def test_long_adversarial_box_inputs_stay_fast(text):
    start = time.perf_counter()
    for policy in ("marked", "bare"):
        check("5", text, answer_policy=policy)
    assert time.perf_counter() - start < 5.0  # linear: under a second on a loaded CPU, minutes if quadratic
