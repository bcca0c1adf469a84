"""Red team of issue 37 (a researcher's run from Python), blind: misuse of R1GRPOTrainer / R1PPOTrainer, their configs,
the estimator registries and custom rewards, other than what issue 37 lists. Each test is one misuse on the tiny model
(one training step at most), asserting what a TRL user expects: TRL's own error where TRL has one, else an error at
config or construction time that names the field, the column or the reward; or training that stays finite. Where
main misbehaves the test is `xfail(strict=True)` and its reason says what happens today."""

import logging
import math

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig

from trl_r1.algorithms import ADVANTAGE_ESTIMATORS, KL_ESTIMATORS
from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer, R1PPOConfig, R1PPOTrainer

PROMPTS = [f"What is {a} + {b}?" for a in range(4) for b in range(4)]


def conversational(**columns) -> Dataset:
    return Dataset.from_list([{"prompt": [{"role": "user", "content": p}], "solution": "0", **columns} for p in PROMPTS])


def settings(output_dir, **overrides) -> dict:
    return {**dict(output_dir=str(output_dir), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                   per_device_train_batch_size=8, num_generations=4, max_completion_length=8, logging_steps=1,
                   seed=0, disable_tqdm=True, max_steps=1, learning_rate=1e-2), **overrides}


def constant_one(prompts, completions, **kwargs):
    return [1.0] * len(completions)


def first_is_infinite(prompts, completions, **kwargs):
    """A verifier whose score overflowed for one completion (e.g. a length-normalised score of an empty answer)."""
    return [math.inf if i == 0 else float(i % 2) for i in range(len(completions))]


def always_nan(prompts, completions, **kwargs):
    return [math.nan] * len(completions)


def one_string(prompts, completions, **kwargs):
    return ["1.0"] * len(completions)


def one_scalar(prompts, completions, **kwargs):
    return 1.0


def booleans(prompts, completions, **kwargs):
    return [True] * len(completions)


def a_tensor(prompts, completions, **kwargs):
    return torch.ones(len(completions))


def crashes(prompts, completions, **kwargs):
    raise RuntimeError("verifier crashed on its own input")


@pytest.fixture
def trainer(tiny_model_dir, tmp_path):
    """`trainer(reward, dataset=..., cls=R1GRPOTrainer, **config)`: a trainer on the tiny model."""
    def make(reward=constant_one, dataset=None, cls=R1GRPOTrainer, peft_config=None, **overrides):
        config_cls = R1PPOConfig if cls is R1PPOTrainer else R1GRPOConfig
        return cls(model=tiny_model_dir, reward_funcs=reward, args=config_cls(**settings(tmp_path, **overrides)),
                   train_dataset=conversational() if dataset is None else dataset, peft_config=peft_config)

    return make


def finite(trainer_) -> bool:
    return all(torch.isfinite(p).all() for p in trainer_.model.parameters())


def last_log(trainer_, key: str):
    return next(h[key] for h in trainer_.state.log_history if key in h)


# ------------------------------------------------------------------------------------------- configs


@pytest.mark.parametrize("estimator", ["K3", "kl3", "low-var-kl"])
def test_an_unknown_kl_estimator_fails_even_without_beta(tmp_path, estimator):
    with pytest.raises(ValueError, match=rf"kl_estimator='{estimator}' is not one of \['k1', 'k2', 'k3'"):
        R1GRPOConfig(**settings(tmp_path, kl_estimator=estimator))


def test_registering_an_estimator_name_twice_fails():
    with pytest.raises(ValueError, match="advantage estimator 'grpo' is already registered"):
        ADVANTAGE_ESTIMATORS.register("grpo", level="sequence")(lambda scores, group_size: scores)
    with pytest.raises(ValueError, match="KL estimator 'k1' is already registered"):
        KL_ESTIMATORS.register("k1", unbiased="value")(lambda logp, ref_logp: logp)


