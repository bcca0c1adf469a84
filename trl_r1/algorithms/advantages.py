"""Advantage estimators for RL on language models, as pure torch functions, and their registry.

Shapes: ``B`` sequences, ``T`` completion tokens. ``mask`` is ``(B, T)``, 1 on valid tokens, 0 on padding.
Sequence scores are ``(B,)``; the group estimators read them in TRL's layout, ``group_size`` consecutive
completions of the same prompt. A NaN score (every reward function returned ``None``) gets advantage 0 and
is left out of the group statistics, exactly like ``trl.GRPOTrainer``.

Masked positions (padding, or holes such as tool output) never leak into the result: they are skipped, and
every estimator returns 0 there. Formulas and papers: ``docs/algorithms.md``.

``ADVANTAGE_ESTIMATORS`` holds every estimator with one calling convention: keyword arguments named after the
fields of `AdvantageInputs` (each estimator takes the ones it names), returning advantages at the declared
``level`` (``"sequence"``: ``(B,)``, ``"token"``: ``(B, T)``). Entries with ``critic=True`` also take the
critic's ``values`` and return ``(advantages, returns)``. See `estimate_advantages`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from ..registry import Registry
from ._lookup import lookup


@dataclass
class AdvantageInputs:
    """The one keyword set every advantage estimator draws from (an estimator names the fields it reads).

    Attributes:
        scores: ``(B,)`` sequence rewards (KL penalty included when it is in the reward); NaN = unscored.
        mask: ``(B, T)`` valid completion tokens, unscored completions excluded.
        token_rewards: ``(B, T)`` the score on the last valid token, minus any per-token KL penalty.
        group_size: completions per prompt, consecutive in the batch.
        gamma: discount of token returns.
        values: ``(B, T)`` critic values (critic estimators only).
    """

    scores: Tensor
    mask: Tensor
    token_rewards: Tensor
    group_size: int = 1
    gamma: float = 1.0
    values: Tensor | None = None


def check_advantage_estimator(name: str, estimator: Callable[..., Tensor], meta: dict[str, object]) -> None:
    """Refuse an estimator without a ``level`` or with a required parameter `AdvantageInputs` cannot fill (a
    misspelt ``groupsize`` would otherwise fail at the first training step)."""
    if meta.get("level") not in ("sequence", "token"):
        raise ValueError(f"advantage estimator {name!r}: register it with level='sequence' (returns (B,)) or "
                         f"level='token' (returns (B, T)), got level={meta.get('level')!r}.")
    known = {f.name for f in fields(AdvantageInputs)}
    required = [p.name for p in inspect.signature(estimator).parameters.values()
                if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    unknown = [p for p in required if p not in known]
    if unknown:
        raise ValueError(f"advantage estimator {name!r} requires {unknown}, which no caller passes; its parameters "
                         f"must be named after AdvantageInputs fields {sorted(known)} (or have defaults).")


ADVANTAGE_ESTIMATORS: Registry = Registry(
    "advantage estimator",
    signature="estimator(**AdvantageInputs fields it names) -> advantages (B,) or (B, T), as its `level` declares",
    check=check_advantage_estimator,
)

# Block length of the blocked scan in `discounted_reverse_cumsum`: a (L, L) matmul per block, then a scan over
# T / L block carries. 32 balances matmul work (B*T*L) against the number of block carries.
_SCAN_BLOCK = 32


def masked_mean(x: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Mean of ``x`` over positions where ``mask`` is 1 (0 where nothing is valid; NaN at masked places is ignored).

    >>> masked_mean(torch.tensor([[1.0, 3.0, 100.0]]), torch.tensor([[1, 1, 0]]))
    tensor(2.)
    """
    mask = mask.to(x.dtype)
    total = torch.where(mask.bool(), x, torch.zeros_like(x)).mul(mask)
    if dim is None:
        return total.sum() / mask.sum().clamp(min=1e-8)
    return total.sum(dim) / mask.sum(dim).clamp(min=1e-8)


