"""R1PPOTrainer on the tiny model: learning a toy task, both critic layouts (one on a 4-bit base), KL in the reward,
critic warm-up, value clipping, checkpoint round trip of the critic, and config validation."""

import random

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import BitsAndBytesConfig, TrainerCallback
from trl import GRPOConfig

from trl_r1.algorithms import clipped_value_loss
from trl_r1.trainers import R1PPOConfig, R1PPOTrainer


def lora_config():
    return LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


def starts_with_digit(completions, **kwargs):
    """1.0 when the answer starts with a digit: one decision the tiny model learns within a few dozen steps."""
    return [float(text.lstrip()[:1].isdigit()) for text in completions]


def prompt_bonus(prompts, **kwargs):
    """1.0 for prompts ending in a digit. The policy cannot change it; a critic that reads the prompt can predict it,
    as a real critic predicts a prompt's difficulty."""
    return [float(prompt[-1].isdigit()) for prompt in prompts]


def no_reward(completions, **kwargs):
    return [0.0] * len(completions)


@pytest.fixture(scope="module")
def dataset():
    # Six random digits or six random letters, alternating (with shuffle_dataset=False every batch holds both kinds).
    rng = random.Random(0)
    alphabets = ["abcdefghij", "0123456789"]
    return Dataset.from_list([{"prompt": " ".join(rng.choice(alphabets[i % 2]) for _ in range(6))} for i in range(64)])


@pytest.fixture
def make_trainer(tiny_model_dir, dataset, tmp_path):
    def make(reward_funcs=(starts_with_digit,), peft_config=None, **overrides):
        options = {
            "output_dir": str(tmp_path),
            "use_cpu": True,
            "bf16": False,
            "report_to": "none",
            "save_strategy": "no",
            "per_device_train_batch_size": 8,
            "max_completion_length": 4,
            "learning_rate": 1e-2,
            "logging_steps": 1,
            "seed": 0,
            "shuffle_dataset": False,
            "disable_tqdm": True,
            "log_level": "error",
        }
        options.update(overrides)
        return R1PPOTrainer(
            model=tiny_model_dir,
            reward_funcs=list(reward_funcs),
            args=R1PPOConfig(**options),
            train_dataset=dataset,
            peft_config=peft_config,
        )

    return make


def _quarter_means(values):
    quarter = max(len(values) // 4, 1)
    return sum(values[:quarter]) / quarter, sum(values[-quarter:]) / quarter


def test_ppo_raises_reward_and_critic_explains_returns(make_trainer):
    trainer = make_trainer(
        reward_funcs=[starts_with_digit, prompt_bonus], per_device_train_batch_size=16, max_steps=60, value_lr=5e-3
    )
    trainer.train()
    logs = trainer.state.log_history

    rewards = [log["rewards/starts_with_digit/mean"] for log in logs if "rewards/starts_with_digit/mean" in log]
    first, last = _quarter_means(rewards)
    assert last > first + 0.05, rewards

    explained = [log["explained_variance"] for log in logs if "explained_variance" in log]
    first, last = _quarter_means(explained)
    assert last > first + 0.05 and last > 0.15, explained

    for key in ("value_loss", "value_clipfrac", "approx_kl", "policy_clipfrac", "kl", "kl/k1", "kl_coef"):
        values = [log[key] for log in logs if key in log]
        assert values and all(torch.isfinite(torch.tensor(values))), key
    # The second PPO epoch of each batch sees a moved policy; the reference KL grows as the policy learns.
    assert max(log.get("approx_kl", 0.0) for log in logs) > 0
    assert max(log.get("kl", 0.0) for log in logs) > 0


def test_lora_critic_shares_a_4bit_base_with_policy_and_reference(make_trainer):
    quantization = BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32
    )
    trainer = make_trainer(
        critic="lora",
        peft_config=lora_config(),
        model_init_kwargs={"quantization_config": quantization},
        max_steps=2,
        value_lr=1e-3,
    )
    model = trainer.model
    assert model.is_loaded_in_4bit and trainer.ref_model is None  # the reference is the base, adapters disabled
    assert set(model.peft_config) == {"default", "critic"}
    # The value head is a (trainable) submodule of the model, so that DDP synchronises it; the rest is the base.
    frozen_before = {
        name: p.detach().clone()
        for name, p in model.named_parameters()
        if "lora_" not in name and "value_head" not in name
    }

    trainer.train()

    for adapter in ("default", "critic"):  # lora_B starts at 0: non-zero means that adapter received gradients
        lora_b = [p for name, p in model.named_parameters() if f"lora_B.{adapter}." in name]
        assert lora_b and all(p.requires_grad for p in lora_b)
        assert sum(p.abs().sum().item() for p in lora_b) > 0, adapter
    for name, p in model.named_parameters():
        if name in frozen_before:
            assert torch.equal(p, frozen_before[name]), name
    assert trainer.value_head.linear.weight.abs().sum() > 0

    critic_group = trainer.optimizer.param_groups[-1]
    critic_params = {id(p) for name, p in model.named_parameters() if ".critic." in name}
    critic_params |= {id(p) for p in trainer.value_head.parameters()}
    assert {id(p) for p in critic_group["params"]} == critic_params and critic_group["initial_lr"] == 1e-3
    policy_params = {id(p) for group in trainer.optimizer.param_groups[:-1] for p in group["params"]}
    assert policy_params and not policy_params & critic_params


