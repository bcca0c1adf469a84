"""KL estimators against hand-computed values and exact KL; straight-through gradients; KL controllers."""

import math

import pytest
import torch

from trl_r1.algorithms import KL_ESTIMATORS, AdaptiveKLController, FixedKLController, kl_penalty


def test_hand_computed_values():
    logp = torch.log(torch.tensor([[0.5, 0.1]]))
    ref = torch.log(torch.tensor([[0.25, 0.4]]))
    x = logp - ref  # [log 2, log .25]
    expected = {
        "k1": x,
        "k2": 0.5 * x**2,
        "k3": torch.tensor([[0.5 - 1 + math.log(2), 4 - 1 - math.log(4)]]),
        "low_var_kl": torch.tensor([[0.5 - 1 + math.log(2), 4 - 1 - math.log(4)]]),
        "abs": x.abs(),
    }
    for name, value in expected.items():
        torch.testing.assert_close(kl_penalty(logp, ref, name), value, msg=name)
        if name + "+" in KL_ESTIMATORS:
            torch.testing.assert_close(kl_penalty(logp, ref, name + "+"), value, msg=name + "+")
    assert torch.equal(kl_penalty(logp, ref), kl_penalty(logp, ref, "k3"))


def test_low_var_kl_is_clamped_and_k3_is_not():
    logp, ref = torch.tensor([[-30.0, 0.0]]), torch.tensor([[0.0, -30.0]])
    torch.testing.assert_close(kl_penalty(logp, ref, "low_var_kl"), torch.tensor([[10.0, 10.0]]))
    assert kl_penalty(logp, ref, "k3")[0, 0] > 1e12


def test_unbiased_estimators_average_to_the_exact_kl():
    generator = torch.Generator().manual_seed(0)
    policy = torch.softmax(torch.randn(8, generator=generator), 0)
    reference = torch.softmax(torch.randn(8, generator=generator), 0)
    exact = (policy * (policy / reference).log()).sum()
    samples = torch.multinomial(policy, 400_000, replacement=True, generator=generator)
    logp, ref = policy.log()[samples][None], reference.log()[samples][None]
    for name in ("k1", "k3"):
        assert kl_penalty(logp, ref, name).mean() == pytest.approx(exact.item(), rel=0.02), name
    assert (kl_penalty(logp, ref, "k3") >= 0).all()


@pytest.mark.parametrize("base", ["k1", "k3", "low_var_kl"])
def test_straight_through_variants_take_the_k2_gradient(base):
    ref = torch.tensor([[-1.0, -2.0, -0.5]])
    logps = {name: torch.tensor([[-0.5, -2.5, -0.5]], requires_grad=True) for name in (base, base + "+", "k2")}
    for name, logp in logps.items():
        kl_penalty(logp, ref, name).sum().backward()
    torch.testing.assert_close(logps[base + "+"].grad, logps["k2"].grad)
    torch.testing.assert_close(logps["k2"].grad, (logps["k2"] - ref).detach())
    assert not torch.allclose(logps[base].grad, logps["k2"].grad)


def test_unknown_estimator_lists_the_valid_ones():
    with pytest.raises(ValueError, match="choose one of: .*low_var_kl") as error:
        kl_penalty(torch.zeros(1, 1), torch.zeros(1, 1), "k4")
    assert str(error.value).count("low_var_kl,") == 1  # the valid names are listed once
    with pytest.raises(ValueError):
        kl_penalty(torch.zeros(1, 1), torch.zeros(1, 1), "abs+")


def test_fixed_controller_never_moves():
    controller = FixedKLController(0.05)
    controller.update(100.0, n_steps=1000)
    assert controller.value == 0.05


def test_adaptive_controller_follows_ziegler():
    controller = AdaptiveKLController(init_coef=0.2, target=6.0, horizon=100)
    controller.update(current_kl=6.6, n_steps=10)  # err = .1
    assert controller.value == pytest.approx(0.2 * 1.01)
    controller.update(current_kl=60.0, n_steps=10)  # err clipped to .2
    assert controller.value == pytest.approx(0.2 * 1.01 * 1.02)
    controller.update(current_kl=0.0, n_steps=50)  # err clipped to -.2
    assert controller.value == pytest.approx(0.2 * 1.01 * 1.02 * 0.9)
    before = controller.value
    controller.update(current_kl=float("nan"), n_steps=50)
    assert controller.value == before
    with pytest.raises(ValueError):
        AdaptiveKLController(0.1, target=0.0, horizon=10)
