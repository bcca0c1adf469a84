"""How much of each GRPO batch TRL's vLLM importance-sampling correction drops or clips, per mode, measured on a
real vLLM engine (CPU build, `bash scripts/test_vllm.sh` makes the environment).

    python benchmarks/vllm_is_mask.py                                   # SmolLM2-135M-Instruct, 512 tokens
    python benchmarks/vllm_is_mask.py --completion 256 --steps 2

GRPO with trl-r1's adapter path (LoRA r=16 pushed unmerged to a colocated vLLM engine) samples every completion
to its full length (EOS is never reached, the worst case for a sequence-level ratio). vLLM computes in the
model's bfloat16, the trainer in float32: the same kind of mismatch as a bf16 vLLM against PEFT's fp32 QLoRA
adapter on a GPU, though CPU kernels are not GPU kernels. For every rollout, the share each mode of
`vllm_importance_sampling_mode` (TRL 1.16; clip_max 3.0, its default) drops (``*_mask``) or clips
(``*_truncate``) is computed from the same log-probs (`trainers.trl_compat.importance_sampling_masked_share`,
TRL's rule): sequences for ``sequence_*``, tokens for ``token_*``. Printed per mode, with the per-token gap.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")

MODES = ("sequence_mask", "sequence_truncate", "token_mask", "token_truncate")


class LongCompletionReward:
    """A reward that differs within a group (so the adapter moves): the share of token ids below 1000."""

    __name__ = "low_token_share"

    def __call__(self, completion_ids, **kwargs):
        return [sum(t < 1000 for t in ids) / max(len(ids), 1) for ids in completion_ids]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="a checkpoint folder (default: trl-r1's SmolLM2-135M-Instruct)")
    parser.add_argument("--completion", type=int, default=512, help="completion tokens (all sampled to this length)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=2, help="prompts per step (x --generations completions)")
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--clip-max", type=float, default=3.0)
    args = parser.parse_args(argv)

    import torch
    import trl.generation.vllm_generation as vllm_generation
    from datasets import Dataset
    from peft import LoraConfig
    from vllm import LLM

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer
    from trl_r1.trainers.trl_compat import completion_mask, importance_sampling_masked_share

    if args.model is None:
        from trl_r1.rehearsal.pretrained import pretrained_model_path

        args.model = str(pretrained_model_path("smollm2-135m-instruct"))
    vllm_generation.LLM = functools.partial(LLM, enforce_eager=True)  # graph compilation: minutes on CPU
    torch.set_num_threads(max(1, (os.cpu_count() or 1)))
    shares: dict[str, list[float]] = {mode: [] for mode in MODES}
    gaps: list[float] = []

    class Measured(R1GRPOTrainer):
        def on_rollout(self, batch, rewards_per_func):
            mask = completion_mask(batch)
            old, sampled = batch["old_per_token_logps"], batch["sampling_per_token_logps"]
            for mode in MODES:
                shares[mode].append(importance_sampling_masked_share(old, sampled, mask, mode, None,
                                                                     args.clip_max).item())
            gaps.append(((old - sampled).abs() * mask).sum().item() / mask.sum().item())
            print(f"rollout {len(gaps)}: gap {gaps[-1]:.4f}, "
                  + ", ".join(f"{mode} {shares[mode][-1]:.3f}" for mode in MODES), flush=True)
            return super().on_rollout(batch, rewards_per_func)

    prompts = [[{"role": "user", "content": f"Write a long story about the number {i}."}]
               for i in range(args.prompts * args.steps)]
    config = R1GRPOConfig(
        output_dir=tempfile.mkdtemp(), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
        disable_tqdm=True, per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations, max_completion_length=args.completion, max_steps=args.steps,
        logging_steps=1, learning_rate=1e-4, seed=0, use_vllm=True, vllm_mode="colocate",
        vllm_max_model_length=args.completion + 128, generation_kwargs={"ignore_eos": True},
        vllm_importance_sampling_clip_max=args.clip_max)
    trainer = Measured(model=args.model, reward_funcs=LongCompletionReward(), args=config,
                       peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"),
                       train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]))
    assert trainer.generation_backend == "adapter", trainer.generation_fallback_reason
    trainer.train()
    sequences = len(shares[MODES[0]]) * args.prompts * args.generations
    print(f"{args.model}: {sequences} completions of {args.completion} tokens, {len(gaps)} rollouts, "
          f"vLLM {trainer.vllm_generation.adapter_slot.dtype} vs trainer float32, clip_max {args.clip_max}")
    print(f"mean |log p_trainer - log p_vLLM| per token: {statistics.mean(gaps):.4f}")
    print(f"{'mode':<20}{'share dropped/clipped':>24}  (per rollout)")
    for mode in MODES:
        unit = "sequences" if mode.startswith("sequence") else "tokens"
        print(f"{mode:<20}{statistics.mean(shares[mode]):>16.3f} of {unit:<9}  {[round(s, 3) for s in shares[mode]]}")
    return {"gap": statistics.mean(gaps), "shares": {m: statistics.mean(v) for m, v in shares.items()}}


if __name__ == "__main__":
    main()
