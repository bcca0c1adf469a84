"""Keys a recipe sets that TRL accepts but that change nothing, or only half of what their name promises, in the
stage as planned: the dry run notes each one, naming the key and what would make it act.

>>> from types import SimpleNamespace
>>> config = SimpleNamespace(loss_type="dr_grpo", advantage_estimator="grpo", scale_rewards="group")
>>> plan = SimpleNamespace(name="rl", kind="grpo", config=config, section={"loss_type": "dr_grpo"},
...                        generation="transformers")
>>> print(ignored_key_notes([plan], {})[0][:74])
rl: key 'loss_type': 'dr_grpo' is Dr. GRPO's loss normalisation only; the
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .recipe import StagePlan

IS_WHY = (" (the importance-sampling correction reweights by vLLM's own sampling log-probs, which no other backend "
          "has)")
TRL_GRPO_ADVANTAGES = "grpo"  # the estimator that TRL's own advantage code computes (it reads `scale_rewards`)


def ignored_key_notes(stages: list[StagePlan], training: dict[str, Any]) -> list[str]:
    """One note per key of a GRPO/PPO stage (its own section, or the shared `training` one) that does not act as
    written: vLLM keys where the stage generates without vLLM, and the halves of Dr. GRPO set apart."""
    notes = []
    for plan in stages:
        if plan.kind not in ("grpo", "ppo"):
            continue
        keys = {**training, **plan.section}
        unread = sorted(key for key in keys if key.startswith("vllm_"))
        if unread and plan.generation not in (None, "vllm"):
            one = len(unread) == 1
            notes.append(f"{plan.name}: {_keys(unread)} {'acts' if one else 'act'} only where vLLM generates; this "
                         f"stage generates with {plan.generation}, so {'it changes' if one else 'they change'} "
                         f"nothing{IS_WHY if 'vllm_importance_sampling_correction' in unread else ''}")
        notes += _dr_grpo_notes(plan, keys)
    return notes


def _dr_grpo_notes(plan: StagePlan, keys: dict[str, Any]) -> list[str]:
    """Dr. GRPO (Liu et al. 2025) is two changes: advantages without the group std (`advantage_estimator:
    dr_grpo`, or TRL's `scale_rewards: none`) and a constant loss normaliser (`loss_type: dr_grpo`). A recipe
    that sets one half by name gets a note naming the other; `scale_rewards` set beside an estimator that
    computes its own advantages is not read."""
    c = plan.config
    estimator = getattr(c, "advantage_estimator", None)
    if estimator is None or plan.kind != "grpo":
        return []
    scaled = str(getattr(c, "scale_rewards", "group")).lower() not in ("none", "false")
    notes = []
    if c.loss_type == "dr_grpo" and estimator == TRL_GRPO_ADVANTAGES and scaled:
        notes.append(f"{plan.name}: key 'loss_type': 'dr_grpo' is Dr. GRPO's loss normalisation only; the advantages "
                     f"still divide by the group std (advantage_estimator 'grpo', scale_rewards "
                     f"'{c.scale_rewards}'). For Dr. GRPO as in Liu et al. 2025 also set advantage_estimator: "
                     "dr_grpo (or scale_rewards: none)")
    if estimator == "dr_grpo" and c.loss_type != "dr_grpo":
        notes.append(f"{plan.name}: key 'advantage_estimator': 'dr_grpo' is Dr. GRPO's advantages only; the loss is "
                     f"still normalised as loss_type '{c.loss_type}'"
                     f"{' (TRL default)' if 'loss_type' not in keys else ''}. For Dr. GRPO as in Liu et al. 2025 "
                     "also set loss_type: dr_grpo")
    if "scale_rewards" in keys and estimator != TRL_GRPO_ADVANTAGES:
        notes.append(f"{plan.name}: key 'scale_rewards' is read by TRL's own advantages only (advantage_estimator "
                     f"'grpo'); advantage_estimator {estimator!r} computes its own, so it changes nothing")
    return notes


def _keys(names: list[str]) -> str:
    return ("key " if len(names) == 1 else "keys ") + ", ".join(repr(n) for n in names)
