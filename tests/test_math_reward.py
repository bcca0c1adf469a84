"""math_accuracy_reward through TRL's keyword protocol: completion formats, gold columns, skips, pickling."""

import pickle

from trl_r1.rewards import get_reward_func
from trl_r1.rewards.math import MathAccuracyReward, math_accuracy_reward


def conv(content, **extra):
    return [{"role": "assistant", "content": content, **extra}]


def test_plain_and_conversational_completions():
    completions = ["<think>2+3=5</think><answer>5</answer>", "<think>2+3=6</think><answer>6</answer>"]
    assert math_accuracy_reward(completions=completions, solution=["5", "5"]) == [1.0, 0.0]
    assert math_accuracy_reward(completions=[conv(c) for c in completions], solution=["5", "5"]) == [1.0, 0.0]


def test_reasoning_in_a_separate_field_is_not_the_answer():
    """A tokenizer's response schema may split the reasoning out; a box in it must not count as the answer."""
    completion = conv("The answer is $\\boxed{6}$.", reasoning_content="maybe \\boxed{5}")
    assert math_accuracy_reward(completions=[completion], solution=["5"]) == [0.0]
    assert math_accuracy_reward(completions=[conv("<answer>5</answer>", reasoning_content="2+3")], solution=["5"]) == [1.0]


def test_gold_column_and_fallbacks():
    completions = ["The answer is \\boxed{\\frac{1}{2}}.", "The answer is 1,234."]
    assert math_accuracy_reward(completions=completions, solution=["\\boxed{0.5}", None], answer=["9", "1234"]) == [1.0, 1.0]
    reward = MathAccuracyReward(gold_column="final", fallback_columns=())
    assert reward(completions=completions, final=["0.5", "1234"], solution=["7", "7"]) == [1.0, 1.0]


def test_missing_or_unusable_gold_is_skipped_with_logged_reasons():
    metrics, extra = {}, {}
    scores = math_accuracy_reward(
        completions=["The answer is 3.", "The answer is 3.", "The answer is 3.", "I think so."],
        solution=["", "\\frac{", "3", "3"],
        log_metric=lambda name, value: metrics.__setitem__(name, value),
        log_extra=lambda name, values: extra.__setitem__(name, values),
    )
    assert scores == [None, None, 1.0, 0.0]
    assert metrics == {"math_accuracy_reward/skipped": 0.5}
    reasons = extra["math_accuracy_reward_reason"]
    assert reasons[0].startswith("missing gold") and reasons[1].startswith("gold does not parse")
    assert reasons[2] == "" and reasons[3] == "no final answer"
    assert math_accuracy_reward(completions=["The answer is 3."]) == [None]  # no gold column at all


def test_batch_with_repeated_gold_like_grpo_groups():
    completions = [f"The answer is \\boxed{{{a}}}." for a in ["\\sqrt{117}", "3\\sqrt{13}", "3\\sqrt{12}", "39"]]
    assert MathAccuracyReward(workers=2)(completions=completions, solution=["3\\sqrt{13}"] * 4) == [1.0, 1.0, 0.0, 0.0]


def test_picklable_and_registered():
    restored = pickle.loads(pickle.dumps(MathAccuracyReward(gold_column="answer", timeout_s=1.5)))
    assert (restored.gold_column, restored.timeout_s, restored.__name__) == ("answer", 1.5, "math_accuracy_reward")
    assert restored(completions=["The answer is 4."], answer=["4"]) == [1.0]
    assert pickle.loads(pickle.dumps(math_accuracy_reward)).__name__ == "math_accuracy_reward"
    assert get_reward_func("math") is math_accuracy_reward
    assert get_reward_func("math_accuracy", gold_column="answer").gold_column == "answer"


def test_a_calculation_is_not_rewarded_as_its_result(caplog):
    """R1-Zero on SmolLM2-135M-Instruct found this hack: answer "What is 4 + 3 + 9?" with <answer>4 + 3 + 9</answer>,
    which sympy finds equal to 16. The RL reward (marked answers) wants the result and says why it gave 0; grading
    (bare answers) still counts an equivalent expression, and a result in any exact form still counts."""
    import logging

    reward = MathAccuracyReward()
    hacks = ["<answer>4 + 3 + 9</answer>", r"<answer>2 \times 8</answer>", "<answer>20 - 4</answer>",
             r"\boxed{(4+3)+9}", "The answer is 32 \\div 2.", "<answer>32/2</answer>", r"<answer>\frac{32}{2}</answer>",
             r"\boxed{2^4}", r"<answer>\sqrt{256}</answer>", "<answer>[4+3]+9</answer>"]
    with caplog.at_level(logging.DEBUG, logger="trl_r1"):  # rule-based zeros are logged at debug, with the reason
        assert reward(completions=hacks, solution=["16"] * len(hacks)) == [0.0] * len(hacks)
    assert f"math_accuracy_reward: unevaluated arithmetic x{len(hacks)}" in caplog.text
    results = ["<answer>16</answer>", "<answer>16.0</answer>", "<answer>(16)</answer>", "<answer>x = 16</answer>",
               "<answer>4 + 3 + 9 = 16</answer>"]
    assert reward(completions=results, solution=["16"] * len(results)) == [1.0] * len(results)
    # a decimal gold is an approximation: an exact form answers it
    assert reward(completions=[r"<answer>\sqrt{2}</answer>"], solution=["1.4142"]) == [1.0]
    # not a plain-number gold: expressions are answers there
    assert reward(completions=[r"<answer>1+\sqrt{2}</answer>", "<answer>x + 1</answer>"],
                  solution=[r"\sqrt{2}+1", "1+x"]) == [1.0, 1.0]
    assert MathAccuracyReward(answer_policy="bare")(completions=["4 + 3 + 9"], solution=["16"]) == [1.0]
