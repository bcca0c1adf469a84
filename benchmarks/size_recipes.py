"""Size every shipped recipe from the memory formula (`trl_r1.trainers.memory`), for what the recipe runs.

For each `recipes/<model>/{math,code}.yaml` the RL settings are read from the file (LoRA on a 4-bit or bf16
base, TRL's vLLM colocate mode with its `vllm_gpu_memory_utilization` and sleep mode, or transformers
generation; vLLM on a 4-bit base means vLLM serves it with the adapter unmerged, the only way TRL can generate
with vLLM for a 4-bit base). The header lists, per card (24/48/80 GB), the longest completion and then the
largest micro-batch whose projected GRPO peak fits (and, with vLLM, whose prompt + completion vLLM's KV cache
holds); the SFT stages' longest `max_length` and largest micro-batch (`sft_fits`: the fused log-prob head, no
full logits); and the rejection-sampling and evaluation passes: vLLM's budget when `auto` picks vLLM (and
whether vLLM can start there), and the transformers fallback's peak. Every figure is a projection of the
formula (calibrated on the GPU points of benchmarks/data/gpu_points.jsonl); docs/memory.md says how measured
figures from benchmarks/gpu.py replace them. The file itself is set to the 24 GB row (rl.max_completion_length,
rl.per_device_train_batch_size and gradient_accumulation_steps for 32 completions per step,
rl.vllm_max_model_length = prompt + completion, the SFT stages' max_length, per_device_train_batch_size and
gradient_accumulation_steps for 16 sequences per step, rejection_sampling / evaluation max_new_tokens, and their
vLLM budget: vllm_gpu_memory_utilization PASS_VLLM_UTILIZATION and vllm_max_model_length = prompt +
max_new_tokens) and to the largest rejection_sampling / evaluation batch_size whose transformers fallback fits
(in bf16, else rejection sampling loads the base in 4-bit). Only those lines change, so other keys are untouched.

    python benchmarks/size_recipes.py          # rewrite the recipes
    python benchmarks/size_recipes.py --check  # exit 1 if a recipe is out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from trl_r1.trainers.memory import (
    CARDS_GB,
    MAX_GPU_CALIBRATION_ERROR,
    USABLE_FRACTION,
    GenerationSettings,
    GRPOSettings,
    estimate_generation_peak,
    fits,
    model_shapes,
    sft_fits,
    vllm_kv_tokens,
    vllm_lora_bytes,
)

ROOT = Path(__file__).resolve().parents[1]
HEADER_START, HEADER_END = "# Expected peak GPU memory", "# gradient_accumulation_steps to keep the batch), then"
PROMPT = GRPOSettings().max_prompt_length  # prompt tokens assumed (TRL 1.16 does not truncate prompts)
RS_BATCHES, EVAL_BATCHES = (8, 4, 2, 1), (16, 8, 4, 2, 1)  # from the configs' defaults down
# vLLM's share of the card in the rejection-sampling and evaluation passes, which run alone on the GPU after training
# (the stage hands its cached memory back); below vLLM's default 0.9 to leave room for what the process still holds
PASS_VLLM_UTILIZATION = 0.8


def rl_settings(data: dict) -> GRPOSettings:
    """The GRPO settings that move the peak, as the recipe's `rl` section sets them."""
    rl, model = data["rl"], data["model"]
    vllm = bool(rl.get("use_vllm")) and rl.get("vllm_mode", "colocate") == "colocate"
    four_bit = rl.get("load_in_4bit", model.get("load_in_4bit", True))
    return GRPOSettings(lora_r=model.get("lora_r", 16), load_in_4bit=four_bit, use_vllm=vllm,
                        vllm_gpu_memory_utilization=rl.get("vllm_gpu_memory_utilization", 0.3),
                        vllm_enable_sleep_mode=bool(rl.get("vllm_enable_sleep_mode")),
                        vllm_lora_adapter=vllm and four_bit)


def generation_fit(shape, batches, **settings):
    """The largest batch_size whose transformers pass fits in 90% of the smallest card (the last one tried when
    none does), with its estimate and whether it fits."""
    for batch in batches:
        estimate = estimate_generation_peak(shape, GenerationSettings(batch_size=batch, **settings))
        if estimate.peak <= USABLE_FRACTION * CARDS_GB[0] * 1e9:
            return batch, estimate, True
    return batch, estimate, False


def vllm_lines(shape, num_samples: int, length: int, load_in_4bit: bool) -> list[str]:
    """What vLLM does with the pass's budget (`vllm_gpu_memory_utilization` PASS_VLLM_UTILIZATION,
    `vllm_max_model_length` = prompt + max_new_tokens) on the smallest card: whether it starts (its KV cache must
    hold one such sequence) and how many prompts' samples its KV cache holds at once."""
    card = CARDS_GB[0]
    tokens = vllm_kv_tokens(shape, card, PASS_VLLM_UTILIZATION, load_in_4bit)
    budget = f"#   vLLM: ~{PASS_VLLM_UTILIZATION * card:.1f} GB ({PASS_VLLM_UTILIZATION} of the card)"
    if tokens < length:
        return [f"{budget}, but its KV cache ({tokens} tokens) misses one {length}-token sequence: vLLM does not",
                "#     start and auto falls back to transformers;"]
    return [f"{budget}; its KV cache holds {tokens // (length * num_samples)} such prompts at once;"]


