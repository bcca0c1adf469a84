"""The expected gradient of each KL estimator, in the loss as the trainers use it (`kl_loss_term`, with TRL's
default importance ratio), equals the exact gradient of KL(pi || ref). Checked by exact enumeration over a small
categorical distribution: every outcome weighted by its sampling probability, so there is no sampling noise."""

import re
from pathlib import Path
from unittest.mock import patch

import pytest
import torch

from trl_r1.algorithms import KL_ESTIMATORS, kl_loss_term

ROOT = Path(__file__).resolve().parents[1]

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


# The shipped estimators, by name: an estimator registered beside them (DESIGN.md's k2_half) is checked by what
# it declares, and leaves these tests' meaning intact.
SHIPPED = {"k1": "value", "k2": "gradient", "k3": "value", "low_var_kl": "value", "abs": None,
           "k1+": "gradient", "k3+": "gradient", "low_var_kl+": "gradient"}


def test_the_shipped_estimators_declare_what_they_are_unbiased_for():
    assert {name: KL_ESTIMATORS.meta(name)["unbiased"] for name in SHIPPED} == SHIPPED


def test_the_declared_biased_estimator_is_biased():
    biased = [name for name in SHIPPED if not KL_ESTIMATORS.meta(name)["unbiased"]]
    assert biased == ["abs"]
    assert abs(gradient_scale(expected_loss_gradient("abs"), exact_kl_gradient()) - 1.0) > 0.05


def test_every_registered_estimator_declares_what_it_is_unbiased_for():
    assert {KL_ESTIMATORS.meta(name)["unbiased"] for name in KL_ESTIMATORS} == {"value", "gradient", None}


def test_design_md_registration_examples_work_as_written(tmp_path):
    """DESIGN.md's python block, run in the modules it names: each example is one registration, then usable by
    name (in the estimators' entry points and in `R1GRPOConfig`); the registries are restored afterwards."""
    from trl_r1.algorithms import (
        ADVANTAGE_ESTIMATORS,
        AdvantageInputs,
        advantages,
        estimate_advantages,
        kl,
        kl_penalty,
        sequence_to_token_rewards,
    )
    from trl_r1.trainers import R1GRPOConfig

    block = re.search(r"```python\n(.*?)```", (ROOT / "DESIGN.md").read_text(), re.S).group(1)
    with patch.dict(ADVANTAGE_ESTIMATORS._entries), patch.dict(KL_ESTIMATORS._entries):
        exec(block, {**vars(advantages), **vars(kl)})
        scores, mask = torch.tensor([1.0, 3.0, float("nan"), 0.0, 2.0, 2.0]), torch.ones(6, 2)
        inputs = AdvantageInputs(scores, mask, sequence_to_token_rewards(scores.nan_to_num(), mask), group_size=3)
        assert estimate_advantages("max_baseline", inputs).tolist() == [-2.0, 0.0, 0.0, -2.0, 0.0, 0.0]
        logp, ref = torch.tensor([[0.0, -0.5]]), torch.tensor([[-1.0, -0.5]])
        torch.testing.assert_close(kl_penalty(logp, ref, "k2_half"), kl_penalty(logp, ref, "k2") / 2)
        # declared biased (unbiased=None), and it is: half of k2's gradient, plus the score term the ratio adds
        assert abs(gradient_scale(expected_loss_gradient("k2_half"), exact_kl_gradient()) - 1.0) > 0.05
        config = R1GRPOConfig(output_dir=str(tmp_path), advantage_estimator="max_baseline", kl_estimator="k2_half",
                              beta=0.01, use_cpu=True, report_to="none")
        assert (config.advantage_estimator, config.kl_estimator) == ("max_baseline", "k2_half")
    assert "max_baseline" not in ADVANTAGE_ESTIMATORS and "k2_half" not in KL_ESTIMATORS
