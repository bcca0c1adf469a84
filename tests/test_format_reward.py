"""The format reward's rules (strict, template-aware, answer optional, soft) and the reward protocol."""

import pickle

import pytest

from trl_r1.rewards import FormatReward, format_reward, get_reward_funcs, soft_format_reward
from trl_r1.rewards.base import RewardFunction, Score


def conv(text, **extra):
    return [{"role": "assistant", "content": text, **extra}]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>2+3 is 5</think><answer>5</answer>", 1.0),
        ("  <think>\nreasoning\n</think>\n\n<answer>\n5\n</answer>\n", 1.0),
        ("<think></think><answer>5</answer>", 1.0),  # empty reasoning is the accuracy reward's business
        ("<think>a</think><answer>5</answer> trailing", 0.0),  # trailing text
        ("preamble <think>a</think><answer>5</answer>", 0.0),  # leading text
        ("<think>a</think> between <answer>5</answer>", 0.0),  # text between blocks
        ("<think>a</think><answer>  </answer>", 0.0),  # empty answer
        ("<think>a</think><answer>5</answer><answer>6</answer>", 0.0),  # repeated block
        ("<think>a</think><think>b</think><answer>5</answer>", 0.0),
        ("<think>a<think>b</think></think><answer>5</answer>", 0.0),  # nested
        ("<answer>5</answer><think>a</think>", 0.0),  # wrong order
        ("<think>a<answer>5</answer></think>", 0.0),  # answer inside think
        ("<think>a</think><answer>5", 0.0),  # unclosed
        ("<think>a<answer>5</answer>", 0.0),
        ("The answer is 5", 0.0),
        ("", 0.0),
    ],
)
def test_strict_format(text, expected):
    assert format_reward(completions=[text]) == [expected]
    assert format_reward(completions=[conv(text)]) == [expected]


def test_template_prefilled_think_from_plain_prompt():
    prompt = "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n<think>\n"
    good, repeated = "2+3=5</think><answer>5</answer>", "<think>2+3=5</think><answer>5</answer>"
    assert format_reward(prompts=[prompt, prompt], completions=[good, repeated]) == [1.0, 0.0]
    # without the prefilled prompt, the same completion is missing its opening tag
    assert format_reward(prompts=["What is 2+3?"], completions=[good]) == [0.0]


def test_template_prefilled_think_explicit_option_for_conversations():
    reward = FormatReward(think_prefilled=True)
    assert reward(prompts=[[{"role": "user", "content": "q"}]], completions=[conv("r</think><answer>5</answer>")]) == [1.0]


def test_separate_reasoning_field():
    completion = conv("<answer>5</answer>", reasoning_content="2 plus 3 is 5")
    assert format_reward(completions=[completion]) == [1.0]
    assert FormatReward(think_prefilled=True)(completions=[completion]) == [1.0]
    assert format_reward(completions=[conv("<answer>5</answer>", thinking="2+3")]) == [1.0]


def test_answer_block_optional():
    reward = FormatReward(require_answer=False)
    assert reward(completions=["<think>a</think> The answer is 5."]) == [1.0]
    assert reward(completions=["<think>a</think><answer>5</answer>"]) == [1.0]
    assert reward(completions=["<think>a</think>   "]) == [0.0]
    assert reward(completions=["<think>a</think> 5 <think>b</think>"]) == [0.0]
    assert format_reward(completions=["<think>a</think> The answer is 5."]) == [0.0]


def test_soft_format_partial_credit():
    texts = [
        "<think>a</think><answer>5</answer>",
        "<think>a</think> 5",
        "<think>a",
        "x <think>a</think><answer>5</answer>",  # opening tag not at the start
        "<think>a</think><answer>5</answer> tail",  # closing answer not at the end
        "no tags",
    ]
    assert soft_format_reward(completions=texts) == [1.0, 0.5, 0.25, 0.75, 0.75, 0.0]


def test_bad_input_never_raises_and_is_skipped_with_reason():
    logged = {}
    scores = format_reward(
        prompts=[None, None, None], completions=[None, 42, "<think>a</think><answer>5</answer>"],
        log_metric=lambda name, value: logged.__setitem__(name, value),
        log_extra=lambda column, values: logged.__setitem__(column, values),
    )
    assert scores == [None, None, 1.0]
    assert logged["format_reward/skipped"] == pytest.approx(2 / 3)
    assert "bad completion" in logged["format_reward_reason"][0]


def test_huge_and_malformed_text_is_fast():
    text = "<think>" + "<answer>" * 50_000 + "x" * 1_000_000
    assert format_reward(completions=[text]) == [0.0]


def test_scoring_bug_costs_one_sample_not_the_batch():
    class Flaky(RewardFunction):
        __name__ = "flaky"

        def score(self, sample):
            if sample.text == "boom":
                raise ValueError("bad")
            if sample.text == "nan":
                return Score(float("nan"))
            return Score(1.0)

    # the sample that raised scores 0.0 (issue 36: it caused the failure); a NaN is the reward's bug: skipped
    assert Flaky()(completions=["ok", "boom", "nan"]) == [1.0, 0.0, None]


