"""Per-token KL estimators between the policy and a reference model (a registry), their loss term, and KL
coefficient controllers.

``logp`` and ``ref_logp`` are per-token log-probabilities ``(B, T)`` of the sampled tokens under the policy
and the reference. With ``x = logp - ref_logp`` (Schulman 2020, "Approximating KL Divergence"):

- ``k1 = x``: unbiased value, high variance, can be negative per token.
- ``k2 = x**2 / 2``: biased value, but its gradient is the unbiased gradient of KL(pi || ref).
- ``k3 = exp(-x) + x - 1``: unbiased, non-negative, low variance; ``trl.GRPOTrainer``'s estimator.
- ``low_var_kl``: k3 with ``-x`` clamped to [-20, 20] and the result to [-10, 10] (verl), so one token with a
  huge ratio cannot blow up the loss.
- ``abs = |x|``.
- ``k1+``, ``k3+``, ``low_var_kl+``: straight-through; the forward value is the base estimator, the gradient
  is k2's (verl).

In a loss with the importance ratio (TRL's ``use_bias_correction_kl=True``) k2, k3, low_var_kl and the ``+``
estimators have the same gradient (`same_loss_gradient`): they train identically and differ only in the value
logged under ``kl/<estimator>``.

Each estimator declares what it is unbiased for (``unbiased="value"``: ``E[f] = KL``; ``"gradient"``:
``E[grad f] = grad KL``), and `kl_loss_term` weights it by the importance ratio accordingly, so that the
expected gradient of the loss term is the exact KL gradient for both kinds. Formulas: ``docs/algorithms.md``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import torch
from torch import Tensor

from ..registry import Registry
from ._lookup import lookup

KL_UNBIASED = ("value", "gradient", None)


def check_kl_estimator(name: str, estimator: Callable[[Tensor, Tensor], Tensor], meta: dict[str, object]) -> None:
    """Refuse an estimator that cannot be called as ``kl(logp, ref_logp)`` or does not declare ``unbiased``, which
    `kl_loss_term` reads to weight it."""
    if "unbiased" not in meta or meta["unbiased"] not in KL_UNBIASED:
        raise ValueError(f"KL estimator {name!r}: register it with unbiased= one of {list(KL_UNBIASED)}, got "
                         f"{meta.get('unbiased', 'nothing')!r}.")
    try:
        inspect.signature(estimator).bind(None, None)
    except TypeError as error:
        raise ValueError(f"KL estimator {name!r} must take (logp, ref_logp): {error}.") from None


KL_ESTIMATORS: Registry = Registry(
    "KL estimator",
    signature="kl(logp (B, T), ref_logp (B, T)) -> per-token estimate of KL(pi || ref) (B, T)",
    check=check_kl_estimator,
)


@KL_ESTIMATORS.register("k1", unbiased="value")
def k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    return logp - ref_logp


@KL_ESTIMATORS.register("k2", unbiased="gradient", loss_gradient="k2")
def k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    return 0.5 * (logp - ref_logp).square()


@KL_ESTIMATORS.register("k3", unbiased="value", loss_gradient="k2")
def k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    # The same operations as trl.GRPOTrainer, so the values match bitwise.
    return torch.exp(ref_logp - logp) - (ref_logp - logp) - 1


@KL_ESTIMATORS.register("low_var_kl", unbiased="value", loss_gradient="k2")
def low_var_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    # Unbiased while nothing is clamped (|log ratio| <= 20, value <= 10).
    log_ratio = (ref_logp - logp).clamp(-20.0, 20.0)
    return (torch.exp(log_ratio) - log_ratio - 1).clamp(-10.0, 10.0)


@KL_ESTIMATORS.register("abs", unbiased=None)
def abs_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    return (logp - ref_logp).abs()


class StraightThrough:
    """The value of the ``base`` estimator with the gradient of k2 (verl's ``"+"`` estimators); picklable."""

    def __init__(self, base: str):
        self.base = base

    def __call__(self, logp: Tensor, ref_logp: Tensor) -> Tensor:
        value = KL_ESTIMATORS[self.base](logp, ref_logp)
        quadratic = k2(logp, ref_logp)
        return quadratic - quadratic.detach() + value.detach()


for _base in ("k1", "k3", "low_var_kl"):
    KL_ESTIMATORS.add(f"{_base}+", StraightThrough(_base), unbiased="gradient", loss_gradient="k2")


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
    kl = lookup(KL_ESTIMATORS, estimator)(logp, ref_logp)
    if not isinstance(kl, Tensor) or kl.shape != logp.shape:
        got = tuple(kl.shape) if isinstance(kl, Tensor) else type(kl).__name__
        raise ValueError(f"KL estimator {estimator!r} returned {got}; it must return one value per token, shape "
                         f"{tuple(logp.shape)}.")
    return kl


def same_loss_gradient(a: str, b: str) -> bool:
    """Whether estimators ``a`` and ``b`` give the same gradient as an importance-weighted loss term
    (`kl_loss_term` with a ``log_ratio``, TRL's ``use_bias_correction_kl=True``), so they train identically and
    differ only in the logged value. k2, k3, low_var_kl (unclamped) and the ``+`` ones all give ``ratio * x *
    grad log pi``: ``grad(ratio * k3) = ratio * ((1 - e^-x) + (e^-x + x - 1)) grad log pi``. Derivation:
    docs/algorithms.md.

    >>> same_loss_gradient("k3", "k2"), same_loss_gradient("k3", "k1")
    (True, False)
    """
    shared = KL_ESTIMATORS.meta(a).get("loss_gradient")
    return a == b or (shared is not None and shared == KL_ESTIMATORS.meta(b).get("loss_gradient"))


def kl_loss_term(logp: Tensor, ref_logp: Tensor, estimator: str, log_ratio: Tensor | None = None) -> Tensor:
    """The per-token KL term of a policy loss ``(B, T)``, on tokens sampled from ``pi_old``.

    ``log_ratio`` is ``log(pi / pi_old)`` (differentiable; per token ``(B, T)`` or per sequence ``(B, 1)``), or
    None for no importance weighting (TRL's ``use_bias_correction_kl=False``). With it, an estimator unbiased
    for the KL *value* is multiplied by the differentiable ratio, whose gradient adds the score-function term
    ``f * grad log pi`` (DeepSeek-V3.2's unbiased KL gradient, TRL's default); an estimator unbiased for the KL
    *gradient* (k2 and the ``"+"`` variants) already has it, so the ratio only reweights (detached).

    >>> logp = torch.zeros(1, 1, requires_grad=True); ref = torch.tensor([[-1.0]])
    >>> kl_loss_term(logp, ref, "k1+", log_ratio=logp - logp.detach()).backward(); logp.grad  # k2's: x = 1
    tensor([[1.]])
    """
    kl = kl_penalty(logp, ref_logp, estimator)
    if log_ratio is None:
        return kl
    ratio = torch.exp(log_ratio)
    if KL_ESTIMATORS.meta(estimator)["unbiased"] == "gradient":
        ratio = ratio.detach()
    return kl * ratio


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


def kl_controller(init_coef: float, target: float | None, horizon: int) -> FixedKLController | AdaptiveKLController:
    """The adaptive controller when a ``target`` is set, else a fixed coefficient.

    >>> type(kl_controller(0.1, None, 100)).__name__, type(kl_controller(0.1, 0.5, 100)).__name__
    ('FixedKLController', 'AdaptiveKLController')
    """
    return FixedKLController(init_coef) if target is None else AdaptiveKLController(init_coef, target, horizon)
