"""R1GRPOTrainer on the tiny model: parity with trl.GRPOTrainer, KL variants, KL in the reward, the adaptive
KL coefficient, config validation, and learning a toy task with every advantage estimator."""

import pytest
import torch
from datasets import Dataset
from transformers import AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from trl_r1.algorithms import KL_ESTIMATORS, grpo_advantages, rloo_advantages, same_loss_gradient
from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

GROUP = 4


class DigitShare:
    """Toy verifiable reward: the share of completion tokens that are digits (learnable in seconds)."""

    __name__ = "digit_share"

    def __init__(self, digit_ids):
        self.digit_ids = frozenset(digit_ids)

    def __call__(self, completion_ids, **kwargs):
        return [sum(t in self.digit_ids for t in ids) / max(len(ids), 1) for ids in completion_ids]


@pytest.fixture(scope="module")
def digit_share(tiny_model_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    return DigitShare(i for i in range(len(tokenizer)) if tokenizer.decode([i]).strip().isdigit())


@pytest.fixture(scope="module")
def dataset():
    questions = [f"What is {a} + {b}?" for a in range(4) for b in range(4)]
    return Dataset.from_list([{"prompt": [{"role": "user", "content": question}]} for question in questions])


@pytest.fixture
def make_trainer(tiny_model_dir, digit_share, dataset, tmp_path):
    def make(trainer_cls=R1GRPOTrainer, config_cls=R1GRPOConfig, reward=digit_share, **overrides):
        options = dict(
            output_dir=str(tmp_path),
            use_cpu=True,
            bf16=False,
            report_to="none",
            save_strategy="no",
            per_device_train_batch_size=8,
            num_generations=GROUP,
            max_completion_length=8,
            logging_steps=1,
            seed=0,
            disable_tqdm=True,
        )
        options.update(overrides)
        return trainer_cls(model=tiny_model_dir, reward_funcs=reward, args=config_cls(**options), train_dataset=dataset)

    return make


def _one_batch(trainer, dataset):
    """Perturb the policy away from the reference (so the KL is not 0), generate one batch, compute the loss."""
    with torch.no_grad():
        generator = torch.Generator().manual_seed(1)
        for param in trainer.model.parameters():
            param.add_(0.05 * torch.randn(param.shape, generator=generator))
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    torch.manual_seed(0)
    batch = trainer._generate_and_score_completions([dataset[i] for i in range(2) for _ in range(GROUP)])
    loss = trainer._compute_loss(trainer.model, batch)
    loss.backward()
    grads = {name: param.grad.clone() for name, param in trainer.model.named_parameters()}
    return batch, loss.detach(), grads


def _scores(reward, batch):
    """The toy reward of each generated completion (its valid tokens), as TRL computes it."""
    rows = zip(batch["completion_ids"], batch["completion_mask"], strict=True)
    completions = [ids[m.bool()].tolist() for ids, m in rows]
    return torch.tensor(reward(completion_ids=completions))


def _assert_same_grads(grads, other, atol=1e-6):
    for name in grads:
        torch.testing.assert_close(grads[name], other[name], rtol=1e-5, atol=atol, msg=name)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(),  # TRL defaults: beta=0, loss_type="dapo"
        dict(beta=0.04),
        dict(beta=0.04, loss_type="grpo"),
        dict(beta=0.04, loss_type="bnpo", use_bias_correction_kl=False),
        dict(beta=0.04, loss_type="dr_grpo", importance_sampling_level="sequence"),
        dict(beta=0.04, loss_type="sapo"),
        dict(beta=0.04, loss_type="cispo"),
        dict(beta=0.04, loss_type="luspo", importance_sampling_level="sequence"),
    ],
    ids=["trl-defaults", "beta", "grpo-loss", "bnpo-no-bias-correction", "dr_grpo-sequence-is", "sapo", "cispo", "luspo"],
)
def test_defaults_reproduce_trl_loss_and_gradients(make_trainer, dataset, overrides):
    stock_batch, stock_loss, stock_grads = _one_batch(make_trainer(GRPOTrainer, GRPOConfig, **overrides), dataset)
    batch, loss, grads = _one_batch(make_trainer(**overrides), dataset)
    assert torch.equal(batch["completion_ids"], stock_batch["completion_ids"])
    torch.testing.assert_close(batch["advantages"], stock_batch["advantages"], rtol=0, atol=1e-6)
    torch.testing.assert_close(loss, stock_loss, rtol=1e-6, atol=1e-6)
    _assert_same_grads(grads, stock_grads)


