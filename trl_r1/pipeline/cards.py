"""GPU cards the plan knows (`--card NAME`): memory, bf16/tf32 support, memory bandwidth and dense tensor compute.

The plan scales a rate measured on one card to another by these figures (decoding reads the weights each step:
bandwidth-bound; training multiplies matrices: compute-bound), and the dry run refuses settings a card cannot run
(`bf16` on a T4 or V100, `tf32` before Ampere). The figures are the vendors' datasheet numbers: dense (no
sparsity) bf16 tensor TFLOPs, or fp16 where the card has no bf16; GeForce cards at their fp32-accumulate rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Card:
    """One card's datasheet figures."""

    name: str
    memory_gb: float
    bf16: bool
    tf32: bool
    bandwidth_gb_s: float
    tflops: float  # dense bf16 (fp16 where there is no bf16) tensor TFLOPs
    source: str


CARDS: dict[str, Card] = {card_key: card for card_key, card in [
    ("t4", Card("NVIDIA T4", 16.0, False, False, 320, 65, "NVIDIA T4 datasheet (Turing, fp16 tensor)")),
    ("v100", Card("NVIDIA V100", 32.0, False, False, 900, 125, "NVIDIA V100 datasheet (SXM2, fp16 tensor)")),
    ("l4", Card("NVIDIA L4", 24.0, True, True, 300, 121, "NVIDIA L4 datasheet (242 with sparsity)")),
    ("a10g", Card("NVIDIA A10G", 24.0, True, True, 600, 70, "AWS EC2 G5 documentation")),
    ("3090", Card("NVIDIA GeForce RTX 3090", 24.0, True, True, 936, 71, "NVIDIA Ampere GA102 whitepaper")),
    ("4090", Card("NVIDIA GeForce RTX 4090", 24.0, True, True, 1008, 165, "NVIDIA Ada Lovelace whitepaper")),
    ("a6000", Card("NVIDIA RTX A6000", 48.0, True, True, 768, 155, "NVIDIA RTX A6000 datasheet (310 sparse)")),
    ("l40s", Card("NVIDIA L40S", 48.0, True, True, 864, 362, "NVIDIA L40S datasheet (733 with sparsity)")),
    ("a100-40", Card("NVIDIA A100 40GB", 40.0, True, True, 1555, 312, "NVIDIA A100 datasheet (SXM4 40GB)")),
    ("a100", Card("NVIDIA A100 80GB", 80.0, True, True, 2039, 312, "NVIDIA A100 datasheet (SXM4 80GB)")),
    ("h100", Card("NVIDIA H100", 80.0, True, True, 3350, 989, "NVIDIA H100 datasheet (SXM5)")),
    ("h200", Card("NVIDIA H200", 141.0, True, True, 4800, 989, "NVIDIA H200 datasheet (SXM)")),
]}
KNOWN_CARDS: dict[str, tuple[str, float]] = {key: (card.name, card.memory_gb) for key, card in CARDS.items()}
CARD_ALIASES = {"a100-80": "a100", "v100-32": "v100", "rtx4090": "4090", "rtx3090": "3090"}


def parse_card(text: str) -> tuple[str, float]:
    """`--card`'s value as (name, GB): a known name, or a size in GB.

    >>> parse_card("h100"), parse_card("24"), parse_card("24GB")
    (('NVIDIA H100', 80.0), ('24 GB card', 24.0), ('24 GB card', 24.0))
    """
    key = text.strip().lower()
    if key.startswith("nvidia"):
        key = key.removeprefix("nvidia").lstrip(" -")
    key = CARD_ALIASES.get(key, key)
    if key in KNOWN_CARDS:
        return KNOWN_CARDS[key]
    try:
        size = float(key.removesuffix("gb").removesuffix("gib").strip())
    except ValueError:
        raise ValueError(f"--card {text!r}: give a size in GB (e.g. 24) or one of {', '.join(KNOWN_CARDS)}") from None
    if size <= 0:
        raise ValueError(f"--card {text!r}: the size must be positive")
    return f"{size:g} GB card", size


def card_text(card: tuple[str, float]) -> str:
    """`NVIDIA H100 (80 GB)`, or `24 GB card` for one named by its size."""
    return card[0] if "GB" in card[0] else f"{card[0]} ({card[1]:.0f} GB)"


def card_named(name: str | None) -> Card | None:
    """The table's row for a card's shown name (`NVIDIA T4`), or None (a card named by its size, or unknown)."""
    return next((card for card in CARDS.values() if card.name == name), None)


def speed_ratio(work: str, measured_on: str, device: str) -> tuple[float, str] | None:
    """How much faster `device` runs `work` than the card a rate was measured on, by their datasheets: decoding
    (generation) by memory bandwidth, training by dense tensor compute; None where either card is not in the table.

    >>> round(speed_ratio("generation", "NVIDIA H100", "NVIDIA T4")[0], 3)
    0.096
    """
    source, target = card_named(measured_on), card_named(device)
    if source is None or target is None:
        return None
    if work == "generation":
        return target.bandwidth_gb_s / source.bandwidth_gb_s, (
            f"x{target.bandwidth_gb_s / source.bandwidth_gb_s:.2f} by memory bandwidth, {target.bandwidth_gb_s:g} "
            f"vs {source.bandwidth_gb_s:g} GB/s ({target.source}; {source.source})")
    return target.tflops / source.tflops, (
        f"x{target.tflops / source.tflops:.2f} by dense tensor compute, {target.tflops:g} vs {source.tflops:g} "
        f"TFLOPs ({target.source}; {source.source})")


def cpu_stage_notes(stages: list[Any], card: tuple[str, float]) -> list[str]:
    """A note for the trainer stages a recipe keeps on the CPU (`use_cpu: true`) while the plan is for a card: the
    estimates and the memory model then speak of a GPU that the run will not use."""
    on_cpu = [plan.name for plan in stages if plan.model_args is not None and plan.config is not None
              and getattr(plan.config, "use_cpu", False)]
    if not on_cpu:
        return []
    return [f"{', '.join(on_cpu)}: use_cpu: true trains on the CPU, not on the {card[0]} planned for; remove "
            "`use_cpu` (in `training:` for every stage) to use the card"]


def card_precision_problems(stages: list[Any], card: tuple[str, float]) -> list[str]:
    """Each trainer stage set to a precision the card lacks (`bf16` on a T4 or V100, `tf32` before Ampere), naming
    the key and the fix: transformers refuses them only when the run starts on that card."""
    row = card_named(card[0])
    if row is None:
        return []
    problems = []
    for plan in stages:
        config = plan.config
        if plan.model_args is None or config is None or getattr(config, "use_cpu", False):
            continue
        if getattr(config, "bf16", False) and not row.bf16:
            problems.append(f"{plan.name}: bf16: true, but the {row.name} has no bf16; set `bf16: false, fp16: true` "
                            "(in `training:` for every stage)")
        if getattr(config, "tf32", None) and not row.tf32:
            problems.append(f"{plan.name}: tf32: true, but the {row.name} has no tf32 (Ampere or newer); set "
                            "`tf32: false`")
    return problems


__all__ = ["CARDS", "Card", "KNOWN_CARDS", "card_named", "card_precision_problems", "card_text", "parse_card",
           "speed_ratio"]
