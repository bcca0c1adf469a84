"""Issue 33's acceptance run of the fast generation path on one GPU (`python benchmarks/gpu.py --acceptance`).

Qwen2.5-1.5B's shape, built with random weights on the card (no network, no Hub), bf16. For 8 and 64 sequences
(the rl stage's generation batch and a wide one) it runs, in one process:

* plain: transformers' ``generate`` on the model (dynamic cache, eager), one call;
* fast: `MergedPolicy` (the copy, one `StageDecoder` per stage: static cache, grouped attention, inductor under CUDA
  graphs), several calls with varied prompt lengths and two ``max_new_tokens``, a training-sized allocation freed
  between calls (the caching allocator's state changes, as between GRPO steps);

and prints, each beside its goal: the first call's seconds (compile and capture), graphs built, steady tokens/s,
tokens/s amortised over a 100-step run (compile counted once), peak memory; then one rl generation of 1024-token
completions at 64 sequences; then one GRPO step with 1024-token completions at the 1.5B recipe's batch
(`grpo_step`: trl-r1's own plan of `recipes/qwen2.5-1.5b-instruct/math.yaml`'s rl stage, QLoRA, 8 x 4 = 32
completions per optimizer step generated in one batch from the merged copy, `benchmarks/gpu.py`'s
`measure_training` in a child process: the second step timed, the first compiles) beside its goal of 15 s.

The GPU image has torch and transformers but not trl, peft, bitsandbytes or datasets: `bash
benchmarks/gpu_wheels.sh` builds them here as wheels under `.whl/` (git-ignored, carried to the card), and on
the card ``bash benchmarks/gpu_wheels.sh install`` installs them into ``/tmp/trl_r1_site``:

    bash benchmarks/gpu_wheels.sh install && PYTHONPATH=/tmp/trl_r1_site:$PWD python benchmarks/gpu.py --acceptance

``--dry-run``: the same code on CPU with a tiny model of the same family and dynamo's graph (no inductor), and the
GRPO step at the recipe model's ``ci`` size with tiny lengths: CI.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
QWEN25_1_5B = {"vocab_size": 151936, "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
               "num_attention_heads": 12, "num_key_value_heads": 2, "max_position_embeddings": 32768,
               "rope_theta": 1000000.0, "tie_word_embeddings": True, "rms_norm_eps": 1e-6}
TINY = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512}
GOALS = {8: 1000.0, 64: 5000.0}  # tokens/s, amortised over a 100-step run (issue 33)
STEPS_IN_A_RUN = 100


def _fast_generation_module():
    """`trl_r1/data/fast_generation.py` by its path: the package's `__init__` imports datasets, absent on the GPU
    image; the module itself needs only torch and transformers."""
    spec = importlib.util.spec_from_file_location("trl_r1_fast_generation", ROOT / "trl_r1/data/fast_generation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(shape: dict, device: str):
    from transformers import AutoModelForCausalLM, Qwen2Config

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    with torch.device(device):
        return AutoModelForCausalLM.from_config(Qwen2Config(**shape), dtype=dtype).eval()


def _prompts(rows: int, width: int, vocab: int, device: str, seed: int):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (rows, width), generator=generator)
    lengths = torch.randint(width // 4, width + 1, (rows,), generator=generator)
    mask = (torch.arange(width)[None] >= width - lengths[:, None]).long()
    return (ids * mask).to(device), mask.to(device)


def _config(new_tokens: int):
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=new_tokens, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                            eos_token_id=None, pad_token_id=0)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _peak_gib(device: str) -> float | None:
    return round(torch.cuda.max_memory_reserved() / 1024**3, 2) if device == "cuda" else None


def run(dry_run: bool = False) -> dict:
    device = "cpu" if dry_run else "cuda"
    if not dry_run and not torch.cuda.is_available():
        raise SystemExit("--acceptance needs a CUDA GPU (or --dry-run)")
    fast_generation = _fast_generation_module()
    shape = TINY if dry_run else QWEN25_1_5B
    budget, new_tokens, long_tokens = (24, 6, 12) if dry_run else (512, 256, 1024)
    widths = [24, 9, 17, 24] if dry_run else [512, 130, 377, 261, 498]
    began = time.time()
    model = _build(shape, device)
    result = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu (dry run)",
              "torch": torch.__version__, "transformers": __import__("transformers").__version__,
              "build_s": round(time.time() - began, 1), "passes": []}
    print(f"# {result['device']}, torch {result['torch']}, transformers {result['transformers']}", flush=True)
    fast = fast_generation.MergedPolicy(model, compile="eager" if dry_run else True, prompt_budget=budget)
    for sequences in (8, 64):
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        ids, mask = _prompts(sequences, widths[0], shape["vocab_size"], device, seed=sequences)
        plain_tokens = 4 if dry_run else 64
        _sync(device)
        start = time.time()
        with torch.inference_mode():
            model.generate(input_ids=ids, attention_mask=mask, generation_config=_config(plain_tokens))
        _sync(device)
        plain = sequences * plain_tokens / (time.time() - start)
        plain_peak = _peak_gib(device)
        fast.start_stage(batch_size=sequences, max_new_tokens=new_tokens)
        calls = []
        for call, width in enumerate(widths):
            tokens = new_tokens if call % 2 == 0 else new_tokens // 2
            ids, mask = _prompts(sequences - (call == len(widths) - 1), width, shape["vocab_size"], device, call)
            _sync(device)
            start = time.time()
            fast.generate(ids, mask, _config(tokens))
            _sync(device)
            calls.append({"prompt_width": width, "rows": ids.size(0), "new_tokens": tokens,
                          "seconds": round(time.time() - start, 3)})
            if device == "cuda":  # a training-sized allocation between calls, freed again
                block = torch.empty(int(8 * 1024**3), dtype=torch.uint8, device=device)
                del block
        steady = calls[1:]
        steady_rate = sum(c["rows"] * c["new_tokens"] for c in steady) / sum(c["seconds"] for c in steady)
        first_extra = calls[0]["seconds"] - calls[0]["new_tokens"] * sequences / steady_rate
        step_seconds = sequences * new_tokens / steady_rate
        amortised = STEPS_IN_A_RUN * sequences * new_tokens / (STEPS_IN_A_RUN * step_seconds + first_extra)
        row = {"sequences": sequences, "plain_tokens_per_s": round(plain, 1), "plain_peak_gib": plain_peak,
               "fast_compile_and_capture_s": round(first_extra, 1), "graphs_built": fast.graphs_built,
               "fast_steady_tokens_per_s": round(steady_rate, 1), "fast_amortised_tokens_per_s": round(amortised, 1),
               "fast_peak_gib": _peak_gib(device), "calls": calls, "goal_tokens_per_s": GOALS[sequences]}
        result["passes"].append(row)
        print(f"{sequences:>3} sequences: plain {plain:,.0f} tok/s | fast {steady_rate:,.0f} tok/s steady, "
              f"{amortised:,.0f} amortised over {STEPS_IN_A_RUN} steps (goal >= {GOALS[sequences]:,.0f}) | "
              f"compile+capture {first_extra:.1f} s | graphs {fast.graphs_built} (goal 1) | peak "
              f"{row['fast_peak_gib']} GiB", flush=True)
    fast.start_stage(batch_size=64, max_new_tokens=long_tokens)
    ids, mask = _prompts(64, budget, shape["vocab_size"], device, seed=99)
    timings = []
    for _ in range(2):  # the first compiles (a new stage), the second is the step's generation
        _sync(device)
        start = time.time()
        fast.generate(ids, mask, _config(long_tokens))
        _sync(device)
        timings.append(round(time.time() - start, 2))
    result["rl_generation_1024"] = {"sequences": 64, "new_tokens": long_tokens, "first_s": timings[0],
                                    "steady_s": timings[1], "graphs_built": fast.graphs_built,
                                    "goal_whole_grpo_step_s": 15.0}
    print(f"rl generation, 64 x {long_tokens} new tokens: {timings[1]} s (first call {timings[0]} s; the whole "
          f"GRPO step's goal <= 15 s) | graphs {fast.graphs_built}", flush=True)
    del fast, model
    if device == "cuda":
        torch.cuda.empty_cache()
    try:
        result["grpo_step"] = grpo_step(dry_run)
    except ImportError as error:  # trl-r1's dependencies are not installed: the generation figures still count
        result["grpo_step"] = {"error": f"{error}; on the GPU image: bash benchmarks/gpu_wheels.sh install, then "
                                        "PYTHONPATH=/tmp/trl_r1_site:$PWD"}
        print(f"GRPO step: not run ({result['grpo_step']['error']})", flush=True)
    result["total_s"] = round(time.time() - began, 1)
    print(f"# total {result['total_s']} s (goal < 480 s)")
    return result


GRPO_RECIPE = ROOT / "recipes" / "qwen2.5-1.5b-instruct" / "math.yaml"
GRPO_STEP_GOAL_S = 15.0


def grpo_step(dry_run: bool, timeout: int = 360) -> dict:
    """One GRPO step with 1024-token completions at the 1.5B recipe's batch (its `per_device_train_batch_size` x
    `gradient_accumulation_steps` completions, one generation batch), generation from the merged copy
    (`fast_generation: on`), in a child process (`benchmarks/gpu.py`'s `measure_training`: the recipe's own plan,
    QLoRA, a constant reward, synthetic ~512-token prompts; two steps, the second timed). The model's shape is
    built with random weights on the card. A failure is recorded and printed, not raised."""
    import argparse
    import tempfile

    import yaml

    sys.path.insert(0, str(Path(__file__).parent))
    import gpu  # benchmarks/gpu.py

    from trl_r1.rehearsal.models import build_model

    data = yaml.safe_load(GRPO_RECIPE.read_text())
    name, size = data["model"]["model_name_or_path"], "ci" if dry_run else "full"
    args = argparse.Namespace(steps=gpu.STEPS, dry_run=dry_run,
                              transformers_completion=gpu.DRY_RUN["completion"] if dry_run else 1024)
    section, changed = gpu.stage_section(data, "rl", args, vllm=False)
    if not dry_run:  # the recipe's generation batch (8 x 4 = 32 completions), not one group per step
        section["gradient_accumulation_steps"] = data["rl"].get("gradient_accumulation_steps", 1)
    model_dir = Path(tempfile.gettempdir()) / "trl_r1_gpu" / f"{name.replace('/', '--')}-{size}"
    began = time.time()
    with torch.device("cpu" if dry_run else "cuda"):  # random weights built on the card: seconds, not minutes
        build_model(name, model_dir, size=size)
    prompt_tokens = gpu.DRY_RUN["prompt_tokens"] if dry_run else 512
    point = {"stage": "rl", "data": data, "section": section, "model_dir": str(model_dir),
             "run_dir": tempfile.mkdtemp(prefix="trl_r1_grpo_step_"), "dry_run": dry_run,
             "prompt_words": max(1, prompt_tokens - 20)}
    measured = {"recipe": str(GRPO_RECIPE.relative_to(ROOT)), "changed": changed,
                "build_s": round(time.time() - began, 1), **gpu.run_child(point, timeout),
                "goal_step_s": GRPO_STEP_GOAL_S}
    if "error" in measured:
        print(f"GRPO step: failed ({measured['error'][-600:]})", flush=True)
        return measured
    completions = measured["per_device_train_batch_size"] * measured["steps_per_generation"]
    print(f"GRPO step, {completions} completions x {measured['max_completion_length']} tokens (prompts "
          f"{measured['prompt_tokens']} tokens), generation from the merged copy: {measured['fast_generation']} | "
          f"{measured['step_seconds']:.1f} s (goal <= {GRPO_STEP_GOAL_S:.0f} s) | peak "
          f"{measured.get('peak_reserved_gib', 0):.2f} GiB", flush=True)
    return measured


def main(argv: list[str]) -> dict:
    dry_run = "--dry-run" in argv
    result = run(dry_run)
    if "--out" in argv:
        Path(argv[argv.index("--out") + 1]).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
