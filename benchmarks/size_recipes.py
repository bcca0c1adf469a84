"""Size every shipped recipe from the memory formula (`trl_r1.pipeline.memory`).

For each `recipes/<model>/{math,code}.yaml`: the header lists, per card (24/48/80 GB), the longest completion
and then the largest micro-batch whose projected GRPO peak fits, and the projected SFT peak of the cold-start
settings; the file itself is set to the 24 GB row (rl.max_completion_length, rl.per_device_train_batch_size and
gradient_accumulation_steps for 32 completions per step, rejection_sampling / evaluation max_new_tokens).
Only those lines change, so other keys (e.g. vLLM settings) are untouched.

    python benchmarks/size_recipes.py          # rewrite the recipes
    python benchmarks/size_recipes.py --check  # exit 1 if a recipe is out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from trl_r1.pipeline.memory import (
    CARDS_GB,
    MAX_CALIBRATION_ERROR,
    USABLE_FRACTION,
    GRPOSettings,
    estimate_sft_peak,
    fits,
    model_shapes,
)

ROOT = Path(__file__).resolve().parents[1]
HEADER_START, HEADER_END = "# Expected peak GPU memory", "# batch), then max_completion_length."


def header(model: str, cold_start: dict) -> tuple[list[str], GRPOSettings, int]:
    shape = model_shapes()[model]
    rows, chosen = [], None
    for card in CARDS_GB:
        fit = fits(shape, card, GRPOSettings())
        if fit is None:
            rows.append(f"#   {card} GB card: does not fit")
            continue
        settings, estimate = fit
        chosen = chosen or settings
        rows.append(f"#   {card} GB card: max_completion_length {settings.max_completion_length:>5}, "
                    f"per_device_train_batch_size {settings.per_device_train_batch_size:>2} -> "
                    f"~{estimate.peak / 1e9:.1f} GB")
    sft_batch, sft = sft_fit(shape, cold_start["max_length"])
    lines = [
        "# Expected peak GPU memory: projected by trl_r1/pipeline/memory.py (TRL 1.16's allocations, calibrated on CPU",
        f"# measurements of the 0.5B shape by benchmarks/memory.py, max error {MAX_CALIBRATION_ERROR:.0%} there), not "
        "measured on",
        "# a GPU. QLoRA GRPO step, prompt 512 tokens, 32 completions per step, transformers generation:",
        *rows,
        f"# SFT stages (max_length {cold_start['max_length']}, per_device_train_batch_size {sft_batch}, full "
        f"logits): ~{sft.peak / 1e9:.1f} GB.",
        "# This file uses the 24 GB setting; on a bigger card raise rl.max_completion_length (and",
        "# rejection_sampling.max_new_tokens / evaluation.max_new_tokens) to the value above. Out of memory? See",
        "# docs/troubleshooting.md: lower per_device_train_batch_size (raise gradient_accumulation_steps to keep the",
        HEADER_END,
    ]
    return lines, chosen, sft_batch


def sft_fit(shape, max_length: int, card_gb: int = CARDS_GB[0]):
    """The largest SFT micro-batch (2 or 1) whose projected peak fits in 90% of the smallest card."""
    for batch in (2, 1):
        estimate = estimate_sft_peak(shape, GRPOSettings(max_prompt_length=0, max_completion_length=max_length,
                                                         per_device_train_batch_size=batch))
        if estimate.peak <= USABLE_FRACTION * card_gb * 1e9 or batch == 1:
            return batch, estimate


def _set(lines: list[str], section: str, key: str, value: int) -> None:
    current = None
    for i, line in enumerate(lines):
        if re.match(r"^[a-z_]+:", line):
            current = line.split(":")[0]
        elif current == section and re.match(rf"^  {key}:", line):
            lines[i] = re.sub(rf"^(  {key}:\s*)\S+", rf"\g<1>{value}", line)
            return
    raise KeyError(f"{section}.{key}")


def size_recipe(path: Path) -> str:
    import yaml

    text = path.read_text()
    data = yaml.safe_load(text)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER_START))
    end = next(i for i, line in enumerate(lines) if line.startswith(HEADER_END))
    new_header, settings, sft_batch = header(data["model"]["model_name_or_path"], data["cold_start"])
    lines[start:end + 1] = new_header
    _set(lines, "rl", "max_completion_length", settings.max_completion_length)
    _set(lines, "rl", "per_device_train_batch_size", settings.per_device_train_batch_size)
    _set(lines, "rl", "gradient_accumulation_steps", settings.gradient_accumulation_steps)
    _set(lines, "rejection_sampling", "max_new_tokens", settings.max_completion_length)
    _set(lines, "evaluation", "max_new_tokens", settings.max_completion_length)
    for stage in ("cold_start", "final_sft"):  # 16 sequences per optimizer step, as the recipes had
        _set(lines, stage, "per_device_train_batch_size", sft_batch)
        _set(lines, stage, "gradient_accumulation_steps", 16 // sft_batch)
    return "\n".join(lines) + "\n"


def main() -> int:
    stale = []
    for path in sorted(ROOT.glob("recipes/*/*.yaml")):
        if path.parent.name in ("tiny", "accelerate_configs"):
            continue
        new = size_recipe(path)
        if new != path.read_text():
            stale.append(path)
            if "--check" not in sys.argv:
                path.write_text(new)
    if "--check" in sys.argv and stale:
        print("out of date:", *[str(p.relative_to(ROOT)) for p in stale], sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
