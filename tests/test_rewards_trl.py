"""The R1 rewards inside real TRL trainers (GRPO and RLOO) on the tiny model, conversational and plain text."""

import pytest
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

from trl_r1.rewards import format_reward
from trl_r1.rewards.language import language_consistency_reward
from trl_r1.rewards.math import math_accuracy_reward

REWARDS = [format_reward, math_accuracy_reward, language_consistency_reward]
NAMES = ["format_reward", "math_accuracy_reward", "language_consistency_reward"]


class LogRecorder(TrainerCallback):
    def __init__(self):
        self.logs = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs or {}))


def arithmetic_rows(conversational):
    rows = []
    for a, b in [(1, 2), (3, 4), (2, 2), (5, 1)]:
        question = f"What is {a} + {b}? Think in <think> tags, answer in <answer> tags."
        prompt = [{"role": "user", "content": question}] if conversational else question
        rows.append({"prompt": prompt, "solution": str(a + b), "language": "en"})
    return Dataset.from_list(rows)


def common_args(tmp_path):
    return dict(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=4,
        max_completion_length=12, logging_steps=1, save_strategy="no", report_to="none",
        use_cpu=True, bf16=False, seed=0,
    )


def logged_reward_names(logs):
    return {key.split("/")[1] for log in logs for key in log if key.startswith("rewards/") and key.endswith("/mean")}


@pytest.mark.parametrize(
    "trainer_class, config_class, conversational",
    [(GRPOTrainer, GRPOConfig, True), (GRPOTrainer, GRPOConfig, False), (RLOOTrainer, RLOOConfig, True)],
    ids=["grpo-conversational", "grpo-plain_text", "rloo-conversational"],
)
def test_trainer_runs_all_rewards_and_logs_them(tiny_model_dir, tmp_path, trainer_class, config_class, conversational):
    recorder = LogRecorder()
    trainer = trainer_class(
        model=tiny_model_dir, reward_funcs=REWARDS, args=config_class(**common_args(tmp_path)),
        train_dataset=arithmetic_rows(conversational), callbacks=[recorder],
    )
    trainer.train()
    assert logged_reward_names(recorder.logs) >= set(NAMES)
    for log in recorder.logs:
        for name in NAMES:
            if f"rewards/{name}/mean" in log:
                value = log[f"rewards/{name}/mean"]
                assert value != value or 0.0 <= value <= 1.0  # NaN only when every sample was skipped


def test_rewards_score_known_completions_like_trl_passes_them():
    """The exact call TRL makes: keyword arguments, repeated dataset columns, helper callbacks."""
    completions = [
        [{"role": "assistant", "content": "<think>Two plus three is five.</think><answer>5</answer>"}],
        [{"role": "assistant", "content": "<think>Two plus three is six.</think><answer>6</answer>"}],
    ]
    metrics = {}
    kwargs = dict(
        prompts=[[{"role": "user", "content": "What is 2 + 3?"}]] * 2, completions=completions,
        completion_ids=[[1, 2], [1, 2]], solution=["5", "5"], language=["en", "en"], trainer_state=None,
        log_metric=lambda name, value: metrics.__setitem__(name, value), log_extra=lambda column, values: None,
    )
    assert format_reward(**kwargs) == [1.0, 1.0]
    assert math_accuracy_reward(**kwargs) == [1.0, 0.0]
    assert language_consistency_reward(**kwargs) == [1.0, 1.0]
    assert metrics["math_accuracy_reward/skipped"] == 0.0


def test_a_math_reward_without_its_gold_column_warns_once_inside_a_real_trainer(tiny_model_dir, tmp_path, caplog):
    """Issue 35 item 7: a user's dataset names its gold `gold`; the math reward cannot score a single sample. TRL
    would show `rewards/math_accuracy_reward/mean: None` and train on format alone: the reward says so at WARNING,
    once (not every step), with the columns TRL passed and the key that fixes it."""
    import logging

    from trl_r1.rewards.math import MathAccuracyReward

    rows = arithmetic_rows(conversational=False).rename_column("solution", "gold")
    args = GRPOConfig(**common_args(tmp_path))
    trainer = GRPOTrainer(model=tiny_model_dir, reward_funcs=[MathAccuracyReward(), format_reward], args=args,
                          train_dataset=rows)
    with caplog.at_level(logging.INFO, logger="trl_r1"):
        trainer.train()  # two steps: two reward calls
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "cannot score" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "'gold'" in warnings[0] and "'language'" in warnings[0] and "gold_column=" in warnings[0]
    fixed = MathAccuracyReward(gold_column="gold")
    assert fixed(completions=["<answer>3</answer>"], gold=["3"], language=["en"]) == [1.0]