def sft_settings(data: dict) -> GRPOSettings:
    """The SFT stages' settings that move the peak: QLoRA unless the recipe's model (or cold_start) says otherwise."""
    model = data["model"]
    return GRPOSettings(lora_r=model.get("lora_r", 16),
                        load_in_4bit=data["cold_start"].get("load_in_4bit", model.get("load_in_4bit", True)))


def bigger_cards_hint(values: list[tuple[int, int]]) -> str:
    """What to raise on a bigger card, only where a bigger card's projected value differs from the 24 GB one."""
    return ", ".join(f"{value} on {card} GB" for card, value in values[1:] if value != values[0][1])


def header(data: dict) -> tuple[list[str], GRPOSettings, dict]:
    shape = model_shapes()[data["model"]["model_name_or_path"]]
    rl = rl_settings(data)
    rows, chosen, lengths = [], None, []
    for card in CARDS_GB:
        fit = fits(shape, card, rl)
        if fit is None:
            rows.append(f"#   {card} GB card: does not fit")
            continue
        settings, estimate = fit
        chosen = chosen or settings
        lengths.append((card, settings.max_completion_length))
        phases = (f" (generating {estimate.generation_peak / 1e9:.1f}, training {estimate.training_peak / 1e9:.1f})"
                  if rl.use_vllm else "")
        rows.append(f"#   {card} GB card: max_completion_length {settings.max_completion_length:>5}, "
                    f"per_device_train_batch_size {settings.per_device_train_batch_size:>2} -> "
                    f"~{estimate.peak / 1e9:.1f} GB{phases}")
    if chosen is None:
        raise ValueError(f"{shape.name}: the rl settings fit no card")
    length = chosen.max_completion_length
    sft_rows, sft_lengths, sft = [], [], None
    sft_base = sft_settings(data)
    for card in CARDS_GB:
        fit = sft_fits(shape, card, sft_base)
        if fit is None:
            sft_rows.append(f"#   {card} GB card: does not fit")
            continue
        sft = sft or fit
        sft_lengths.append((card, fit[0]))
        sft_rows.append(f"#   {card} GB card: max_length {fit[0]:>5}, per_device_train_batch_size {fit[1]} -> "
                        f"~{fit[2].peak / 1e9:.1f} GB")
    if sft is None:
        raise ValueError(f"{shape.name}: the SFT stages fit no card")
    rs, ev = data["rejection_sampling"], data["evaluation"]
    lora = data["model"].get("lora_r", 16)
    rs_4bit = False
    rs_batch, rs_est, ok = generation_fit(shape, RS_BATCHES, num_samples=rs["num_samples"], max_new_tokens=length,
                                          lora_r=lora)
    if not ok:  # not even one prompt in bf16: the fallback loads the base in 4-bit
        rs_4bit = True
        rs_batch, rs_est, ok = generation_fit(shape, RS_BATCHES, num_samples=rs["num_samples"],
                                              max_new_tokens=length, lora_r=lora, load_in_4bit=True)
    eval_4bit = "base" not in ev.get("stages", []) and data["model"].get("load_in_4bit", True)
    ev_batch, ev_est, ev_ok = generation_fit(shape, EVAL_BATCHES, num_samples=ev["num_samples"],
                                             max_new_tokens=length, lora_r=None, load_in_4bit=eval_4bit)
    if rl.use_vllm:
        base = "bf16" if not rl.load_in_4bit else "4-bit"
        served = ("vLLM serves the 4-bit base with the adapter unmerged"
                  f" ({vllm_lora_bytes(shape, rl) / 1e6:.0f} MB of LoRA slots), " if rl.vllm_lora_adapter else "")
        setup = (f"LoRA on the {base} base, TRL vLLM colocate with {rl.vllm_gpu_memory_utilization} of the card, "
                 f"{served}sleep mode {'on' if rl.vllm_enable_sleep_mode else 'off'}")
    else:
        setup = f"{'QLoRA' if rl.load_in_4bit else 'LoRA on the bf16 base'}, transformers generation"
    fallback = "" if ok and ev_ok else " (does not fit: lower max_new_tokens)"
    hints = [f"#   {what}: {bigger_cards_hint(values)}" for what, values in (
        ("rl.max_completion_length, rejection_sampling / evaluation max_new_tokens", lengths),
        ("the SFT stages' max_length", sft_lengths)) if bigger_cards_hint(values)]
    bigger = (["# This file uses the 24 GB setting. On a bigger card, raise (besides the micro-batches above):", *hints]
              if hints else ["# This file uses the 24 GB setting; a bigger card only raises the micro-batches above."])
    lines = [
        "# Expected peak GPU memory, all projected (not measured at these settings) by trl_r1/trainers/memory.py,",
        f"# whose terms are calibrated on one-step peaks measured on an NVIDIA H200 (Qwen2.5-1.5B shape; within "
        f"{MAX_GPU_CALIBRATION_ERROR:.0%},",
        "# docs/memory.md); vLLM's share is projected from its documented behaviour. Measure this recipe on your card:",
        "# python benchmarks/gpu.py <this file>. Prompts assumed <= 512 tokens, 32 completions per step.",
        f"# rl: GRPO, {setup}:",
        *rows,
        f"# SFT stages ({'QLoRA' if sft_base.load_in_4bit else 'LoRA on the bf16 base'}, fused log-prob head: no full "
        "logits; an example longer than max_length is dropped):",
        *sft_rows,
        f"# rejection_sampling, backend auto (batch_size {rs_batch} x num_samples {rs['num_samples']}, "
        f"{PROMPT + length} tokens each):",
        *vllm_lines(shape, rs["num_samples"], PROMPT + length, rs_4bit),
        f"#   transformers fallback ({'4-bit' if rs_4bit else 'bf16'} base + adapter): ~{rs_est.peak / 1e9:.1f} GB"
        f"{fallback if not ok else ''}; batch_size is sized for it.",
        f"# evaluation, backend auto (batch_size {ev_batch} x num_samples {ev['num_samples']}, "
        f"{PROMPT + length} tokens each):",
        *vllm_lines(shape, ev["num_samples"], PROMPT + length, eval_4bit),
        f"#   transformers fallback ({'4-bit' if eval_4bit else 'bf16'}: the base model's pass): "
        f"~{ev_est.peak / 1e9:.1f} GB{fallback if not ev_ok else ''}; batch_size is sized for it.",
        *bigger,
        "# Out of memory? See docs/troubleshooting.md: lower per_device_train_batch_size (raise",
        HEADER_END + " max_completion_length / max_length.",
    ]
    sizes = {"sft_length": sft[0], "sft_batch": sft[1], "rs_batch": rs_batch, "rs_4bit": rs_4bit,
             "ev_batch": ev_batch}
    return lines, chosen, sizes


