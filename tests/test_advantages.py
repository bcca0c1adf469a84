"""Advantage estimators against hand-computed values, the textbook GAE loop, and edge cases."""

import math

import pytest
import torch

from trl_r1.algorithms import (
    ADVANTAGE_ESTIMATORS,
    decoupled_gae,
    discounted_reverse_cumsum,
    dr_grpo_advantages,
    gae,
    get_advantage_estimator,
    grpo_advantages,
    length_adaptive_lambda,
    masked_mean,
    masked_whiten,
    reinforce_pp_advantages,
    reinforce_pp_baseline_advantages,
    rloo_advantages,
    sequence_to_token_rewards,
)

NAN = float("nan")


def textbook_gae(rewards, values, mask, gamma, lam):
    """The reverse loop of verl / TRL's old PPOTrainer, with carry-forward over masked positions."""
    batch, length = rewards.shape
    lam = torch.as_tensor(lam, dtype=rewards.dtype).expand(batch)
    next_value = torch.zeros(batch, dtype=rewards.dtype)
    running = torch.zeros(batch, dtype=rewards.dtype)
    advantages = torch.zeros_like(rewards)
    for t in reversed(range(length)):
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        candidate = delta + gamma * lam * running
        next_value = torch.where(mask[:, t].bool(), values[:, t], next_value)
        running = torch.where(mask[:, t].bool(), candidate, running)
        advantages[:, t] = running
    return advantages * mask, (advantages + values) * mask


def random_mask(batch, length, generator, holes):
    lengths = torch.randint(0, length + 1, (batch,), generator=generator)
    mask = (torch.arange(length) < lengths[:, None]).double()
    if holes:
        mask = mask * (torch.rand(batch, length, generator=generator, dtype=torch.float64) > 0.3)
    return mask


@pytest.mark.parametrize(
    "gamma, lam", [(1.0, 1.0), (1.0, 0.95), (0.99, 0.9), (0.5, 0.01), (1.0, 0.0), (1.0, 1e-6), (0.0, 1.0)]
)
@pytest.mark.parametrize("holes", [False, True])
@pytest.mark.parametrize("length", [1, 32, 33, 200])
def test_gae_matches_the_textbook_loop(gamma, lam, holes, length):
    generator = torch.Generator().manual_seed(length)
    rewards = torch.randn(6, length, generator=generator, dtype=torch.float64)
    values = torch.randn(6, length, generator=generator, dtype=torch.float64)
    mask = random_mask(6, length, generator, holes)
    expected_adv, expected_ret = textbook_gae(rewards, values, mask, gamma, lam)
    adv, ret = gae(rewards, values, mask, gamma=gamma, lam=lam)
    scale = expected_adv.abs().max().clamp(min=1.0)
    torch.testing.assert_close(adv, expected_adv, rtol=1e-5, atol=1e-5 * scale)
    torch.testing.assert_close(ret, expected_ret, rtol=1e-5, atol=1e-5 * scale)


def test_gae_in_float32_at_long_lengths_stays_within_1e_5_of_the_float64_loop():
    generator = torch.Generator().manual_seed(0)
    rewards = torch.randn(2, 8192, generator=generator, dtype=torch.float64)
    values = torch.randn(2, 8192, generator=generator, dtype=torch.float64)
    mask = random_mask(2, 8192, generator, holes=False)
    mask[0] = 1.0
    for lam in (1.0, 0.9):
        expected, _ = textbook_gae(rewards, values, mask, 1.0, lam)
        adv, _ = gae(rewards.float(), values.float(), mask.float(), lam=lam)
        relative = (adv.double() - expected).abs().max() / expected.abs().max()
        assert relative < 1e-5, (lam, relative)


def test_gae_per_sequence_lambda_equals_one_call_per_row():
    generator = torch.Generator().manual_seed(3)
    rewards, values = torch.randn(3, 50, generator=generator), torch.randn(3, 50, generator=generator)
    mask = random_mask(3, 50, generator, holes=True).float()
    lam = torch.tensor([0.0, 0.5, 1.0])
    adv, ret = gae(rewards, values, mask, gamma=0.9, lam=lam)
    for row in range(3):
        rows = slice(row, row + 1)
        row_adv, row_ret = gae(rewards[rows], values[rows], mask[rows], gamma=0.9, lam=float(lam[row]))
        torch.testing.assert_close(adv[rows], row_adv)
        torch.testing.assert_close(ret[rows], row_ret)