def test_lora_critic_gradients_do_not_depend_on_gradient_checkpointing(make_trainer, dataset):
    # Checkpointing recomputes layers in the backward pass with the adapter active by then (the policy's); the
    # critic's forward must not be checkpointed, or its gradients silently come from the wrong adapter.
    trainer = make_trainer(critic="lora", peft_config=lora_config())
    model = trainer.model
    with torch.no_grad():  # non-zero critic lora_B, so the critic's forward differs from the policy's
        generator = torch.Generator().manual_seed(0)
        for name, p in model.named_parameters():
            if "lora_B.critic" in name:
                p.add_(0.5 * torch.randn(p.shape, generator=generator))
        trainer.value_head.linear.weight.normal_(generator=generator)  # a zero head passes no gradient back
    model.train()
    trainer.current_gradient_accumulation_steps = 1
    batch = trainer._generate_and_score_completions([dataset[i] for i in range(4) for _ in range(2)])

    def critic_gradients():
        model.zero_grad()
        trainer._compute_loss(model, batch).backward()
        return {name: p.grad.clone() for name, p in model.named_parameters() if "lora_A.critic" in name}

    model.gradient_checkpointing_enable({"use_reentrant": False})
    assert model.is_gradient_checkpointing
    checkpointed = critic_gradients()
    model.gradient_checkpointing_disable()
    reference = critic_gradients()
    assert sum(g.abs().sum() for g in reference.values()) > 0
    for name, gradient in reference.items():
        torch.testing.assert_close(checkpointed[name], gradient, msg=name)


def move_lora_away_from_the_base(model):
    """Perturb the LoRA B matrices (0 at init), so the policy differs from the base, which is the reference."""
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.add_(0.5 * torch.randn(p.shape, generator=generator))