def masked_whiten(x: Tensor, mask: Tensor, shift_mean: bool = True, eps: float = 1e-8) -> Tensor:
    """``(x - mean) / sqrt(var + eps)`` over the valid positions (unbiased var), 0 at masked positions.

    With ``shift_mean=False`` the mean is added back (only the scale changes). With fewer than two valid
    values the variance is taken as 0 instead of dividing by zero.

    >>> masked_whiten(torch.tensor([[1.0, 3.0, 7.0]]), torch.tensor([[1, 1, 0]]))
    tensor([[-0.7071,  0.7071,  0.0000]])
    """
    valid = mask.bool()
    mean = masked_mean(x, mask)
    centered = torch.where(valid, x - mean, torch.zeros_like(x))
    var = centered.pow(2).sum() / (valid.sum() - 1).clamp(min=1)  # 0 when fewer than two values
    whitened = centered * torch.rsqrt(var + eps)
    if not shift_mean:
        whitened = whitened + mean
    return torch.where(valid, whitened, torch.zeros_like(whitened))


def sequence_to_token_rewards(scores: Tensor, mask: Tensor) -> Tensor:
    """Place each sequence score on its last valid token: ``(B,)`` -> ``(B, T)``; rows without valid tokens get 0.

    >>> sequence_to_token_rewards(torch.tensor([2.0, 5.0]), torch.tensor([[1, 1, 0], [1, 0, 1]]))
    tensor([[0., 2., 0.],
            [0., 0., 5.]])
    """
    valid = mask.bool()
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = torch.where(valid, positions, -1).max(dim=1).values
    rewards = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
    has_token = last >= 0
    rows = torch.arange(mask.shape[0], device=mask.device)[has_token]
    rewards[rows, last[has_token]] = scores[has_token]
    return rewards


