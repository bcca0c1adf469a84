"""What both trl_r1 trainers do on top of `GRPOSeam`: the CLI's checks before training (our reward names, the
columns the rewards read, the world size the launcher meant), the KL controller (applied, then adapted,
identically on every rank, and saved with checkpoints), the KL penalty in the reward, and the completion scores."""

from __future__ import annotations

import difflib
from typing import Any

import torch
from torch import Tensor

from ..algorithms import kl_controller, kl_penalty
from ..registry import looks_like_import_path
from ..rewards import REWARD_REGISTRY, get_reward_funcs
from ..rewards.base import column_problems
from .launch import check_world_size
from .trl_compat import GRPOSeam


def resolve_rewards(reward_funcs: Any) -> Any:
    """Our reward names (``"format"``, ``"math"``, registry names, ``{"name": ..., **options}``, dotted paths)
    resolved as the CLI resolves them; anything else (a callable, a model, a Hub id) is left for TRL, except a
    near-miss of one of our names (``"fromat"``), which fails here rather than as a Hub lookup."""
    if reward_funcs is None:
        return None
    entries = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
    ours = [isinstance(e, dict) or (isinstance(e, str) and (e in REWARD_REGISTRY or looks_like_import_path(e)))
            for e in entries]
    for entry, mine in zip(entries, ours, strict=True):
        typo = isinstance(entry, str) and not mine and difflib.get_close_matches(entry, list(REWARD_REGISTRY), n=1)
        if typo:  # TRL would try to load it from the Hub as a reward model
            raise ValueError(f"unknown reward {entry!r}: did you mean {typo[0]!r}? (registered: "
                             f"{sorted(REWARD_REGISTRY)})")
    resolved = [get_reward_funcs([e])[0] if mine else e for e, mine in zip(entries, ours, strict=True)]
    return resolved if isinstance(reward_funcs, list) else resolved[0]


def check_reward_columns(trainer: str, reward_funcs: Any, train_dataset: Any) -> None:
    """Fail before training when the train dataset lacks a column a reward declares it reads (otherwise every
    reward is None and TRL stops mid-run, or the run trains on the others alone)."""
    columns = getattr(train_dataset, "column_names", None)
    if reward_funcs is None or not isinstance(columns, list):
        return
    funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
    problems = [p for func in funcs if not isinstance(func, str) for p in column_problems(func, columns)]
    if problems:
        raise ValueError(f"{trainer}: the train dataset cannot feed its rewards: " + "; ".join(problems) + ".")


class R1TrainerBase(GRPOSeam):
    """Owns ``self.kl_controller``, built from ``args.kl_coef`` / ``kl_target`` / ``kl_horizon``.

    The coefficient of a batch is the controller's value when the batch is penalised (KL in the reward) or its
    loss computed (KL in the loss); the controller adapts afterwards, from the KL measured over all processes,
    so every rank applies and stores the same coefficient (PPO, verl and OpenRLHF order).
    """

    def __init__(self, model, reward_funcs=None, args=None, train_dataset=None, *more_args, **kwargs):
        reward_funcs = resolve_rewards(reward_funcs)
        check_reward_columns(type(self).__name__, reward_funcs, train_dataset)
        super().__init__(model, reward_funcs, args, train_dataset, *more_args, **kwargs)
        check_world_size(self.accelerator.num_processes)
        self.kl_controller = kl_controller(self.args.kl_coef, self.args.kl_target, self.args.kl_horizon)

    def record_kl(self, stats: Tensor) -> None:
        """Log the mean per-token KL of ``stats = kl_stats(...)`` summed over every process, and adapt the
        coefficient from it (train mode only).

        ``kl`` is k3 whatever the estimator, as TRL logs it, so curves compare across runs; the estimator's own
        mean goes to ``kl/<estimator>`` and drives the adaptive coefficient. ``kl_coef`` is the coefficient this
        step applied (verl's order), not the adapted one the next step will use.
        """
        estimate_sum, k3_sum, tokens, completions = stats.tolist()
        mean_estimate = estimate_sum / max(tokens, 1.0)
        self.log_metric("kl", k3_sum / max(tokens, 1.0))
        self.log_metric(f"kl/{self.args.kl_estimator}", mean_estimate)
        if self.mode == "train":
            self.log_metric("kl_coef", self.kl_controller.value)
            self.kl_controller.update(mean_estimate, n_steps=int(completions))

    def kl_stats(self, masked_kl: Tensor, masked_k3: Tensor, mask: Tensor) -> Tensor:
        """``[estimator's KL sum, k3 sum, valid tokens, completions]`` in float64 on this process, to be summed over
        micro-batches (the per-token KL terms come already masked)."""
        completions = torch.tensor(float(mask.size(0)), dtype=torch.float64, device=mask.device)
        return torch.stack([masked_kl.detach().sum().double(), masked_k3.detach().sum().double(),
                            mask.sum().double(), completions])

    def reward_kl(self, batch: dict, mask: Tensor) -> tuple[float, Tensor]:
        """KL in the reward: ``(coefficient, per-token KL (B, T))`` of the sampling policy to the reference.

        The coefficient returned is the one to apply to this batch; the controller adapts after it was read.
        """
        coef = self.kl_controller.value
        sampling_logps, reference_logps = self.sampling_logps(batch), self.reference_logps(batch)
        token_kl = kl_penalty(sampling_logps, reference_logps, self.args.kl_estimator) * mask
        token_k3 = kl_penalty(sampling_logps, reference_logps, "k3") * mask
        self.record_kl(self.accelerator.reduce(self.kl_stats(token_kl, token_k3, mask), reduction="sum").cpu())
        return coef, token_kl

    def checkpoint_state(self) -> dict[str, Any]:
        # A fixed coefficient comes back from the config; an adaptive one must be saved.
        return {"kl_coef": self.kl_controller.value} if self.args.kl_target is not None else {}

    def load_checkpoint_state(self, state: dict[str, Any], checkpoint: str) -> None:
        if "kl_coef" in state:
            self.kl_controller.value = state["kl_coef"]
