"""The fast path's `refresh()` (`trl_r1.data.fast_generation.MergedPolicy`): the full rewrite (dequantize every
adapted layer's 4-bit base, add the LoRA delta) vs ours (the dequantized base kept, ``base + delta`` written in one
pass, only layers whose adapter changed), both after an optimizer step has changed every adapter, beside one GRPO
step's time on the same machine, in one run.

    python benchmarks/refresh.py [--repeats 5] [--no-grpo-step]

The policy: SmolLM2-135M-Instruct's real weights (resolved offline as `trl-r1 model smollm2-135m-instruct` does;
the tiny model's shape scaled to SmolLM2's when they are absent) in NF4 with a LoRA adapter of rank 16 on every
linear layer, the copy in float32 on CPU (bf16 on a GPU). The GRPO step: `R1GRPOTrainer` on that QLoRA, 8
completions of 64 tokens per step, generation from the copy (`fast_generation: on`), the second step timed (the
first builds the copy). Prints the median of `--repeats` refreshes for each, their ratio, and each as a share
of the step.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch


def smollm2_path() -> str:
    from trl_r1.rehearsal.pretrained import pretrained_model_path
    from trl_r1.toy import build_tiny_model

    try:
        return str(pretrained_model_path("smollm2-135m-instruct"))
    except Exception as exc:  # offline without the cached weights: the same shape, random weights
        print(f"SmolLM2-135M's weights are not here ({type(exc).__name__}); its shape with random weights")
        return str(build_tiny_model(tempfile.mkdtemp(), hidden_size=576, num_layers=30, intermediate_size=1536,
                                    num_attention_heads=9, num_key_value_heads=3))


def qlora(path: str):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    base = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, device_map={"": "cuda"} if torch.cuda.is_available()
                                                else None, quantization_config=BitsAndBytesConfig(
                                                    load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                    bnb_4bit_compute_dtype=dtype))
    return get_peft_model(base, LoraConfig(r=16, target_modules="all-linear", init_lora_weights=False))


def optimizer_step(policy, generator: torch.Generator) -> None:
    """What an optimizer step does to the adapter: every LoRA tensor written in place."""
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if "lora_" in name:
                param.add_(torch.randn(param.shape, generator=generator).to(param) * 1e-3)


def timed_refreshes(fast, policy, repeats: int) -> list[float]:
    generator, seconds = torch.Generator().manual_seed(0), []
    for _ in range(repeats):
        optimizer_step(policy, generator)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        began = time.perf_counter()
        fast.refresh()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - began)
    return seconds


def grpo_step_seconds(path: str) -> float:
    """The second step of a real GRPO run on the QLoRA (8 completions x 64 tokens, generation from the copy)."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import BitsAndBytesConfig, TrainerCallback

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    class StepClock(TrainerCallback):
        def __init__(self):
            self.began, self.seconds = 0.0, []

        def on_step_begin(self, args, state, control, **kwargs):
            self.began = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self.began)

    clock = StepClock()
    cuda = torch.cuda.is_available()
    prompts = Dataset.from_list([{"prompt": [{"role": "user", "content": f"What is {a} + {2 * a + 1}?"}]}
                                 for a in range(16)])
    args = R1GRPOConfig(output_dir=tempfile.mkdtemp(), use_cpu=not cuda, bf16=cuda, report_to="none",
                        save_strategy="no", per_device_train_batch_size=8, num_generations=8,
                        max_completion_length=64, max_steps=2, logging_steps=1, disable_tqdm=True, seed=0,
                        fast_generation="on")
    dtype = torch.bfloat16 if cuda else torch.float32
    trainer = R1GRPOTrainer(model=path, args=args, train_dataset=prompts, callbacks=[clock],
                            reward_funcs=lambda completions, **kw: [float(len(str(c))) for c in completions],
                            peft_config=LoraConfig(r=16, target_modules="all-linear"),
                            quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                                   bnb_4bit_compute_dtype=dtype))
    trainer.train()
    return clock.seconds[-1]


def main() -> None:
    from trl_r1.data.fast_generation import MergedPolicy

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-grpo-step", action="store_true", help="skip the GRPO step (refresh times only)")
    args = parser.parse_args()
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({torch.get_num_threads()} threads)"
    path = smollm2_path()
    policy = qlora(path)
    full = MergedPolicy(policy, keep_base=False)
    full_seconds = timed_refreshes(full, policy, args.repeats)
    del full
    ours = MergedPolicy(policy, keep_base=True)
    ours_seconds = timed_refreshes(ours, policy, args.repeats)
    unchanged = time.perf_counter()
    ours.refresh()  # no optimizer step since: nothing to rewrite
    unchanged = time.perf_counter() - unchanged
    full_median, ours_median = statistics.median(full_seconds), statistics.median(ours_seconds)
    print(f"refresh of a SmolLM2-135M QLoRA (r=16, all linear layers, {len(ours._adapted)} adapted layers) on "
          f"{device}, median of {args.repeats}")
    print(f"  full (dequantize + delta)      {full_median * 1000:8.1f} ms  (range {min(full_seconds) * 1000:.1f}-"
          f"{max(full_seconds) * 1000:.1f})")
    print(f"  ours (kept base + delta)       {ours_median * 1000:8.1f} ms  (range {min(ours_seconds) * 1000:.1f}-"
          f"{max(ours_seconds) * 1000:.1f})   full/ours = {full_median / ours_median:.2f}x")
    print(f"  ours, adapter unchanged        {unchanged * 1000:8.1f} ms  ({ours.layers_rewritten} layers rewritten)")
    if not args.no_grpo_step:
        del ours, policy
        step = grpo_step_seconds(path)
        print(f"one GRPO step (8 completions x 64 tokens, generation from the copy): {step:.2f} s; refresh share "
              f"of the step: full {full_median / step:.1%}, ours {ours_median / step:.1%}")


if __name__ == "__main__":
    main()