def test_kl_to_the_base_enters_the_token_rewards(make_trainer, dataset):
    trainer = make_trainer(
        reward_funcs=[no_reward], peft_config=lora_config(), kl_coef=0.5, lam=1.0, whiten_advantages=False
    )
    model = trainer.model
    move_lora_away_from_the_base(model)
    model.train()
    batch = trainer._generate_and_score_completions([dataset[i] for i in range(4) for _ in range(2)])

    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    num_completion = batch["completion_ids"].size(1)

    def completion_logps():
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, -num_completion - 1 : -1]
        return logits.log_softmax(-1).gather(-1, batch["completion_ids"][..., None]).squeeze(-1)

    with torch.no_grad():
        policy_logps = completion_logps()
        with model.disable_adapter():
            reference_logps = completion_logps()
    mask = batch["completion_mask"]
    kl = (policy_logps - reference_logps) * mask  # k1, the default estimator
    # No task reward and a fresh critic (V = 0): with gamma = lam = 1 the return is the KL penalty still to come.
    expected_returns = -0.5 * kl.flip(1).cumsum(1).flip(1) * mask
    assert kl.abs().sum() > 0
    torch.testing.assert_close(batch["returns"], expected_returns, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(batch["advantages"], expected_returns, atol=1e-4, rtol=1e-4)
    assert all(p.requires_grad for name, p in model.named_parameters() if "lora_" in name)


def test_kl_penalty_uses_the_coefficient_before_it_adapts(make_trainer, dataset):
    # The same order as R1GRPOTrainer with kl_in_reward (and verl/OpenRLHF): penalise, then adapt.
    coef, target, horizon = 0.5, 1e-3, 16
    trainer = make_trainer(
        reward_funcs=[no_reward], peft_config=lora_config(), kl_coef=coef, kl_target=target, kl_horizon=horizon,
        lam=1.0, whiten_advantages=False,
    )
    model = trainer.model
    move_lora_away_from_the_base(model)
    model.train()
    batch = trainer._generate_and_score_completions([dataset[i] for i in range(4) for _ in range(2)])
    mask = batch["completion_mask"]
    with torch.no_grad():
        kl = (trainer.sampling_logps(batch) - trainer.reference_logps(batch)) * mask
    torch.testing.assert_close(batch["returns"], -coef * kl.flip(1).cumsum(1).flip(1) * mask, atol=1e-4, rtol=1e-4)
    mean_kl = (kl.sum() / mask.sum()).item()
    adapted = coef * (1 + min(max(mean_kl / target - 1, -0.2), 0.2) * 8 / horizon)
    assert trainer.kl_controller.value == pytest.approx(adapted, rel=1e-4) and adapted != coef


def test_critic_warmup_trains_only_the_critic(make_trainer):
    trainer = make_trainer(critic_warmup_steps=2, max_steps=3)
    policy_snapshots, head_snapshots = [], []

    def policy_parameters(model):  # the value head is a submodule of the model (so that DDP synchronises it)
        return [p.detach().clone() for name, p in model.named_parameters() if "value_head" not in name]

    class Snapshot(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            policy_snapshots.append(policy_parameters(model))
            head_snapshots.append(trainer.value_head.linear.weight.detach().clone())

    initial = policy_parameters(trainer.model)
    trainer.add_callback(Snapshot())
    trainer.train()

    def unchanged(params):
        return all(torch.equal(a, b) for a, b in zip(initial, params, strict=True))

    assert unchanged(policy_snapshots[0]) and unchanged(policy_snapshots[1])  # full fine-tuning: trunk = policy
    assert not torch.equal(head_snapshots[0], head_snapshots[1])  # the head learns during warm-up
    assert not unchanged(policy_snapshots[2])  # the policy trains once warm-up is over


def test_value_head_critic_adapter_and_kl_coef_survive_checkpoint_resume(make_trainer, tmp_path):
    options = {
        "critic": "lora",
        "peft_config": lora_config(),
        "max_steps": 2,
        "save_strategy": "steps",
        "save_steps": 2,
        "kl_target": 0.01,
        "kl_horizon": 8,
    }
    trainer = make_trainer(**options)
    trainer.train()
    checkpoint = tmp_path / "checkpoint-2"
    assert (checkpoint / "value_head.safetensors").is_file()
    assert (checkpoint / "critic" / "adapter_model.safetensors").is_file()
    head = {k: v.clone() for k, v in trainer.value_head.state_dict().items()}
    critic = {name: p.detach().clone() for name, p in trainer.model.named_parameters() if ".critic." in name}
    kl_coef = trainer.kl_controller.value
    assert kl_coef != 0.05 and head["linear.weight"].abs().sum() > 0  # both moved during training

    resumed = make_trainer(**{**options, "max_steps": 3})
    assert resumed.value_head.linear.weight.abs().sum() == 0
    at_resume = {}

    class SnapshotAtResume(TrainerCallback):  # on_train_begin runs after the checkpoint is loaded
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            at_resume["head"] = {k: v.clone() for k, v in resumed.value_head.state_dict().items()}
            at_resume["critic"] = {n: p.detach().clone() for n, p in model.named_parameters() if ".critic." in n}
            at_resume["trainable"] = all(p.requires_grad for n, p in model.named_parameters() if ".critic." in n)
            at_resume["kl_coef"] = resumed.kl_controller.value

    resumed.add_callback(SnapshotAtResume())
    resumed.train(resume_from_checkpoint=str(checkpoint))

    for key, value in at_resume["head"].items():
        torch.testing.assert_close(value, head[key])
    assert at_resume["critic"].keys() == critic.keys()
    for name, value in at_resume["critic"].items():
        torch.testing.assert_close(value, critic[name])
    assert at_resume["trainable"] and at_resume["kl_coef"] == pytest.approx(kl_coef)
    assert resumed.state.global_step == 3

    resumed.save_model(str(tmp_path / "final"))
    assert (tmp_path / "final" / "value_head.safetensors").is_file()


def test_clipped_value_loss_matches_ppo2_and_stops_gradients_past_the_clip():
    values = torch.tensor([[0.5, -0.5, 0.1, 9.0]], requires_grad=True)
    old_values = torch.zeros(1, 4)
    returns = torch.tensor([[1.0, 1.0, -1.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    loss, clipfrac = clipped_value_loss(values, old_values, returns, mask, clip_range=0.2)
    # Token 0 moved 0.5 towards its return: clipped to 0.2, error 0.64 > 0.25, the clipped branch binds.
    # Token 1 moved away from its return: the unclipped error 2.25 is larger, so it counts in full.
    # Token 2 stayed within the range: error 1.21. Token 3 is padding.
    assert loss.item() == pytest.approx(0.5 * (0.64 + 2.25 + 1.21) / 3)
    assert clipfrac.item() == pytest.approx(1 / 3)
    loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor([[0.0, -1.5 / 3, 1.1 / 3, 0.0]]))


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"beta": 0.04}, "kl_coef"),
        ({"critic": "value_model"}, "critic"),
        ({"kl_estimator": "k9"}, "kl_estimator"),
        ({"lam": 1.5}, "lam"),
        ({"lam_critic": -0.1}, "lam_critic"),
        ({"gamma": 0.0}, "gamma"),
        ({"cliprange_value": 0.0}, "cliprange_value"),
        ({"length_adaptive_alpha": 0.0}, "length_adaptive_alpha"),
        ({"vf_coef": -1.0}, "vf_coef"),
        ({"critic_warmup_steps": -1}, "critic_warmup_steps"),
        ({"kl_coef": 0.0, "kl_target": 0.1}, "kl_coef"),
        ({"kl_coef": 0.0, "kl_estimator": "k3"}, "does nothing with kl_coef=0"),
        ({"critic_warmup_steps": 10, "max_steps": 10}, "the policy would never train"),
        ({"scale_rewards": "batch"}, "scale_rewards"),
        ({"multi_objective_aggregation": "normalize_then_sum"}, "multi_objective_aggregation"),
    ],
)
def test_config_rejects_invalid_settings(overrides, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        R1PPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **overrides)