class SometimesUnscored(DigitShare):
    """The toy reward, but None (unscorable) for every third completion."""

    def __call__(self, completion_ids, **kwargs):
        return [None if i % 3 == 0 else r for i, r in enumerate(super().__call__(completion_ids))]


def test_grpo_estimator_matches_trl_bit_for_bit(make_trainer, dataset, digit_share):
    trainer = make_trainer(GRPOTrainer, GRPOConfig, reward=SometimesUnscored(digit_share.digit_ids))
    batch, _, _ = _one_batch(trainer, dataset)
    scores = _scores(digit_share, batch)
    scores[::3] = float("nan")
    assert torch.equal(grpo_advantages(scores, GROUP), batch["advantages"])


def test_kl_metric_matches_trl(make_trainer, dataset):
    stock = make_trainer(GRPOTrainer, GRPOConfig, beta=0.04)
    ours = make_trainer(beta=0.04)
    _one_batch(stock, dataset)
    _one_batch(ours, dataset)
    assert ours._metrics["train"]["kl"] == pytest.approx(stock._metrics["train"]["kl"], rel=1e-6)
    assert ours._metrics["train"]["kl"][0] > 0


@pytest.mark.parametrize("kl_in_reward", [False, True], ids=["kl-in-loss", "kl-in-reward"])
def test_logged_kl_is_k3_whatever_the_estimator(make_trainer, dataset, kl_in_reward):
    # `kl` means what TRL logs (k3, importance-weighted in the loss), so curves compare across runs; each
    # estimator's own value has its own name.
    options = dict(beta=0.5, kl_in_reward=kl_in_reward, advantage_estimator="rloo" if kl_in_reward else "grpo")
    metrics = {}
    for est in ("k3", "k1", "abs"):
        trainer = make_trainer(kl_estimator=est, **options)
        _one_batch(trainer, dataset)
        metrics[est] = {k: v[0] for k, v in trainer._metrics["train"].items() if k.startswith("kl")}
    assert metrics["k3"]["kl"] > 0 and metrics["k1"]["kl"] == pytest.approx(metrics["k3"]["kl"], rel=1e-6)
    assert metrics["abs"]["kl"] == pytest.approx(metrics["k3"]["kl"], rel=1e-6)
    assert metrics["k3"]["kl/k3"] == pytest.approx(metrics["k3"]["kl"], rel=1e-6)
    assert metrics["abs"]["kl/abs"] > metrics["k3"]["kl"] and "kl/k3" not in metrics["abs"]
    assert metrics["k1"]["kl/k1"] != pytest.approx(metrics["k3"]["kl"], rel=1e-3)


def test_straight_through_kl_keeps_the_value_and_takes_the_k2_gradient(make_trainer, dataset):
    run = {
        est: _one_batch(make_trainer(beta=0.5, kl_estimator=est, use_bias_correction_kl=False), dataset)
        for est in ("k3", "k3+", "k2")
    }
    torch.testing.assert_close(run["k3+"][1], run["k3"][1])
    _assert_same_grads(run["k3+"][2], run["k2"][2])
    assert any(not torch.allclose(run["k3"][2][n], run["k2"][2][n], atol=1e-6) for n in run["k3"][2])


def test_gradient_kl_estimators_share_the_k2_gradient_with_the_importance_ratio(make_trainer, dataset):
    # TRL's default use_bias_correction_kl=True: k2 and the straight-through estimators are unbiased for the KL
    # gradient, so the ratio only reweights them and all four give k2's gradient (the ratio used to double k1+'s).
    run = {est: _one_batch(make_trainer(beta=0.5, kl_estimator=est), dataset) for est in ("k2", "k1+", "k3+", "low_var_kl+")}
    for est in ("k1+", "k3+", "low_var_kl+"):
        _assert_same_grads(run[est][2], run["k2"][2])


