"""The critic's pure tensor functions (no TRL import): PPO's clipped value loss and the explained variance it is
judged by. `trl_r1.trainers.R1PPOTrainer` uses them; see ``docs/algorithms.md``."""

from __future__ import annotations

import torch
from torch import Tensor

from .advantages import masked_mean


def clipped_value_loss(
    values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor, clip_range: float
) -> tuple[Tensor, Tensor]:
    """PPO's clipped value loss and the fraction of tokens where clipping bound, both token means over ``mask``.

    ``0.5 * max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)``: the critic gets no credit for moving further
    than ``c`` from the rollout's values in one batch (PPO2, Dhariwal et al. 2017; TRL's former PPOTrainer).

    Example:
        >>> old, returns, mask = torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2)
        >>> loss, clipfrac = clipped_value_loss(torch.tensor([[0.1, 0.5]]), old, returns, mask, clip_range=0.2)
        >>> loss, clipfrac  # 0.5 is clipped to 0.2 (error 0.8); 0.1 is not (error 0.9)
        (tensor(0.3625), tensor(0.5000))
    """
    clipped = old_values + (values - old_values).clamp(-clip_range, clip_range)
    unclipped_error = (values - returns).square()
    clipped_error = (clipped - returns).square()
    loss = 0.5 * masked_mean(torch.maximum(unclipped_error, clipped_error), mask)
    clipfrac = masked_mean((clipped_error > unclipped_error).float(), mask)
    return loss, clipfrac


def explained_variance(values: Tensor, returns: Tensor, mask: Tensor) -> Tensor:
    """``1 - Var(R - V) / Var(R)`` over the valid tokens: 1 for a perfect critic, 0 for a constant one, < 0 worse.

    Returns NaN when the returns do not vary (nothing to explain).

    Example:
        >>> returns, mask = torch.tensor([[1.0, 3.0], [5.0, 7.0]]), torch.ones(2, 2)
        >>> explained_variance(returns, returns, mask), explained_variance(torch.full((2, 2), 4.0), returns, mask)
        (tensor(1.), tensor(0.))
    """
    residual = returns - values
    residual_var = masked_mean((residual - masked_mean(residual, mask)).square(), mask)
    returns_var = masked_mean((returns - masked_mean(returns, mask)).square(), mask)
    return (1.0 - residual_var / returns_var).where(returns_var > 0, float("nan"))