def test_trainer_rejects_a_lora_critic_without_peft_and_a_grpo_config(tiny_model_dir, dataset, make_trainer, tmp_path):
    with pytest.raises(ValueError, match="peft_config"):
        make_trainer(critic="lora")
    with pytest.raises(TypeError, match="R1PPOConfig"):
        R1PPOTrainer(
            model=tiny_model_dir,
            reward_funcs=starts_with_digit,
            args=GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none"),
            train_dataset=dataset,
        )


@pytest.mark.parametrize(
    "env, options",
    [
        ({"ACCELERATE_USE_FSDP": "true"}, {}),
        ({}, {"fsdp": "full_shard"}),
        ({"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"}, {}),
    ],
    ids=["accelerate-fsdp", "fsdp-argument", "deepspeed-zero3"],
)
def test_sharded_training_is_refused_before_a_model_is_loaded(monkeypatch, tmp_path, env, options):
    if "ACCELERATE_USE_DEEPSPEED" in env:
        pytest.importorskip("deepspeed")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args = R1PPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **options)
    # A model path that does not exist: loading it would fail with OSError, so the refusal comes first.
    with pytest.raises(NotImplementedError, match="ZeRO-3 and FSDP"):
        R1PPOTrainer(model=str(tmp_path / "no-model"), reward_funcs=[starts_with_digit], args=args)


def test_train_dataset_is_the_fourth_positional_argument_as_in_trl(tiny_model_dir, dataset, tmp_path):
    args = R1PPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", kl_coef=0.1)
    trainer = R1PPOTrainer(tiny_model_dir, [starts_with_digit], args, dataset)
    assert trainer.train_dataset is dataset
    assert trainer.ref_model is not None and args.beta == 0.0  # TRL built the reference for kl_coef; beta untouched


def test_dataclasses_replace_changes_kl_coef(tmp_path):
    import dataclasses

    args = R1PPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    replaced = dataclasses.replace(args, kl_coef=0.1)
    assert replaced.kl_coef == 0.1 and replaced.beta == 0.0


def test_pipeline_docs_say_ppo_refuses_zero3_and_fsdp_where_they_offer_them():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "pipeline.md").read_text()
    offer = text.index("DeepSpeed ZeRO-2/3, FSDP")
    assert "PPO stages" in text[offer: offer + 1500] and "refuse ZeRO-3 and\nFSDP" in text[offer: offer + 1500]