def test_gae_hand_computed_with_a_hole_and_padding():
    # valid tokens at 0, 1, 3; position 2 is a hole (its reward 100 and value 50 are ignored), 4 is padding
    rewards = torch.tensor([[0.0, 0.0, 100.0, 1.0, 7.0]])
    values = torch.tensor([[0.5, 0.25, 50.0, 0.75, 9.0]])
    mask = torch.tensor([[1, 1, 0, 1, 0]])
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=0.5)
    # deltas over the valid sequence: d3 = 1 - .75 = .25, d1 = 0 + .75 - .25 = .5, d0 = 0 + .25 - .5 = -.25
    # A3 = .25, A1 = .5 + .5 * .25 = .625, A0 = -.25 + .5 * .625 = .0625
    torch.testing.assert_close(adv, torch.tensor([[0.0625, 0.625, 0.0, 0.25, 0.0]]))
    torch.testing.assert_close(ret, torch.tensor([[0.5625, 0.875, 0.0, 1.0, 0.0]]))


def test_gae_edge_cases_all_masked_rows_length_one_and_nan_padding():
    rewards = torch.tensor([[1.0, NAN], [NAN, NAN], [2.0, 3.0]])
    values = torch.tensor([[0.5, NAN], [NAN, NAN], [1.0, 1.0]])
    mask = torch.tensor([[1, 0], [0, 0], [1, 1]])
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=1.0, whiten=True)
    assert torch.isfinite(adv).all() and torch.isfinite(ret).all()
    assert torch.all(adv[1] == 0) and torch.all(ret[1] == 0)
    torch.testing.assert_close(ret, torch.tensor([[1.0, 0.0], [0.0, 0.0], [5.0, 3.0]]))
    raw, _ = gae(rewards, values, mask)
    torch.testing.assert_close(adv, masked_whiten(raw, mask))
    empty_adv, empty_ret = gae(torch.zeros(2, 0), torch.zeros(2, 0), torch.zeros(2, 0))
    assert empty_adv.shape == empty_ret.shape == (2, 0)


def test_discounted_reverse_cumsum_recursion_for_extreme_discounts():
    x = torch.arange(1.0, 70.0).repeat(2, 1)
    torch.testing.assert_close(discounted_reverse_cumsum(x, 0.0), x)
    torch.testing.assert_close(discounted_reverse_cumsum(x, 1.0), x.flip(1).cumsum(1).flip(1))
    per_row = discounted_reverse_cumsum(x, torch.tensor([0.0, 1.0]))
    torch.testing.assert_close(per_row, torch.stack([x[0], x[1].flip(0).cumsum(0).flip(0)]))


def test_decoupled_gae_uses_each_lambda_for_its_output():
    generator = torch.Generator().manual_seed(1)
    rewards, values = torch.randn(4, 20, generator=generator), torch.randn(4, 20, generator=generator)
    mask = torch.ones(4, 20)
    adv, ret = decoupled_gae(rewards, values, mask, gamma=1.0, lam_actor=0.9, lam_critic=1.0)
    torch.testing.assert_close(adv, gae(rewards, values, mask, lam=0.9)[0])
    torch.testing.assert_close(ret, gae(rewards, values, mask, lam=1.0)[1])
    # with lam_critic = 1 and gamma = 1 the returns are the Monte-Carlo reward-to-go
    torch.testing.assert_close(ret, rewards.flip(1).cumsum(1).flip(1))


def test_length_adaptive_lambda():
    lam = length_adaptive_lambda(torch.tensor([0, 1, 20, 40, 1000]), alpha=0.05)
    torch.testing.assert_close(lam, torch.tensor([0.0, 0.0, 0.0, 0.5, 0.98]))
    with pytest.raises(ValueError, match="alpha"):
        length_adaptive_lambda(torch.tensor([5]), alpha=0.0)


def test_masked_mean_and_whiten():
    x = torch.tensor([[1.0, 2.0, NAN], [3.0, 4.0, 5.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    assert masked_mean(x, mask).item() == 2.5
    torch.testing.assert_close(masked_mean(x, mask, dim=1), torch.tensor([1.5, 3.5]))
    assert masked_mean(x, torch.zeros_like(mask)).item() == 0.0
    whitened = masked_whiten(x, mask)
    std = math.sqrt(5 / 3)  # unbiased std of 1, 2, 3, 4
    torch.testing.assert_close(whitened, torch.tensor([[-1.5, -0.5, 0.0], [0.5, 1.5, 0.0]]) / std)
    torch.testing.assert_close(masked_whiten(x, mask, shift_mean=False), (whitened + 2.5) * mask)
    torch.testing.assert_close(masked_whiten(x, torch.tensor([[0, 1, 0], [0, 0, 0]])), torch.zeros(2, 3))


def test_sequence_to_token_rewards_puts_the_score_on_the_last_valid_token():
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]])
    rewards = sequence_to_token_rewards(torch.tensor([1.0, 2.0, 3.0, 4.0]), mask)
    expected = torch.tensor([[0, 0, 1.0, 0], [0, 0, 2.0, 0], [0, 0, 0, 0], [4.0, 0, 0, 0]])
    torch.testing.assert_close(rewards, expected)