def _completion_logps(model, batch):
    """Per-token log-probs of the completion, with a plain forward pass (independent of TRL's helpers)."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    length = batch["completion_ids"].size(1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attention).logits[:, -length - 1 : -1].float()
    return logits.log_softmax(-1).gather(-1, batch["completion_ids"].unsqueeze(-1)).squeeze(-1)


def test_kl_in_reward_penalises_the_sequence_score_and_leaves_the_loss(make_trainer, dataset, digit_share):
    beta = 0.5
    trainer = make_trainer(beta=beta, advantage_estimator="rloo", kl_in_reward=True, kl_estimator="k1")
    batch, loss, _ = _one_batch(trainer, dataset)
    mask = batch["completion_mask"].float()
    log_ratio = _completion_logps(trainer.model, batch) - _completion_logps(trainer.ref_model, batch)
    sequence_kl = (log_ratio * mask).sum(1)  # k1
    assert sequence_kl.abs().max() > 0.01
    expected = rloo_advantages(_scores(digit_share, batch) - beta * sequence_kl, GROUP)
    torch.testing.assert_close(batch["advantages"], expected, rtol=1e-4, atol=1e-5)
    # on-policy DAPO loss without a KL term: -sum(A * valid tokens) / valid tokens
    expected_loss = -(batch["advantages"][:, None] * mask).sum() / mask.sum()
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=1e-6)


def test_kl_in_reward_applies_the_coefficient_before_adapting_it(make_trainer, dataset, digit_share):
    # PPO, verl and OpenRLHF penalise the batch with the current coefficient, then adapt it from the batch's KL.
    beta, target, horizon = 0.5, 1e-3, 16
    trainer = make_trainer(
        beta=beta, advantage_estimator="rloo", kl_in_reward=True, kl_estimator="k1", kl_target=target, kl_horizon=horizon
    )
    batch, _, _ = _one_batch(trainer, dataset)
    mask = batch["completion_mask"].float()
    log_ratio = _completion_logps(trainer.model, batch) - _completion_logps(trainer.ref_model, batch)
    expected = rloo_advantages(_scores(digit_share, batch) - beta * (log_ratio * mask).sum(1), GROUP)
    torch.testing.assert_close(batch["advantages"], expected, rtol=1e-4, atol=1e-5)
    mean_kl = ((log_ratio * mask).sum() / mask.sum()).item()
    adapted = beta * (1 + min(max(mean_kl / target - 1, -0.2), 0.2) * 2 * GROUP / horizon)
    assert trainer.kl_controller.value == pytest.approx(adapted, rel=1e-4) and adapted != beta


def test_reinforce_pp_gives_token_level_advantages(make_trainer, dataset):
    trainer = make_trainer(beta=0.1, advantage_estimator="reinforce_pp", kl_in_reward=True, kl_estimator="k1")
    batch, loss, grads = _one_batch(trainer, dataset)
    advantages, mask = batch["advantages"], batch["completion_mask"].bool()
    assert advantages.shape == batch["completion_ids"].shape
    assert torch.all(advantages[~mask] == 0)
    assert advantages[mask].mean().abs() < 1e-5 and advantages[mask].std() == pytest.approx(1.0, abs=1e-4)
    assert torch.isfinite(loss) and any(g.abs().sum() > 0 for g in grads.values())
    assert len(trainer._logs["advantages"]) == 2 * GROUP


def test_adaptive_kl_coefficient_follows_ziegler(make_trainer):
    horizon, target, beta = 16, 1e-3, 0.1
    trainer = make_trainer(beta=beta, kl_target=target, kl_horizon=horizon, max_steps=4, learning_rate=1e-2)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "kl_coef" in entry]
    assert len(logs) == 4
    expected = beta
    for entry in logs:  # the logged coefficient is the one the step applied; it adapts afterwards
        assert entry["kl_coef"] == pytest.approx(expected, rel=1e-4)
        expected *= 1 + min(max(entry["kl/k3"] / target - 1, -0.2), 0.2) * 8 / horizon  # 8 completions per step
    assert logs[0]["kl_coef"] == beta
    assert trainer.kl_controller.value == pytest.approx(expected, rel=1e-4)
    assert trainer.kl_controller.value != beta


def test_adaptive_kl_coefficient_resumes_from_a_checkpoint(make_trainer, tmp_path):
    options = dict(beta=0.1, kl_target=1e-3, kl_horizon=16, learning_rate=1e-2, save_strategy="steps", save_steps=2)
    first = make_trainer(max_steps=2, **options)
    first.train()
    saved = first.kl_controller.value
    assert saved != 0.1
    resumed = make_trainer(max_steps=3, **options)
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-2"))
    last = [entry for entry in resumed.state.log_history if "kl_coef" in entry][-1]
    assert last["step"] == 3
    expected = saved * (1 + min(max(last["kl"] / 1e-3 - 1, -0.2), 0.2) * 8 / 16)
    assert resumed.kl_controller.value == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(kl_in_reward=True), "beta > 0"),
        (dict(kl_target=0.1), "beta > 0"),
        (dict(beta=0.1, kl_target=-1.0), "must be > 0"),
        (dict(advantage_estimator="gae"), "R1PPOTrainer"),
        (dict(kl_estimator="k4"), "kl_estimator"),
        (dict(advantage_estimator="rloo", scale_rewards="batch"), "scale_rewards"),
        (dict(beta=0.1, kl_in_reward=True, scale_rewards="none"), "dr_grpo"),
        (dict(advantage_estimator="dr_grpo", multi_objective_aggregation="normalize_then_sum"), "multi_objective"),
        (dict(gamma=1.5), "gamma"),
    ],
)
def test_incompatible_options_are_rejected(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **options)


def test_plain_grpo_config_is_rejected(tiny_model_dir, tmp_path):
    with pytest.raises(TypeError, match="R1GRPOConfig"):
        R1GRPOTrainer(tiny_model_dir, reward_funcs=[], args=GRPOConfig(output_dir=str(tmp_path), use_cpu=True))


@pytest.mark.parametrize(
    "options",
    [
        dict(advantage_estimator="grpo"),
        dict(advantage_estimator="dr_grpo"),
        dict(advantage_estimator="rloo"),
        dict(advantage_estimator="reinforce_pp"),
        dict(advantage_estimator="reinforce_pp_baseline"),
        dict(advantage_estimator="reinforce_pp", beta=0.01, kl_in_reward=True, kl_estimator="k1", kl_target=0.01),
    ],
    ids=["grpo", "dr_grpo", "rloo", "reinforce_pp", "reinforce_pp_baseline", "reinforce_pp-kl_in_reward-adaptive"],
)
def test_each_estimator_learns_the_toy_task(make_trainer, options):
    trainer = make_trainer(max_steps=25, learning_rate=1e-2, per_device_train_batch_size=16, **options)
    trainer.train()
    rewards = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    assert len(rewards) == 25
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert last > first + 0.1, rewards


# ----- every option changes the updates, or the config says why not (issue 37) ---------------------------------

_BASELINE: dict = {}


def _grads_of(make_trainer, dataset, **options):
    return _one_batch(make_trainer(**options), dataset)[2]


def _differs(grads, other) -> bool:
    return any(not torch.allclose(grads[n], other[n], rtol=1e-4, atol=1e-6) for n in grads)


@pytest.mark.parametrize("estimator", sorted(KL_ESTIMATORS.choices()))
def test_each_kl_estimator_in_the_loss_changes_the_updates_or_warns(make_trainer, dataset, estimator):
    # Under TRL's use_bias_correction_kl=True, k2/k3/low_var_kl and the `+` ones share one gradient
    # (docs/algorithms.md): the config says so; k1 and abs change the updates.
    if "k3" not in _BASELINE:
        _BASELINE["k3"] = _grads_of(make_trainer, dataset, beta=0.5)
    if same_loss_gradient(estimator, "k3") and estimator != "k3":
        with pytest.warns(UserWarning, match="same gradient as 'k3'"):
            grads = _grads_of(make_trainer, dataset, beta=0.5, kl_estimator=estimator)
        _assert_same_grads(grads, _BASELINE["k3"], atol=1e-5)
    elif estimator != "k3":
        assert _differs(_grads_of(make_trainer, dataset, beta=0.5, kl_estimator=estimator), _BASELINE["k3"])


@pytest.mark.parametrize("estimator", ["k2", "k3+", "low_var_kl"])
def test_without_bias_correction_the_coinciding_estimators_differ(make_trainer, dataset, estimator):
    base = _grads_of(make_trainer, dataset, beta=0.5, use_bias_correction_kl=False)
    assert _differs(_grads_of(make_trainer, dataset, beta=0.5, kl_estimator=estimator, use_bias_correction_kl=False),
                    base) == (estimator != "low_var_kl")  # low_var_kl is k3 until it clamps


@pytest.mark.parametrize("estimator", [e for e in ("dr_grpo", "rloo", "reinforce_pp", "reinforce_pp_baseline")])
def test_each_advantage_estimator_changes_the_updates(make_trainer, dataset, estimator):
    if "grpo" not in _BASELINE:
        _BASELINE["grpo"] = _grads_of(make_trainer, dataset)
    assert _differs(_grads_of(make_trainer, dataset, advantage_estimator=estimator), _BASELINE["grpo"])


def test_gamma_changes_reinforce_pp_updates(make_trainer, dataset):
    options = dict(advantage_estimator="reinforce_pp", beta=0.5, kl_in_reward=True, kl_estimator="k1")
    assert _differs(_grads_of(make_trainer, dataset, gamma=0.5, **options), _grads_of(make_trainer, dataset, **options))


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(kl_estimator="k1"), "does nothing with beta=0"),
        (dict(kl_estimator="abs", kl_in_reward=False), "does nothing with beta=0"),
        (dict(advantage_estimator="rloo", gamma=0.5), r"gamma=0.5 does nothing .* \['reinforce_pp'"),
        (dict(advantage_estimator="grpo", gamma=0.9), "gamma=0.9 does nothing"),
    ],
)
def test_inert_options_are_rejected_at_config_time(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **options)


def test_kl_horizon_without_a_target_warns(tmp_path):
    with pytest.warns(UserWarning, match="kl_horizon=500 .* without kl_target"):
        R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", beta=0.1, kl_horizon=500)


# ----- the CLI's checks, in Python too (issue 37 item 4) --------------------------------------------------------


class NeedsUnit:
    """A reward that reads a 'unit' column."""

    __name__ = "needs_unit"
    required_columns = ("unit",)

    def __call__(self, completions, unit, **kwargs):
        return [1.0] * len(completions)


@pytest.mark.parametrize("trainer_kind", ["grpo", "ppo"])
def test_a_reward_s_required_columns_are_checked_before_training(tiny_model_dir, dataset, tmp_path, trainer_kind):
    from trl_r1.trainers import R1PPOConfig, R1PPOTrainer

    trainer_cls, config_cls = (R1GRPOTrainer, R1GRPOConfig) if trainer_kind == "grpo" else (R1PPOTrainer, R1PPOConfig)
    args = config_cls(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    with pytest.raises(ValueError, match=r"needs_unit' needs a 'unit' column; the dataset has \['prompt'\]"):
        trainer_cls(tiny_model_dir, [NeedsUnit()], args, dataset)


def test_our_reward_names_resolve_as_in_the_cli(make_trainer, tiny_model_dir, tmp_path):
    solved = Dataset.from_list([{"prompt": [{"role": "user", "content": "1 + 1?"}], "solution": "2"}] * 4)
    trainer = R1GRPOTrainer(tiny_model_dir, ["format", {"name": "math"}], R1GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, report_to="none", num_generations=GROUP, per_device_train_batch_size=4),
        solved)
    assert [f.__name__ for f in trainer.reward_funcs] == ["format_reward", "math_accuracy_reward"]
    with pytest.raises(ValueError, match="reads its reference from one of the columns"):
        R1GRPOTrainer(tiny_model_dir, ["math"], R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none"),
                      solved.remove_columns("solution"))


def test_the_accelerate_cpu_trap_is_warned_by_the_trainer(make_trainer, monkeypatch, caplog):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setenv("ACCELERATE_USE_CPU", "true")
    monkeypatch.setenv("MASTER_PORT", "29500")
    with caplog.at_level("WARNING", logger="trl_r1"):
        make_trainer()
    assert "runs ONE process whatever --num_processes says" in caplog.text


def test_a_misspelt_reward_name_fails_here_not_as_a_hub_lookup(tiny_model_dir, dataset, tmp_path):
    with pytest.raises(ValueError, match="unknown reward 'fromat': did you mean 'format'"):
        R1GRPOTrainer(tiny_model_dir, ["fromat"], R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True), dataset)


@pytest.mark.parametrize("options", [dict(), dict(beta=0.1, kl_in_reward=True, advantage_estimator="rloo")])
def test_bias_correction_without_a_kl_term_in_the_loss_warns(tmp_path, options):
    with pytest.warns(UserWarning, match="use_bias_correction_kl=False .* changes nothing"):
        R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", use_bias_correction_kl=False, **options)


def test_a_prompt_over_the_generation_budget_is_skipped_with_one_warning(tiny_model_dir, tmp_path, caplog):
    """TRL never cuts a prompt: one ~13k-token row would crash vLLM or fill the memory in generate."""
    rows = [{"prompt": [{"role": "user", "content": f"What is {i} + 1?"}], "solution": str(i + 1)} for i in range(8)]
    rows.insert(5, {"prompt": [{"role": "user", "content": "1 + " * 6500 + "1?"}], "solution": "6501"})
    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", num_generations=GROUP,
                        per_device_train_batch_size=4, max_completion_length=16)
    with caplog.at_level("WARNING", logger="trl_r1.trainers"):
        trainer = R1GRPOTrainer(tiny_model_dir, ["format"], args, Dataset.from_list(rows))
    assert len(trainer.train_dataset) == 8 and "6501" not in trainer.train_dataset["solution"]
    line = next(r.getMessage() for r in caplog.records if "prompts are longer" in r.getMessage())
    assert "1 of 9 prompts are longer than the 1008 tokens" in line and "first: row 5" in line and "skipped" in line
