"""Per-token KL penalties between the policy and a reference model, and KL coefficient controllers.

``logp`` and ``ref_logp`` are per-token log-probabilities ``(B, T)`` of the sampled tokens under the policy
and the reference. With ``x = logp - ref_logp`` (Schulman 2020, "Approximating KL Divergence"):

- ``k1 = x``: unbiased value, high variance, can be negative per token.
- ``k2 = x**2 / 2``: biased value, but its gradient is the unbiased gradient of KL(pi || ref).
- ``k3 = exp(-x) + x - 1``: unbiased, non-negative, low variance; ``trl.GRPOTrainer``'s estimator.
- ``low_var_kl``: k3 with ``-x`` clamped to [-20, 20] and the result to [-10, 10] (verl), so one token with a
  huge ratio cannot blow up the loss.
- ``abs = |x|``.
- ``k1+``, ``k3+``, ``low_var_kl+``: straight-through; the forward value is the base estimator, the gradient
  is k2's (verl), since the gradients of k1 and k3 are biased as loss terms.

Formulas and papers: ``docs/algorithms.md``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

KL_ESTIMATORS: tuple[str, ...] = ("k1", "k2", "k3", "low_var_kl", "abs", "k1+", "k3+", "low_var_kl+")


def _base_kl(logp: Tensor, ref_logp: Tensor, estimator: str) -> Tensor:
    if estimator == "k1":
        return logp - ref_logp
    if estimator == "k2":
        return 0.5 * (logp - ref_logp).square()
    if estimator == "k3":  # the same operations as trl.GRPOTrainer, so the values match bitwise
        return torch.exp(ref_logp - logp) - (ref_logp - logp) - 1
    if estimator == "low_var_kl":
        log_ratio = (ref_logp - logp).clamp(-20.0, 20.0)
        return (torch.exp(log_ratio) - log_ratio - 1).clamp(-10.0, 10.0)
    if estimator == "abs":
        return (logp - ref_logp).abs()
    raise ValueError(f"Unknown KL estimator {estimator!r}; valid: {list(KL_ESTIMATORS)}.")


def kl_penalty(logp: Tensor, ref_logp: Tensor, estimator: str = "k3") -> Tensor:
    """Per-token KL estimate ``(B, T)`` of ``KL(pi || ref)`` from sampled-token log-probs (see the module doc).

    >>> logp, ref = torch.log(torch.tensor([[0.5, 0.25]])), torch.log(torch.tensor([[0.25, 0.25]]))
    >>> kl_penalty(logp, ref, "k1"), kl_penalty(logp, ref, "k3")
    (tensor([[0.6931, 0.0000]]), tensor([[0.1931, 0.0000]]))

    A straight-through variant keeps the value and takes k2's gradient, ``d/dlogp = logp - ref``:

    >>> logp.requires_grad_()
    tensor(...)
    >>> kl_penalty(logp, ref, "k3+").sum().backward(); logp.grad
    tensor([[0.6931, 0.0000]])
    """
    if estimator in KL_ESTIMATORS and estimator.endswith("+"):
        value = _base_kl(logp, ref_logp, estimator[:-1])
        k2 = _base_kl(logp, ref_logp, "k2")
        return k2 - k2.detach() + value.detach()
    return _base_kl(logp, ref_logp, estimator)


class FixedKLController:
    """A constant KL coefficient ``beta``.

    >>> controller = FixedKLController(0.04); controller.update(current_kl=5.0, n_steps=8); controller.value
    0.04
    """

    def __init__(self, coef: float):
        self.value = coef

    def update(self, current_kl: float, n_steps: int) -> None:
        """Nothing to adapt."""


class AdaptiveKLController:
    """Adaptive KL coefficient (Ziegler et al. 2019, "Fine-Tuning Language Models from Human Preferences").

    ``err = clip(KL / target - 1, -0.2, 0.2)`` and ``beta <- beta * (1 + err * n_steps / horizon)``: beta rises
    while the measured KL is above ``target`` and falls while below, by at most 20% per ``horizon`` steps.
    A non-finite KL measurement is ignored rather than poisoning beta.

    >>> controller = AdaptiveKLController(init_coef=0.1, target=1.0, horizon=10)
    >>> controller.update(current_kl=3.0, n_steps=5); round(controller.value, 4)
    0.11
    """

    def __init__(self, init_coef: float, target: float, horizon: int):
        if target <= 0 or horizon <= 0:
            raise ValueError(f"AdaptiveKLController needs target > 0 and horizon > 0, got {target}, {horizon}.")
        self.value = init_coef
        self.target = target
        self.horizon = horizon

    def update(self, current_kl: float, n_steps: int) -> None:
        """Move beta towards keeping ``current_kl`` (the mean per-token KL of the last batch) near the target."""
        current_kl = float(current_kl)
        if not math.isfinite(current_kl):
            return
        error = min(max(current_kl / self.target - 1.0, -0.2), 0.2)
        self.value *= 1.0 + error * n_steps / self.horizon