def test_grpo_matches_hand_computed_values():
    scores = torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0, NAN, 1.0, 3.0, NAN])
    advantages = grpo_advantages(scores, group_size=4)
    std = math.sqrt(0.25)  # group 0: mean .25, unbiased std .5
    torch.testing.assert_close(advantages[:4], torch.tensor([0.75, -0.25, -0.25, -0.25]) / (std + 1e-4))
    assert torch.all(advantages[4:8] == 0)  # identical rewards
    torch.testing.assert_close(advantages[8:], torch.tensor([0.0, -1.0, 1.0, 0.0]) / (math.sqrt(2) + 1e-4))


def test_group_estimators_edge_cases():
    lonely = torch.tensor([5.0, NAN, NAN, NAN])  # a single scored completion: no baseline to compare with
    for estimator in (grpo_advantages, dr_grpo_advantages, rloo_advantages):
        assert torch.all(estimator(lonely, 4) == 0)
        assert torch.all(estimator(torch.tensor([3.0, 3.0]), 2) == 0)
        assert estimator(torch.tensor([1.0, 2.0]), 1).tolist() == [0.0, 0.0]  # groups of one
        with pytest.raises(ValueError, match="groups of 3"):
            estimator(torch.ones(4), 3)


def test_dr_grpo_and_rloo_hand_computed():
    scores = torch.tensor([1.0, 0.0, 0.0, 3.0, NAN, 0.0])
    torch.testing.assert_close(dr_grpo_advantages(scores, 3), torch.tensor([2 / 3, -1 / 3, -1 / 3, 1.5, 0.0, -1.5]))
    torch.testing.assert_close(rloo_advantages(scores, 3), torch.tensor([1.0, -0.5, -0.5, 3.0, 0.0, -3.0]))
    # RLOO is dr_grpo scaled by n / (n - 1) on full groups
    full = torch.randn(12)
    torch.testing.assert_close(rloo_advantages(full, 4), dr_grpo_advantages(full, 4) * 4 / 3)


def test_reinforce_pp_returns_are_whitened_globally():
    token_rewards = torch.tensor([[0.0, 0.0, 1.0], [0.5, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    returns = torch.tensor([[0.25, 0.5, 1.0], [0.5, 0.0, 0.0]])  # gamma = 0.5
    expected = masked_whiten(returns, mask)
    torch.testing.assert_close(reinforce_pp_advantages(token_rewards, mask, gamma=0.5), expected)


def test_reinforce_pp_baseline_centres_in_group_then_whitens_over_tokens():
    scores = torch.tensor([1.0, 0.0, NAN, 4.0])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 1]])
    advantages = reinforce_pp_baseline_advantages(scores, 2, mask)
    centred = torch.tensor([[0.5, 0.5, 0.0], [-0.5, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    kept = mask.bool() & ~torch.isnan(scores)[:, None]
    torch.testing.assert_close(advantages, masked_whiten(centred, kept))
    assert torch.all(advantages[2] == 0)  # unscored completion: no signal, not part of the statistics


def test_registry():
    expected = {"gae", "decoupled_gae", "grpo", "dr_grpo", "rloo", "reinforce_pp", "reinforce_pp_baseline"}
    assert set(ADVANTAGE_ESTIMATORS) == expected
    assert get_advantage_estimator("gae") is gae
    with pytest.raises(ValueError, match="choose one of: .*rloo") as error:
        get_advantage_estimator("ppo")
    assert str(error.value).count("rloo") == 1  # the valid names are listed once


def test_the_registration_example_in_design_md_runs():
    """DESIGN.md shows that a new estimator is one registration; run its example against fresh registries."""
    from pathlib import Path

    from trl_r1.algorithms import advantages, kl
    from trl_r1.registry import Registry

    design = (Path(__file__).resolve().parents[1] / "DESIGN.md").read_text()
    example = design.split("```python\n")[-1].split("```")[0]
    namespace = {**vars(kl), **vars(advantages)}
    namespace["ADVANTAGE_ESTIMATORS"] = Registry("advantage estimator")
    namespace["KL_ESTIMATORS"] = Registry("KL estimator")
    exec(example, namespace)
    max_baseline = namespace["ADVANTAGE_ESTIMATORS"]["max_baseline"]
    assert namespace["ADVANTAGE_ESTIMATORS"].meta("max_baseline") == {"level": "sequence"}
    torch.testing.assert_close(
        max_baseline(torch.tensor([1.0, 3.0, NAN, 2.0]), group_size=2), torch.tensor([-2.0, 0.0, 0.0, 0.0])
    )
    logp, ref = torch.tensor([[0.0]]), torch.tensor([[-2.0]])
    assert namespace["KL_ESTIMATORS"]["k2_half"](logp, ref).item() == 1.0
