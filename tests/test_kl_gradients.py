"""The expected gradient of each KL estimator, in the loss as the trainers use it (`kl_loss_term`, with TRL's
default importance ratio), equals the exact gradient of KL(pi || ref). Checked by exact enumeration over a small
categorical distribution: every outcome weighted by its sampling probability, so there is no sampling noise."""

import pytest
import torch

from trl_r1.algorithms import KL_ESTIMATORS, kl_loss_term

K = 7  # outcomes ("tokens") of the categorical policy


def _distributions():
    generator = torch.Generator().manual_seed(0)
    theta = torch.randn(K, generator=generator, dtype=torch.float64)
    ref_logp = torch.log_softmax(torch.randn(K, generator=generator, dtype=torch.float64), 0)
    drift = 0.3 * torch.randn(K, generator=generator, dtype=torch.float64)  # pi_old != pi after an update
    return theta, ref_logp, drift


def exact_kl_gradient() -> torch.Tensor:
    theta, ref_logp, _ = _distributions()
    theta.requires_grad_()
    logp = torch.log_softmax(theta, 0)
    kl = (logp.exp() * (logp - ref_logp)).sum()
    return torch.autograd.grad(kl, theta)[0]


def expected_loss_gradient(estimator: str, importance_ratio: bool = True, off_policy: bool = False) -> torch.Tensor:
    """``grad E_{y ~ pi_old}[term(y)]`` of the loss term, each outcome ``y`` a token weighted by ``pi_old(y)``."""
    theta, ref_logp, drift = _distributions()
    theta.requires_grad_()
    logp = torch.log_softmax(theta, 0)
    old_logp = torch.log_softmax(theta.detach() + drift, 0) if off_policy else logp.detach()
    log_ratio = (logp - old_logp)[None] if importance_ratio else None
    term = kl_loss_term(logp[None], ref_logp[None], estimator, log_ratio)
    expected = (old_logp.exp()[None] * term).sum()
    return torch.autograd.grad(expected, theta)[0]


def gradient_scale(gradient: torch.Tensor, exact: torch.Tensor) -> float:
    """The projection of ``gradient`` on the exact one, in units of it (1.0 = exact)."""
    return float(gradient @ exact / (exact @ exact))


UNBIASED = [name for name in KL_ESTIMATORS if KL_ESTIMATORS.meta(name)["unbiased"]]


@pytest.mark.parametrize("off_policy", [False, True], ids=["on-policy", "off-policy"])
@pytest.mark.parametrize("estimator", UNBIASED)
def test_expected_gradient_with_the_importance_ratio_is_the_exact_kl_gradient(estimator, off_policy):
    exact = exact_kl_gradient()
    gradient = expected_loss_gradient(estimator, off_policy=off_policy)
    assert gradient_scale(gradient, exact) == pytest.approx(1.0, abs=1e-9), estimator
    torch.testing.assert_close(gradient, exact, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("estimator", [n for n in UNBIASED if KL_ESTIMATORS.meta(n)["unbiased"] == "gradient"])
def test_gradient_estimators_are_exact_on_policy_without_a_ratio(estimator):
    # TRL's use_bias_correction_kl=False: no ratio; k2 and the straight-through estimators need none on-policy.
    torch.testing.assert_close(expected_loss_gradient(estimator, importance_ratio=False), exact_kl_gradient())


def test_the_declared_biased_estimator_is_biased():
    biased = [name for name in KL_ESTIMATORS if not KL_ESTIMATORS.meta(name)["unbiased"]]
    assert biased == ["abs"]
    assert abs(gradient_scale(expected_loss_gradient("abs"), exact_kl_gradient()) - 1.0) > 0.05


def test_every_registered_estimator_declares_what_it_is_unbiased_for():
    assert {KL_ESTIMATORS.meta(name)["unbiased"] for name in KL_ESTIMATORS} == {"value", "gradient", None}