def _set(lines: list[str], section: str, key: str, value, after: str | None = None, whole: bool = False) -> None:
    """Set `section.key` in place (`whole`: the rest of the line too, comment included); a missing key is
    inserted after `section.after` when given."""
    current, anchor = None, None
    for i, line in enumerate(lines):
        if re.match(r"^[a-z_]+:", line):
            current = line.split(":")[0]
        elif current == section and re.match(rf"^  {key}:", line):
            lines[i] = f"  {key}: {value}" if whole else re.sub(rf"^(  {key}:\s*)\S+", rf"\g<1>{value}", line)
            return
        elif current == section and after and re.match(rf"^  {after}:", line):
            anchor = i
    if anchor is None:
        raise KeyError(f"{section}.{key}")
    lines.insert(anchor + 1, f"  {key}: {value}")


def size_recipe(path: Path) -> str:
    import yaml

    text = path.read_text()
    data = yaml.safe_load(text)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER_START))
    end = next(i for i, line in enumerate(lines) if line.startswith(HEADER_END))
    new_header, settings, sizes = header(data)
    lines[start:end + 1] = new_header
    length = settings.max_completion_length
    _set(lines, "rl", "max_completion_length", length)
    _set(lines, "rl", "per_device_train_batch_size", settings.per_device_train_batch_size)
    _set(lines, "rl", "gradient_accumulation_steps", settings.gradient_accumulation_steps)
    if "vllm_max_model_length" in data["rl"]:
        _set(lines, "rl", "vllm_max_model_length", PROMPT + length)
    _set(lines, "rejection_sampling", "max_new_tokens", length)
    _set(lines, "rejection_sampling", "batch_size", sizes["rs_batch"])
    _set(lines, "rejection_sampling", "load_in_4bit", "true" + " " * 12 + "# the bf16 base + its KV cache miss the card"
         if sizes["rs_4bit"] else "false" + " " * 11 + "# vLLM loads the bf16 base (it can load 4-bit with bitsandbytes too)",
         whole=True)
    _set(lines, "evaluation", "max_new_tokens", length)
    _set(lines, "evaluation", "batch_size", sizes["ev_batch"], after="max_new_tokens")
    for section in ("rejection_sampling", "evaluation"):  # vLLM's budget for the pass, when auto picks vLLM
        _set(lines, section, "vllm_max_model_length", PROMPT + length, after="backend")
        _set(lines, section, "vllm_gpu_memory_utilization", PASS_VLLM_UTILIZATION, after="backend")
    for stage in ("cold_start", "final_sft"):  # 16 sequences per optimizer step, as the recipes had
        _set(lines, stage, "max_length", sizes["sft_length"])
        _set(lines, stage, "per_device_train_batch_size", sizes["sft_batch"])
        _set(lines, stage, "gradient_accumulation_steps", 16 // sizes["sft_batch"])
    return "\n".join(lines) + "\n"


def main() -> int:
    stale = []
    for path in sorted(ROOT.glob("recipes/*/*.yaml")):
        if path.stem not in ("math", "code"):  # the GPU recipes; tiny/ and smollm2-135m-instruct/ run on CPU
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
