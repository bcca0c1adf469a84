"""The speed model: how fast a trainer's generation and training run on a card, for the plan's time estimates.

Rates are measured tokens per second (`rates.jsonl`, `RATES`: generation and training, by device, model size,
weights, adapter and batch, each with its source). `stage_rate` takes the closest measured row and scales what
differs; a rate measured on another card is scaled by the cards' datasheets (`CARDS`: decoding by memory
bandwidth, training by dense tensor compute; the vendors' datasheet figures: dense, no sparsity, bf16 tensor
TFLOPs, or fp16 where the card has no bf16; GeForce cards at their fp32-accumulate rate). It sits beside the memory model (`trainers.memory`): both model what
the trainers do on a card, and the pipeline's plan and preflight read them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

PROJECTION_SPREAD = 1.5  # a projected rate's range: the scaled measured range, widened by this factor each way
SAME_SIZE = 0.01  # models within 1% of each other's parameter count count as the same size
MAX_DECODE_BATCH = 64  # transformers decoding is host-bound (a step takes as long for 8 as for 32 sequences) up to here


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


@dataclass(frozen=True)
class Rate:
    """One measured speed: tokens per second (low, high) of generation (summed over the batch) or training."""

    work: str  # generation | training
    device: str  # a card's name, or CPU (one thread)
    model: str
    params: int  # `ModelShape.num_params`, how models are compared
    layers: int
    backend: str  # generation: transformers; training: sft | grpo
    weights: str  # bf16 | nf4 | float32
    adapter: bool  # a LoRA adapter on top
    batch: int  # sequences per generate call, or per training micro-batch
    tokens_per_s: tuple[float, float]
    source: str
    published: bool = False  # a figure published elsewhere, not measured by this project: always "projected"


def load_rates(path: Path = Path(__file__).with_name("rates.jsonl")) -> list[Rate]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Rate(**{**row, "tokens_per_s": tuple(row["tokens_per_s"])}) for row in rows]


RATES: list[Rate] = load_rates()


def size_exponent(rates: list[Rate]) -> float:
    """How training speed falls with model size on a GPU (rate ~ params^-b): fitted on two measured SFT rows of one
    card with different sizes, else 1 (compute-bound)."""
    rows = sorted((r for r in rates if r.work == "training" and r.device != "CPU"), key=lambda r: r.params)
    pairs = [(a, b) for a in rows for b in rows if a.device == b.device and a.params < b.params]
    if not pairs:
        return 1.0
    a, b = pairs[0]
    return math.log(sum(a.tokens_per_s) / sum(b.tokens_per_s)) / math.log(b.params / a.params)


@dataclass(frozen=True)
class StageRate:
    """A rate applied to a stage: tokens per second (low, high), and how it was obtained."""

    low: float
    high: float
    how: str
    measured: bool

    def seconds(self, tokens: float) -> tuple[float, float, float]:
        """(fastest, middle, slowest) seconds for `tokens`."""
        return tokens / self.high, tokens / math.sqrt(self.low * self.high), tokens / self.low


def stage_rate(work: str, device: str | None, params: int, layers: int, backend: str, weights: str, adapter: bool,
               batch: int, rates: list[Rate] | None = None) -> StageRate | None:
    """The rate of `work` on `device` (a card's name, "CPU", or None: a GPU not named) for a model of `params`
    parameters and `layers` layers, from the closest measured row: same device kind, then weights, size,
    adapter, card and batch. Scaled where they differ: on a GPU, transformers decoding is host-bound (rate ~ batch,
    up to `MAX_DECODE_BATCH`, and ~ 1 / layers) and training ~ params^-`size_exponent`; on a CPU both are
    compute-bound (~ 1 / params). "measured" only when nothing was scaled and the card is the one measured.

    >>> stage_rate("generation", "NVIDIA H200", 1543569408, 28, "transformers", "nf4", True, 32).how[:9]
    'measured:'
    """
    rates = RATES if rates is None else rates
    cpu = device == "CPU"
    rows = [r for r in rates if r.work == work and (r.device == "CPU") == cpu]
    same_backend = [r for r in rows if r.backend == backend]
    rows = same_backend or [r for r in rows if r.backend == ("transformers" if work == "generation" else "sft")]
    if not rows:
        return None
    row = min(rows, key=lambda r: (r.weights != weights, abs(math.log(r.params / params)) > SAME_SIZE,
                                   abs(math.log(r.params / params)), r.adapter != adapter, r.device != device,
                                   abs(math.log(r.batch / batch))))
    scale, scaled = 1.0, []
    if row.backend != backend:
        scaled.append(f"the {row.backend} rate for {backend}")
    if abs(math.log(row.params / params)) > SAME_SIZE:
        if cpu:
            scale *= row.params / params
            scaled.append(f"scaled from {count_text(row.params)} to {count_text(params)} parameters")
        elif work == "generation" and backend == "vllm":
            scale *= row.params / params
            scaled.append(f"scaled from {count_text(row.params)} to {count_text(params)} parameters: vLLM decoding reads the "
                          "weights each step")
        elif work == "generation":
            scale *= row.layers / layers
            scaled.append(f"a {count_text(params)}-parameter model of {layers} layers from one of {count_text(row.params)} and "
                          f"{row.layers}: host-bound decoding goes by layers")
        else:
            exponent = size_exponent(rates)
            scale *= (row.params / params) ** exponent
            scaled.append(f"scaled from {count_text(row.params)} to {count_text(params)} parameters as params^-{exponent:.2f}")
    if work == "generation" and not cpu and row.batch != batch:
        scale *= min(batch, row.batch if backend == "vllm" else MAX_DECODE_BATCH) / row.batch
        scaled.append(f"scaled from {row.batch} to {batch} sequences per call")
    if (row.weights, row.adapter) != (weights, adapter):
        scaled.append(f"measured {row.weights}{' + LoRA' if row.adapter else ''}, not {weights}"
                      f"{' + LoRA' if adapter else ''}")
    if row.device != device:
        ratio = speed_ratio(work, row.device, device) if device and not cpu else None
        if ratio is not None:
            scale *= ratio[0]
            scaled.append(f"to the {device} {ratio[1]}")
        else:
            scaled.append(f"not measured on {device}" if device else "no card named (--card)")
    low, high = row.tokens_per_s[0] * scale, row.tokens_per_s[1] * scale
    what = f"{row.device}, {row.model}: {row.source}"
    if not scaled and not row.published:
        return StageRate(low, high, f"measured: {what}", True)
    if not scaled:
        scaled.append("published, not measured here")
    return StageRate(low / PROJECTION_SPREAD, high * PROJECTION_SPREAD, f"projected ({'; '.join(scaled)}) from {what}",
                     False)


def count_text(value: float | None) -> str:
    """`1.5B`, `135.0M`, `12.3k`, or the number itself."""
    if value is None:
        return "unknown"
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= 10 * size if suffix == "k" else value >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{int(value):,}"


__all__ = ["CARDS", "KNOWN_CARDS", "MAX_DECODE_BATCH", "PROJECTION_SPREAD", "RATES", "Card", "Rate", "StageRate",
           "card_named", "card_text", "count_text", "parse_card", "size_exponent", "speed_ratio", "stage_rate"]