def test_a_score_that_cannot_become_a_float_costs_its_sample_only():
    class Exiting:  # a reward bug: a score object whose conversion ends the interpreter
        def __float__(self):
            raise SystemExit(3)

    class Broken(RewardFunction):
        __name__ = "broken"

        def score(self, sample):
            return Score(Exiting() if sample.text == "exit" else 1.0)

    reasons = {}
    assert Broken()(completions=["ok", "exit"], log_extra=reasons.__setitem__) == [1.0, None]
    assert reasons["broken_reason"][1].startswith("error: non-numeric score (SystemExit")


def test_a_failed_batch_of_a_batch_only_reward_is_rescored_one_sample_at_a_time():
    class BatchOnly(RewardFunction):  # like the math and code rewards: score_batch, no score
        __name__ = "batch_only"

        def score_batch(self, samples):
            if any(s.text == "boom" for s in samples):
                raise ValueError("bad sample")
            return [Score(float(len(s.text))) for s in samples]

    reasons = {}
    assert BatchOnly()(completions=["ok", "boom", "abc"], log_extra=reasons.__setitem__) == [2.0, 0.0, 3.0]
    assert reasons["batch_only_reason"] == ["", "error: ValueError: bad sample", ""]


def test_rewards_are_picklable_and_named_for_trl():
    for reward in get_reward_funcs(["format", "soft_format", {"name": "format", "require_answer": False}]):
        clone = pickle.loads(pickle.dumps(reward))
        assert clone.__name__ == reward.__name__
        assert clone(completions=["<think>a</think><answer>5</answer>"]) == [1.0]


def test_unknown_reward_name_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown reward 'formt'"):
        get_reward_funcs(["formt"])


def test_log_levels_separate_failures_skips_and_routine_scores(caplog):
    class Mixed(RewardFunction):
        __name__ = "mixed"

        def score(self, sample):
            if sample.text == "boom":
                raise ValueError("bad")
            return Score(None, "no gold") if sample.text == "skip" else Score(0.0, "malformed")

    with caplog.at_level("DEBUG", logger="trl_r1.rewards"):
        Mixed()(completions=["boom", "skip", "zero"])
    levels = {record.levelname: record.getMessage() for record in caplog.records}
    assert "error: ValueError: bad" in levels["WARNING"] and "no gold x1" in levels["INFO"] and "malformed x1" in levels["DEBUG"]


def test_a_degenerate_completion_repeating_the_answer_tag_is_scored_at_once():
    """A policy stuck in a loop can emit `<answer>` thousands of times; the regex that found the last block
    rescanned to the end from each one (28 s for 20,000 tags in the math reward). Now it is linear."""
    import time

    from trl_r1.verifiers.format import extract_answer

    text = "<answer>" * 20_000 + "7"
    start = time.process_time()
    assert extract_answer(text) == "7"  # the unclosed last block still holds the answer
    assert extract_answer(f"<think>x</think>{text}</answer>") == "<answer>" * 19_999 + "7"  # findall's match
    assert time.process_time() - start < 1.0  # was ~28 s of CPU


def test_the_soft_reward_reaches_full_credit_only_with_the_strict_format():
    """R1-Zero on SmolLM2 settled on shells: first all four tags around an empty answer (full partial credit,
    strict format 0), then, once that scored 0.75, the empty shell a prompt naming the tags shows
    (`<think> </think> <answer> </answer>`). Every sample at the shell's score leaves no group with a reward
    difference to learn from. Full soft credit is the strict format's alone, and an empty block earns no closing
    tag, so any content scores above the shell."""
    soft, strict = FormatReward(soft=True), FormatReward()
    shells = ["<think>4 + 3 is 7.</think><answer> </answer>", "<think>a</think> so <answer>5</answer>"]
    assert soft(completions=shells) == [0.75] * 2 and strict(completions=shells) == [0.0] * 2
    empty = ["<think></think><answer></answer>", "<think> </think>\n<answer> </answer>"]
    assert soft(completions=empty) == [0.5] * 2 and strict(completions=empty) == [0.0] * 2
    assert soft(completions=["<think> </think> <answer>13</answer>"]) == [0.75]  # the strict format, no reasoning
    assert soft(completions=["<think>4 + 3 is 7.</think><answer>7</answer>"]) == [1.0]


def test_broken_tags_are_not_the_format():
    """R1-Zero on SmolLM2 (seed 1, once empty blocks earned no soft credit) settled on blocks whose only content
    was a broken tag: `<think> </think</think> <answer> </answer</answer>` passed the strict format with the
    answer "</answer". A tag-like fragment that is not an exact tag fails the strict format, and is no content
    for the soft one."""
    soft, strict = FormatReward(soft=True), FormatReward()
    hacks = ["<think> </think</think>\n<answer> </answer</answer>", "<think>a</think><answer>< answer>5</answer>",
             "<think>a /think></think><answer>5</answer>", "<think>a</think><answer><Answer>5</answer>",
             "<think>a</think><answer>5</ANSWER></answer>"]
    assert strict(completions=hacks) == [0.0] * len(hacks)
    assert soft(completions=hacks[:1]) == [0.5]  # the empty shell's score
    fine = ["<think>I think x > 3 and y < 5.</think><answer>5</answer>", "<think>a</think>\n<answer>thinking</answer>"]
    assert strict(completions=fine) == [1.0, 1.0]