def test_nan_coefficients_that_are_checked(tmp_path):
    with pytest.raises(ValueError, match="lam must be in"):
        R1PPOConfig(**settings(tmp_path, lam=math.nan))
    with pytest.raises(ValueError, match="gamma must be in"):
        R1GRPOConfig(**settings(tmp_path, gamma=math.nan))


def test_ppo_config_has_no_advantage_estimator_field(tmp_path):
    with pytest.raises(TypeError, match="advantage_estimator"):
        R1PPOConfig(**settings(tmp_path, advantage_estimator="rloo"))


def test_num_generations_that_do_not_divide_the_batch(tmp_path):
    with pytest.raises(ValueError, match="divisible by num_generations"):
        R1GRPOConfig(**settings(tmp_path, num_generations=3))


@pytest.mark.parametrize("field, value", [("beta", -0.1), ("beta", math.nan), ("temperature", 0.0),
                                          ("max_completion_length", 0), ("num_iterations", 0), ("epsilon", -0.2)])
def test_grpo_values_that_cannot_train(tmp_path, field, value):
    with pytest.raises(ValueError, match=field):
        R1GRPOConfig(**settings(tmp_path, **{field: value}))


@pytest.mark.parametrize("field, value", [("kl_coef", math.nan), ("vf_coef", math.nan), ("num_iterations", 0)])
def test_ppo_values_that_cannot_train(tmp_path, field, value):
    with pytest.raises(ValueError, match=field):
        R1PPOConfig(**settings(tmp_path, **{field: value}))


# ------------------------------------------------------------------------------------------- custom rewards


def test_a_reward_of_the_wrong_length_is_trls_error(trainer):
    def short(prompts, completions, **kwargs):
        return [1.0] * (len(completions) - 1)

    with pytest.raises(ValueError, match="The reward function 'short' returned 7 rewards, but 8 were expected"):
        trainer(short).train()


def test_a_reward_that_raises_is_not_swallowed(trainer):
    with pytest.raises(RuntimeError, match="verifier crashed on its own input"):
        trainer(crashes).train()


@pytest.mark.parametrize("reward", [booleans, a_tensor])
def test_rewards_as_booleans_or_a_tensor_score_as_numbers(trainer, reward):
    run = trainer(reward)
    run.train()
    assert last_log(run, f"rewards/{reward.__name__}/mean") == 1.0


@pytest.mark.parametrize("reward", [one_string, one_scalar])
def test_a_reward_of_the_wrong_type_is_named(trainer, reward):
    with pytest.raises((TypeError, ValueError), match=reward.__name__):
        trainer(reward).train()


@pytest.mark.parametrize("cls, overrides", [(R1GRPOTrainer, {"advantage_estimator": "rloo"}), (R1PPOTrainer, {})])
def test_an_infinite_reward_never_poisons_the_weights(trainer, cls, overrides):
    run = trainer(first_is_infinite, cls=cls, **overrides)
    try:
        run.train()
    except ValueError as error:
        assert "first_is_infinite" in str(error)
    else:
        assert finite(run)


def test_trls_grpo_stays_finite_with_an_infinite_reward(trainer):
    run = trainer(first_is_infinite)
    run.train()
    assert finite(run)


def test_a_reward_that_is_always_nan_says_so(trainer, caplog):
    run = trainer(always_nan)
    with caplog.at_level(logging.WARNING):
        run.train()
    assert any("always_nan" in record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING)


def test_reward_weights_of_another_length_is_trls_error(trainer):
    with pytest.raises(ValueError, match=r"Number of reward weights \(2\) must match number of reward functions \(1\)"):
        trainer(reward_weights=[1.0, 2.0])


def test_no_rewards_is_trls_error(trainer):
    with pytest.raises(ValueError, match="No reward source provided"):
        trainer([])


# ------------------------------------------------------------------------------------------- datasets


@pytest.mark.parametrize("rows", [
    [{"question": p, "solution": "0"} for p in PROMPTS],
    [{"messages": [{"role": "user", "content": p}], "solution": "0"} for p in PROMPTS]])
def test_a_dataset_without_a_prompt_column_fails_at_construction(trainer, rows):
    with pytest.raises(ValueError, match="prompt"):
        trainer(dataset=Dataset.from_list(rows))