def discounted_reverse_cumsum(x: Tensor, discount: float | Tensor) -> Tensor:
    """``y_t = x_t + c * y_{t+1}`` (``y_T = 0``) along the last dim of ``x (B, T)``; ``c`` scalar or ``(B,)`` in [0, 1].

    Vectorised as a blocked scan: inside a block of ``L`` tokens, ``y = x @ W`` with ``W[j, i] = c**(j - i)``
    for ``j >= i``; across blocks, the block heads form the same recurrence with factor ``c**L``, solved
    recursively. All weights are powers ``<= 1`` (no ``c**-k`` factors), so the result is as accurate as the
    sequential loop for every ``c`` in [0, 1], including 0 and 1.

    >>> discounted_reverse_cumsum(torch.tensor([[1.0, 2.0, 4.0]]), 0.5)
    tensor([[3., 4., 4.]])
    """
    batch, length = x.shape
    block = min(_SCAN_BLOCK, max(length, 1))
    n_blocks = -(-length // block)
    if n_blocks * block != length:
        x = torch.nn.functional.pad(x, (0, n_blocks * block - length))
    discount = torch.as_tensor(discount, dtype=x.dtype, device=x.device)
    per_row = discount.dim() > 0  # a (B,) discount needs one weight matrix per row (bmm), a scalar one GEMM
    offsets = torch.arange(block, device=x.device)
    distance = offsets[:, None] - offsets[None, :]  # j - i, indexed [j, i]
    row_discount = discount[:, None, None] if per_row else discount
    weights = row_discount.pow(distance.clamp(min=0).to(x.dtype)) * (distance >= 0)
    local = x.reshape(batch, n_blocks, block) @ weights  # (B, n_blocks, L): sums within each block
    if n_blocks > 1:
        heads = discounted_reverse_cumsum(local[:, :, 0], discount.pow(block))
        next_heads = torch.nn.functional.pad(heads[:, 1:], (0, 1))  # y at the start of the following block
        decay = row_discount.pow((block - offsets).to(x.dtype))  # c**(L - i), (L,) or (B, 1, L)
        local.addcmul_(next_heads[:, :, None], decay)
    return local.view(batch, -1)[:, :length]


def _valid_first_order(mask: Tensor) -> Tensor | None:
    """Permutation moving each row's valid tokens to the front (stable), or None if masks are already prefixes."""
    valid = mask.bool()
    if not (valid[:, 1:] & ~valid[:, :-1]).any():
        return None
    return torch.argsort((~valid).to(torch.int8), dim=1, stable=True)


@ADVANTAGE_ESTIMATORS.register("gae", level="token", critic=True)
def gae(
    token_rewards: Tensor,
    values: Tensor,
    mask: Tensor,
    gamma: float = 1.0,
    lam: float | Tensor = 1.0,
    whiten: bool = False,
) -> tuple[Tensor, Tensor]:
    """Generalised Advantage Estimation (Schulman et al. 2016), vectorised: ``(advantages, returns)``, each ``(B, T)``.

    ``delta_t = r_t + gamma * V_{t+1} - V_t`` and ``A_t = delta_t + gamma * lam * A_{t+1}``, with ``V`` and
    ``A`` zero after the last valid token; ``returns = A + V`` (the critic's target, computed before any
    whitening). ``lam`` may be a per-sequence ``(B,)`` tensor (see `length_adaptive_lambda`).

    Masked positions are skipped as if they were cut out of the sequence (carry-forward, as in the textbook
    loop of verl/TRL): a token before a hole bootstraps from the value of the next *valid* token, the hole's
    token_rewards are ignored, and ``gamma * lam`` counts valid steps. Outputs are 0 at masked positions.

    >>> adv, ret = gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.5, 0.5]]), torch.ones(1, 3))
    >>> adv, ret
    (tensor([[0.5000, 0.5000, 0.5000]]), tensor([[1., 1., 1.]]))
    """
    order = _valid_first_order(mask)
    valid = mask.bool()
    if order is not None:
        token_rewards, values = token_rewards.gather(1, order), values.gather(1, order)
        valid = valid.gather(1, order)
    values = torch.where(valid, values, 0.0)  # also drops NaN/inf at masked positions
    deltas = torch.where(valid, token_rewards, 0.0).sub_(values)
    deltas[:, :-1].add_(values[:, 1:], alpha=gamma)
    discount = gamma * lam.to(deltas) if isinstance(lam, Tensor) else gamma * lam
    advantages = torch.where(valid, discounted_reverse_cumsum(deltas, discount), 0.0)
    returns = values.add_(advantages)
    if order is not None:
        advantages = torch.empty_like(advantages).scatter_(1, order, advantages)
        returns = torch.empty_like(returns).scatter_(1, order, returns)
    if whiten:
        advantages = masked_whiten(advantages, mask)
    return advantages, returns


@ADVANTAGE_ESTIMATORS.register("decoupled_gae", level="token", critic=True)
def decoupled_gae(
    token_rewards: Tensor,
    values: Tensor,
    mask: Tensor,
    gamma: float = 1.0,
    lam_actor: float | Tensor = 0.95,
    lam_critic: float = 1.0,
    whiten: bool = False,
) -> tuple[Tensor, Tensor]:
    """Decoupled GAE (VC-PPO, Yuan et al. 2025): advantages with ``lam_actor``, critic returns with ``lam_critic``.

    ``lam_critic = 1`` gives the critic unbiased Monte-Carlo targets for long sparse-reward completions, while
    ``lam_actor < 1`` keeps the policy gradient's variance low. ``lam_actor`` may be per-sequence (VAPO).

    >>> token_rewards, values, mask = torch.tensor([[0.0, 1.0]]), torch.tensor([[0.2, 0.4]]), torch.ones(1, 2)
    >>> adv, ret = decoupled_gae(token_rewards, values, mask, lam_actor=0.0, lam_critic=1.0)
    >>> adv, ret
    (tensor([[0.2000, 0.6000]]), tensor([[1., 1.]]))
    """
    advantages, _ = gae(token_rewards, values, mask, gamma=gamma, lam=lam_actor, whiten=whiten)
    _, returns = gae(token_rewards, values, mask, gamma=gamma, lam=lam_critic)
    return advantages, returns


def length_adaptive_lambda(lengths: Tensor, alpha: float) -> Tensor:
    """VAPO's per-sequence actor lambda (Yue et al. 2025): ``lam = 1 - 1 / (alpha * length)``, clamped to [0, 1].

    Longer completions get a lambda closer to 1, so the bootstrapped critic bias does not dominate their
    early tokens. The paper uses ``alpha = 0.05``.

    >>> length_adaptive_lambda(torch.tensor([10, 40, 200]), alpha=0.05)
    tensor([0.0000, 0.5000, 0.9000])
    """
    if alpha <= 0:
        raise ValueError(f"length_adaptive_lambda needs alpha > 0, got {alpha}.")
    scaled = (alpha * lengths.to(torch.get_default_dtype())).clamp(min=1.0)
    return (1.0 - 1.0 / scaled).clamp(0.0, 1.0)


def _grouped(scores: Tensor, group_size: int) -> Tensor:
    """Scores ``(B,)`` as ``(B / group_size, group_size)``; a clear error when B is not a multiple."""
    if group_size < 1 or scores.numel() % group_size:
        raise ValueError(f"{scores.numel()} scores cannot be split into groups of {group_size}.")
    return scores.reshape(-1, group_size)


def _group_nanstd(grouped: Tensor) -> Tensor:
    """Bessel-corrected std per group ignoring NaN, NaN for fewer than two values (as TRL's ``nanstd``)."""
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    variance = torch.nanmean((grouped - mean) ** 2, dim=1, keepdim=True)
    count = torch.sum(~torch.isnan(grouped), dim=1, keepdim=True)
    correction = torch.where(count > 1, count / (count - 1), torch.full_like(variance, float("nan")))
    return torch.sqrt(variance * correction)


@ADVANTAGE_ESTIMATORS.register("grpo", level="sequence", trl_builtin=True)
def grpo_advantages(scores: Tensor, group_size: int, eps: float = 1e-4) -> Tensor:
    """GRPO (Shao et al. 2024): ``A_i = (r_i - mean_g) / (std_g + eps)``, std with Bessel's correction, ``(B,)``.

    Same arithmetic as ``trl.GRPOTrainer`` with ``scale_rewards="group"`` (eps 1e-4), so results match bitwise.
    Groups of identical scores get 0.

    >>> grpo_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), group_size=2)
    tensor([ 0.7070, -0.7070,  0.0000,  0.0000])
    """
    grouped = _grouped(scores, group_size)
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    std = _group_nanstd(grouped) if group_size > 1 else torch.zeros_like(mean)
    return torch.nan_to_num((grouped - mean) / (std + eps), nan=0.0).view(-1)


@ADVANTAGE_ESTIMATORS.register("dr_grpo", level="sequence")
def dr_grpo_advantages(scores: Tensor, group_size: int) -> Tensor:
    """Dr. GRPO (Liu et al. 2025): ``A_i = r_i - mean_g``; no std division, which biases towards easy/hard prompts.

    >>> dr_grpo_advantages(torch.tensor([1.0, 0.0, float("nan"), 2.0]), group_size=2)
    tensor([ 0.5000, -0.5000,  0.0000,  0.0000])
    """
    grouped = _grouped(scores, group_size)
    return torch.nan_to_num(grouped - torch.nanmean(grouped, dim=1, keepdim=True), nan=0.0).view(-1)


@ADVANTAGE_ESTIMATORS.register("rloo", level="sequence")
def rloo_advantages(scores: Tensor, group_size: int) -> Tensor:
    """RLOO (Ahmadian et al. 2024): ``A_i = r_i - mean_{j != i} r_j`` within the group, ``(B,)``.

    The leave-one-out baseline is independent of ``r_i``, so the estimate is unbiased. A completion with no
    other scored completion in its group gets 0.

    >>> rloo_advantages(torch.tensor([1.0, 0.0, 0.0, 3.0, 3.0, 0.0]), group_size=3)
    tensor([ 1.0000, -0.5000, -0.5000,  1.5000,  1.5000, -3.0000])
    """
    grouped = _grouped(scores, group_size)
    scored = ~torch.isnan(grouped)
    others = scored.sum(dim=1, keepdim=True) - 1
    total = torch.nansum(grouped, dim=1, keepdim=True)
    baseline = (total - grouped) / others.clamp(min=1)
    advantages = torch.where(scored & (others > 0), grouped - baseline, torch.zeros_like(grouped))
    return advantages.view(-1)


@ADVANTAGE_ESTIMATORS.register("reinforce_pp", level="token")
def reinforce_pp_advantages(token_rewards: Tensor, mask: Tensor, gamma: float = 1.0) -> Tensor:
    """REINFORCE++ (Hu 2025): token returns ``G_t = r_t + gamma * G_{t+1}``, whitened over all valid tokens, ``(B, T)``.

    No critic and no group baseline: the global whitening is the baseline. The per-token KL penalty is meant
    to be in ``token_rewards`` (see `trl_r1.algorithms.kl`). Holes in the mask are skipped as in `gae`.

    >>> reinforce_pp_advantages(torch.tensor([[0.0, 1.0], [0.0, 0.0]]), torch.ones(2, 2))
    tensor([[ 0.8660,  0.8660],
            [-0.8660, -0.8660]])
    """
    returns, _ = gae(token_rewards, torch.zeros_like(token_rewards), mask, gamma=gamma, lam=1.0)
    return masked_whiten(returns, mask)


@ADVANTAGE_ESTIMATORS.register("reinforce_pp_baseline", level="token")
def reinforce_pp_baseline_advantages(scores: Tensor, group_size: int, mask: Tensor) -> Tensor:
    """REINFORCE++-baseline (Hu 2025): ``r_i - mean_g`` on every valid token, whitened over the batch, ``(B, T)``.

    Unscored (NaN) completions are left out of the whitening statistics and get 0.

    >>> reinforce_pp_baseline_advantages(torch.tensor([1.0, 0.0, 2.0, 2.0]), 2, torch.ones(4, 1))
    tensor([[ 1.2247],
            [-1.2247],
            [ 0.0000],
            [ 0.0000]])
    """
    scored = ~torch.isnan(scores)
    centered = dr_grpo_advantages(scores, group_size)
    valid = mask.bool() & scored[:, None]
    return masked_whiten(centered[:, None].expand(mask.shape).to(scores.dtype), valid)


def estimate_advantages(name: str, inputs: AdvantageInputs) -> Tensor | tuple[Tensor, Tensor]:
    """Call the registered estimator ``name`` with the fields of ``inputs`` it takes.

    >>> scores, mask = torch.tensor([1.0, 0.0, 3.0, 3.0]), torch.ones(4, 2)
    >>> inputs = AdvantageInputs(scores, mask, sequence_to_token_rewards(scores, mask), group_size=2)
    >>> estimate_advantages("rloo", inputs), estimate_advantages("reinforce_pp_baseline", inputs).shape
    (tensor([ 1., -1.,  0.,  0.]), torch.Size([4, 2]))
    """
    estimator = lookup(ADVANTAGE_ESTIMATORS, name)
    accepted = inspect.signature(estimator).parameters
    result = estimator(**{f.name: getattr(inputs, f.name) for f in fields(inputs) if f.name in accepted})
    meta = ADVANTAGE_ESTIMATORS.meta(name)
    shape = tuple(inputs.mask.shape) if meta["level"] == "token" else (inputs.mask.size(0),)
    outputs = result if meta.get("critic") and isinstance(result, tuple) else (result,)
    for output in outputs:
        if not isinstance(output, Tensor) or tuple(output.shape) != shape:
            got = tuple(output.shape) if isinstance(output, Tensor) else type(output).__name__
            raise ValueError(f"advantage estimator {name!r} returned {got}; level={meta['level']!r} needs a tensor "
                             f"of shape {shape}{' for advantages and returns' if meta.get('critic') else ''}.")
    return result


def estimator_reads(name: str, field_name: str) -> bool:
    """Whether the registered estimator ``name`` takes the `AdvantageInputs` field ``field_name`` (an option
    feeding a field it does not take changes nothing).

    >>> estimator_reads("reinforce_pp", "gamma"), estimator_reads("rloo", "gamma")
    (True, False)
    """
    return field_name in inspect.signature(lookup(ADVANTAGE_ESTIMATORS, name)).parameters


def get_advantage_estimator(name: str):
    """The estimator registered as ``name``.

    >>> get_advantage_estimator("rloo").__name__
    'rloo_advantages'
    """
    return lookup(ADVANTAGE_ESTIMATORS, name)