def test_an_empty_dataset(trainer):
    with pytest.raises(ValueError, match="empty"):
        trainer(dataset=conversational().select([])).train()


def test_fewer_prompts_than_one_generation_batch(trainer):
    run = trainer(dataset=conversational().select([0]))
    try:
        run.train()
    except ValueError as error:
        assert "batch" in str(error)
    else:
        assert run.state.global_step == 1


# ------------------------------------------------------------------------------------------- models, peft, args


def test_peft_target_modules_the_model_has_not_got(trainer):
    with pytest.raises(ValueError, match=r"Target modules \{'qkv'\} not found"):
        trainer(peft_config=LoraConfig(target_modules=["qkv"]))


def test_ppo_with_a_lora_adapter_trains_finite(trainer):
    run = trainer(cls=R1PPOTrainer, peft_config=LoraConfig(target_modules=["q_proj", "v_proj"]))
    run.train()
    assert run.state.global_step == 1 and finite(run)


def test_processing_class_given_as_a_path_is_trls_error(tiny_model_dir, tmp_path):
    with pytest.raises(TypeError, match="processing_class"):
        R1GRPOTrainer(model=tiny_model_dir, reward_funcs=constant_one, args=R1GRPOConfig(**settings(tmp_path)),
                      train_dataset=conversational(), processing_class=tiny_model_dir)


def test_evaluation_without_an_eval_dataset_is_transformers_error(trainer):
    with pytest.raises(ValueError, match="eval_dataset"):
        trainer(eval_strategy="steps", eval_steps=1)


# ------------------------------------------------------------------------------------------- custom estimators


@pytest.fixture
def registries(monkeypatch):
    """The estimator registries, restored after the test (a custom estimator registered here is gone after it)."""
    for registry in (ADVANTAGE_ESTIMATORS, KL_ESTIMATORS):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    return ADVANTAGE_ESTIMATORS, KL_ESTIMATORS


def alternating(prompts, completions, **kwargs):
    return [float(i % 2) for i in range(len(completions))]


def groupsize_typo(scores, groupsize):
    return scores - scores.mean()


def a_scalar_advantage(scores, group_size):
    return scores.mean()


def half_the_advantages(scores, group_size):
    return scores[: len(scores) // 2]


def centred(scores, group_size):
    return scores - scores.mean()


def a_scalar_kl(logp, ref_logp):
    return (logp - ref_logp).sum()


def test_a_custom_estimator_with_an_unknown_parameter_fails_before_training(registries, tmp_path):
    advantages, _ = registries
    with pytest.raises((TypeError, ValueError), match="groupsize"):
        advantages.register("typo_estimator", level="sequence")(groupsize_typo)
        R1GRPOConfig(**settings(tmp_path, advantage_estimator="typo_estimator"))


def test_a_custom_estimator_without_its_level_fails_at_registration(registries):
    advantages, _ = registries
    with pytest.raises((TypeError, ValueError), match="level"):
        advantages.register("no_level")(centred)


@pytest.mark.parametrize("estimator", [a_scalar_advantage, half_the_advantages])
def test_a_custom_estimator_of_the_wrong_shape_is_named(registries, trainer, estimator):
    registries[0].register(estimator.__name__, level="sequence")(estimator)
    with pytest.raises(ValueError, match=estimator.__name__):
        trainer(alternating, advantage_estimator=estimator.__name__).train()


def test_a_custom_estimator_of_the_right_shape_trains(registries, trainer):
    registries[0].register("centred", level="sequence")(centred)
    run = trainer(alternating, advantage_estimator="centred")
    run.train()
    assert run.state.global_step == 1 and finite(run)


def test_a_custom_kl_estimator_of_the_wrong_shape_is_named(registries, trainer):
    registries[1].register("a_scalar_kl", unbiased="value")(a_scalar_kl)
    with pytest.raises(ValueError, match="a_scalar_kl"):
        trainer(alternating, beta=0.1, kl_estimator="a_scalar_kl").train()
