"""Measure a recipe on a CUDA GPU, per stage, beside the memory formula (`trl_r1.trainers.memory`).

    python benchmarks/gpu.py recipes/qwen2.5-1.5b-instruct/math.yaml --out gpu.json
    python benchmarks/gpu.py RECIPE --stages cold_start rl --points benchmarks/data/gpu_points.jsonl
    python benchmarks/gpu.py RECIPE --dry-run      # CPU, the model's `ci` size, tiny lengths: what CI runs
    python benchmarks/gpu.py --remeasure benchmarks/data/gpu_points.jsonl   # the calibration points, again
    python benchmarks/gpu.py --acceptance [--dry-run] [--out F]   # issue 33: fast generation (fast_generation_acceptance.py)

It builds the recipe's model shape with random weights (`trl_r1.rehearsal.models`, size `full`; no Hub), then
runs each stage in its own process (a fresh peak) at the recipe's settings, as trl-r1 plans them (the stage's
TRL config from the recipe, QLoRA / LoRA, gradient checkpointing, 8-bit AdamW, assistant-only loss):

* SFT stages (`cold_start`, `final_sft`): `--steps` optimizer steps of one micro-batch of
  `per_device_train_batch_size` synthetic conversations cut to exactly `max_length` tokens (the worst case):
  peak memory (`torch.cuda.max_memory_reserved`) and training tokens/s (steps after the first).
* `rl` (GRPO): the same with `--prompt-tokens` prompts and one generation batch per step (`steps_per_generation`
  = num_generations / per_device_train_batch_size, at least 1): random weights never stop early, so every
  completion is `max_completion_length` long. vLLM colocate when the recipe asks for it and vLLM imports; else
  transformers, with the completion shortened to `--transformers-completion` tokens (the JSON says so).
  The rl step generates from the merged copy (`fast_generation: on`, `trl_r1.data.fast_generation`); the JSON
  records it.
* generation passes (`rl`'s rollouts, `rejection_sampling`, `evaluation`): generated tokens/s and ms per decoding
  step of `batch_size x num_samples` sequences (for rl: the recipe's generation batch, and `--wide` sequences) for
  `--gen-tokens` new tokens, per generation mode: `transformers` (plain `generate` on the policy, 4-bit + LoRA
  where the stage has them), `fast` (the merged copy, static KV cache under CUDA graphs), `vllm` when it imports;
  the peak memory of the transformers modes and the vLLM pass's device memory in use (a vLLM without
  bitsandbytes, for a stage on the 4-bit base, is recorded as an error rather than measured on another base).
  With vLLM the rl step also reports the share of sequences TRL's importance-sampling correction masked
  (`masked_share`, its `vllm_importance_sampling_mode`), the vLLM-vs-trainer log-prob gap and the device memory
  in use (`device_used_gib`: torch's peak leaves out the engine's budget).

Each measured figure is printed beside the formula's at the very settings that ran (its `reserved` figure: the
peak without the CUDA context) and written to `--out` JSON, with the card and the versions. `--points FILE`
appends the training points in the format of `benchmarks/data/gpu_points.jsonl`, which the formula is
calibrated and tested against (docs/memory.md: how the figures get into docs/recipes.md); `--remeasure` runs
each point of such a file again at its own settings, beside its recorded peak. Steps are shortened
(memory and speed are per step): a model up to 3B takes about 10 minutes on one GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

GIB = 1024**3
SFT_STAGES = ("cold_start", "final_sft")
GENERATION_DEFAULTS = {  # RejectionSamplingConfig's / EvaluationConfig's defaults
    "rejection_sampling": {"batch_size": 8, "num_samples": 8, "load_in_4bit": False},
    "evaluation": {"batch_size": 16, "num_samples": 4, "load_in_4bit": False},
}
STEPS = 2  # the first step warms up (kernels, allocator), the second is timed
DRY_RUN = {"prompt_tokens": 16, "max_length": 48, "completion": 8, "gen_tokens": 4, "batch": 2}


class ConstantReward:
    """A reward that scores every completion 0: the benchmark measures the step, not the task."""

    __name__ = "constant_reward"

    def __call__(self, completions, **kwargs):
        return [0.0] * len(completions)


def words(n: int) -> str:
    return " ".join(["seven"] * n)


def stage_section(data: dict, stage: str, args: argparse.Namespace, vllm: bool) -> tuple[dict, dict]:
    """The stage's recipe section as the benchmark runs it (shortened, synthetic data), and what was changed."""
    # the data is synthetic (dataset_name stays: the plan checks it, nothing loads it), the stage stands alone
    section = {k: v for k, v in data[stage].items()
               if k not in ("max_samples", "num_train_epochs", "mix_datasets", "init_from")}
    section.setdefault("dataset_name", "synthetic")
    if stage == "final_sft":
        section["init_from"] = "base"  # measured alone: the random-weight base stands in for the RL model
    section.update(max_steps=args.steps, gradient_accumulation_steps=1, logging_steps=1, save_strategy="no",
                   warmup_steps=0)
    changed = {"steps": args.steps}
    if stage in SFT_STAGES:
        section["long_examples"] = "truncate"  # every example cut to exactly max_length: the worst case
        if args.dry_run:
            section.update(max_length=DRY_RUN["max_length"], per_device_train_batch_size=DRY_RUN["batch"])
    else:
        if args.dry_run:
            section.update(max_completion_length=DRY_RUN["completion"], per_device_train_batch_size=DRY_RUN["batch"],
                           num_generations=DRY_RUN["batch"])
        # one optimizer step = one generation batch of at least one group (TRL: steps_per_generation = this)
        batch, generations = section.get("per_device_train_batch_size", 8), section.get("num_generations", 8)
        section["gradient_accumulation_steps"] = max(1, generations // batch)
        section["mask_truncated_completions"] = False  # random weights truncate every completion: keep the loss
        section["fast_generation"] = "on"  # without vLLM: generation from the merged copy
        if section.get("use_vllm") and not vllm:
            section = {k: v for k, v in section.items() if k != "use_vllm" and not k.startswith("vllm_")}
            changed["generation"] = "transformers (vLLM does not import here)"
        if not section.get("use_vllm"):
            length = min(section.get("max_completion_length", 256), args.transformers_completion)
            if length != section.get("max_completion_length"):
                changed["max_completion_length"] = f"{section.get('max_completion_length')} -> {length}"
            section["max_completion_length"] = length
    return section, changed


def plan_stage(data: dict, stage: str, section: dict, model_dir: str, run_dir: str, dry_run: bool):
    """trl-r1's own plan of the stage (its TRL config, model arguments) for the random-weight model."""
    from trl_r1.pipeline.recipe import load_recipe

    training = {**data.get("training", {}), "report_to": "none", "disable_tqdm": True, "save_strategy": "no"}
    if dry_run:
        training.update(use_cpu=True, bf16=False)
    model = {**data["model"], "model_name_or_path": model_dir}
    if dry_run:
        model["dtype"] = "float32"
    recipe = load_recipe({"run_dir": run_dir, "model": model, "training": training, stage: section},
                         check_hardware=not dry_run)
    return recipe.stage(stage)


class StepTimer:
    """Wall time of each optimizer step (synchronised on CUDA), as a transformers TrainerCallback."""

    def __init__(self):
        from transformers import TrainerCallback

        timer = self

        class Callback(TrainerCallback):
            def on_step_begin(self, *_, **__):
                timer.sync()
                timer.began = time.perf_counter()

            def on_step_end(self, *_, **__):
                timer.sync()
                timer.seconds.append(time.perf_counter() - timer.began)

        self.callback, self.seconds, self.began = Callback(), [], 0.0

    @staticmethod
    def sync():
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()


def measure_training(point: dict) -> dict:
    """Child process: one stage's shortened training at the recipe's settings."""
    import torch
    from datasets import Dataset

    from trl_r1.pipeline.recipe import TRAINER_KINDS
    from trl_r1.pipeline.stages import ModelHandle, _model_for_trainer
    from trl_r1.trainers.chat_templates import prepare_assistant_only_loss

    plan = plan_stage(point["data"], point["stage"], point["section"], point["model_dir"], point["run_dir"],
                      point["dry_run"])
    config, steps = plan.config, point["section"]["max_steps"]
    if plan.kind == "sft":
        prepare_assistant_only_loss(config, point["model_dir"], plan.output_dir)
        rows = config.per_device_train_batch_size * steps
        data = Dataset.from_list([{"messages": [{"role": "user", "content": "Solve it."}, {
            "role": "assistant", "content": words(config.max_length + 64)}]}] * rows)
        extra = {}
    else:
        config.reward_weights = None  # one constant reward stands in for the recipe's
        rows = config.per_device_train_batch_size * config.steps_per_generation * steps // config.num_generations
        data = Dataset.from_list([{"prompt": [{"role": "user", "content": f"{words(point['prompt_words'])} {i}"}]}
                                  for i in range(max(1, rows))])
        extra = {"reward_funcs": [ConstantReward()]}
    model, peft_config, quantization = _model_for_trainer(plan.model_args, ModelHandle(point["model_dir"]), config)
    trainer = TRAINER_KINDS[plan.kind].trainer(model=model, args=config, train_dataset=data, peft_config=peft_config,
                                               quantization_config=quantization, **extra)
    timer = StepTimer()
    trainer.add_callback(timer.callback)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    history = trainer.state.log_history
    tokens = [h["num_tokens"] for h in history if "num_tokens" in h]
    per_step = tokens[0] if len(tokens) == 1 else (tokens[-1] - tokens[0]) / max(1, len(tokens) - 1)
    timed = timer.seconds[1:] or timer.seconds
    result = {"kind": plan.kind, "steps": len(timer.seconds), "step_seconds": statistics.median(timed),
              "tokens_per_step": per_step, "train_tokens_per_s": per_step / statistics.median(timed),
              "load_in_4bit": bool(plan.model_args.load_in_4bit), "lora_r": plan.model_args.lora_r,
              "per_device_train_batch_size": config.per_device_train_batch_size}
    if plan.kind == "sft":
        result.update(max_length=config.max_length)
    else:
        tokenizer = trainer.processing_class
        text = tokenizer.apply_chat_template(data[0]["prompt"], tokenize=False, add_generation_prompt=True)
        result.update(prompt_tokens=len(tokenizer(text)["input_ids"]))
        result.update(max_completion_length=config.max_completion_length, num_generations=config.num_generations,
                      steps_per_generation=config.steps_per_generation, use_vllm=bool(config.use_vllm),
                      vllm_gpu_memory_utilization=config.vllm_gpu_memory_utilization,
                      vllm_enable_sleep_mode=bool(config.vllm_enable_sleep_mode),
                      generation_backend=getattr(trainer, "generation_backend", None),
                      fast_generation=bool(getattr(trainer, "fast_generation", False)))
        # what TRL's importance-sampling correction dropped (its `vllm_importance_sampling_mode`), and the gap
        for key, name in (("sampling/importance_sampling_masked_share", "masked_share"),
                          ("sampling/sampling_logp_difference/mean", "sampling_logp_difference_mean")):
            values = [h[key] for h in history if key in h]
            if values:
                result[name] = statistics.mean(values)
        if torch.cuda.is_available():  # the colocated engine's budget is outside torch's own peak
            free, total = torch.cuda.mem_get_info()
            result["device_used_gib"] = (total - free) / GIB
    if torch.cuda.is_available():
        result["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
    return result


def measure_generation(point: dict) -> dict:
    """Child process: generated tokens/s of one pass with one backend (and transformers' peak memory)."""
    import torch

    sequences, new, backend = point["sequences"], point["gen_tokens"], point["backend"]
    prompt = [{"role": "user", "content": words(point["prompt_words"])}]
    if backend == "vllm":
        return measure_vllm(point, prompt)
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig, GenerationConfig

    cuda = torch.cuda.is_available() and not point["dry_run"]
    dtype = torch.bfloat16 if cuda else torch.float32
    kwargs = {"dtype": dtype, "device_map": "cuda" if cuda else "cpu"}
    if point["load_in_4bit"]:
        kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                           bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype)
    model = AutoModelForCausalLM.from_pretrained(point["model_dir"], **kwargs)
    if point["lora_r"]:
        model = get_peft_model(model, LoraConfig(r=point["lora_r"], target_modules="all-linear"))
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(point["model_dir"], padding_side="left")
    text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    ids = tokenizer([text] * sequences, return_tensors="pt").to(model.device)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    config = GenerationConfig(max_new_tokens=new, min_new_tokens=new, do_sample=True,
                              pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
    if backend == "fast":  # the merged copy; the warm-up is a whole pass (compilation, CUDA graph capture)
        from trl_r1.data.fast_generation import MergedPolicy

        copy = MergedPolicy(model)
        refresh = time.perf_counter()
        copy.refresh()
        StepTimer.sync()
        refresh_seconds = time.perf_counter() - refresh
        warm_up = time.perf_counter()
        copy.generate(ids["input_ids"], ids["attention_mask"], config)
        StepTimer.sync()
        warm_up_seconds = time.perf_counter() - warm_up
        generate = lambda: copy.generate(ids["input_ids"], ids["attention_mask"], config)  # noqa: E731
    else:
        with torch.no_grad():
            model.generate(**ids, max_new_tokens=2, min_new_tokens=2, do_sample=True)  # warm-up
        generate = lambda: model.generate(**ids, generation_config=config)  # noqa: E731
    with torch.no_grad():
        StepTimer.sync()
        began = time.perf_counter()
        out = generate()
        StepTimer.sync()
    seconds = time.perf_counter() - began
    made = (out.shape[1] - ids["input_ids"].shape[1]) * sequences
    result = {"backend": backend, "sequences": sequences, "prompt_tokens": ids["input_ids"].shape[1],
              "new_tokens": new, "seconds": seconds, "generated_tokens_per_s": made / seconds,
              "ms_per_step": seconds / new * 1000}
    if backend == "fast":
        result.update(refresh_seconds=refresh_seconds, warm_up_seconds=warm_up_seconds)
    if cuda:
        result["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
    return result


def measure_vllm(point: dict, prompt: list[dict]) -> dict:
    """vLLM's generated tokens/s for the pass (its budget as the recipe sets it; the 4-bit base through
    bitsandbytes when the stage loads it in 4-bit; a random LoRA adapter served unmerged when the stage has one)."""
    import torch
    from vllm import LLM, SamplingParams

    from trl_r1.data.generation import vllm_lora_rank, vllm_unsupported_reason

    reason = vllm_unsupported_reason(point["model_dir"], point["load_in_4bit"])
    if reason:  # e.g. a vLLM without bitsandbytes for the 4-bit base: recorded, not measured on another base
        raise RuntimeError(f"vLLM cannot serve this pass here: {reason}")
    options = {"gpu_memory_utilization": point["vllm_gpu_memory_utilization"],
               "max_model_len": point["prompt_words"] + point["gen_tokens"] + 64}
    if point["load_in_4bit"]:
        options["quantization"] = "bitsandbytes"
    request = None
    if point["lora_r"]:
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM
        from vllm.lora.request import LoRARequest

        adapter = Path(tempfile.mkdtemp()) / "adapter"
        get_peft_model(AutoModelForCausalLM.from_pretrained(point["model_dir"]),
                       LoraConfig(r=point["lora_r"], target_modules="all-linear")).save_pretrained(adapter)
        options.update(enable_lora=True, max_lora_rank=vllm_lora_rank(point["lora_r"]))  # vLLM takes only some
        request = LoRARequest("benchmark", 1, str(adapter))
    llm = LLM(model=point["model_dir"], **options)
    params = SamplingParams(max_tokens=point["gen_tokens"], min_tokens=point["gen_tokens"], ignore_eos=True)
    conversations = [prompt] * point["sequences"]
    llm.chat(conversations[:1], SamplingParams(max_tokens=2), lora_request=request)  # warm-up
    began = time.perf_counter()
    outputs = llm.chat(conversations, params, lora_request=request)
    seconds = time.perf_counter() - began
    made = sum(len(o.outputs[0].token_ids) for o in outputs)
    result = {"backend": "vllm", "sequences": point["sequences"], "new_tokens": point["gen_tokens"],
              "seconds": seconds, "generated_tokens_per_s": made / seconds,
              "ms_per_step": seconds / point["gen_tokens"] * 1000}
    if torch.cuda.is_available():  # vLLM holds its whole budget from start-up on, in its own process
        free, total = torch.cuda.mem_get_info()
        result["device_used_gib"] = (total - free) / GIB
    return result


def run_child(point: dict, timeout: int) -> dict:
    """One measurement in a fresh process (its own CUDA peak); a failure is recorded, never fatal."""
    began = time.time()
    try:
        done = subprocess.run([sys.executable, __file__, "--child", json.dumps(point)], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if done.returncode:
        return {"error": done.stderr[-2000:], "wall_s": round(time.time() - began, 1)}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall_s": round(time.time() - began, 1)}


def formula_gib(shape, measured: dict, card_gb: float) -> float:
    """The formula's `reserved` figure (GiB) at the settings that ran."""
    from trl_r1.trainers.memory import (
        GenerationSettings,
        GRPOSettings,
        estimate_generation_peak,
        estimate_grpo_peak,
        estimate_sft_peak,
    )

    if "backend" in measured:
        estimate = estimate_generation_peak(shape, GenerationSettings(
            batch_size=measured["sequences"], num_samples=1, max_new_tokens=measured["new_tokens"],
            prompt_length=measured["prompt_tokens"], load_in_4bit=measured["load_in_4bit"],
            lora_r=measured["lora_r"] or None, fast=measured["backend"] == "fast"))
    elif measured["kind"] == "sft":
        estimate = estimate_sft_peak(shape, GRPOSettings(
            max_prompt_length=0, max_completion_length=measured["max_length"],
            per_device_train_batch_size=measured["per_device_train_batch_size"], lora_r=measured["lora_r"],
            load_in_4bit=measured["load_in_4bit"]))
    else:
        four_bit = measured["load_in_4bit"]
        estimate = estimate_grpo_peak(shape, GRPOSettings(
            max_prompt_length=measured["prompt_tokens"], max_completion_length=measured["max_completion_length"],
            per_device_train_batch_size=measured["per_device_train_batch_size"],
            gradient_accumulation_steps=measured["steps_per_generation"], lora_r=measured["lora_r"],
            load_in_4bit=four_bit, use_vllm=measured["use_vllm"],
            vllm_gpu_memory_utilization=measured["vllm_gpu_memory_utilization"],
            vllm_enable_sleep_mode=measured["vllm_enable_sleep_mode"],
            vllm_lora_adapter=measured["use_vllm"] and four_bit,
            fast_generation=bool(measured.get("fast_generation"))), card_gb=card_gb)
    return estimate.reserved / GIB


def environment(dry_run: bool) -> dict:
    import importlib.metadata as metadata

    import torch

    versions = {}
    for package in ("torch", "transformers", "trl", "peft", "bitsandbytes", "vllm"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    cuda = torch.cuda.is_available() and not dry_run
    card = torch.cuda.get_device_name(0) if cuda else "cpu (dry run: no memory figures)"
    memory = torch.cuda.get_device_properties(0).total_memory / 1e9 if cuda else 24.0
    return {"card": card, "card_memory_gb": memory, "versions": versions}


def generation_points(data: dict, stage: str, section: dict, measured: dict | None, args, vllm: bool) -> list[dict]:
    """The generation passes a stage runs, one per backend it can use (rl: also at `--wide` sequences)."""
    model = data["model"]
    widths: list[int] = []
    if stage in SFT_STAGES:
        return []
    if stage == "rl":
        if measured is None or "error" in measured:
            return []
        sequences = measured["per_device_train_batch_size"] * measured["steps_per_generation"]  # one generation
        four_bit, lora, utilization = measured["load_in_4bit"], measured["lora_r"], section.get(
            "vllm_gpu_memory_utilization", 0.3)
        backends = ["transformers", "fast"] + (["vllm"] if vllm and data["rl"].get("use_vllm") else [])
        widths = [args.wide] if args.wide != sequences else []
    else:
        pass_section = {**GENERATION_DEFAULTS[stage], **data[stage]}
        sequences = pass_section["batch_size"] * pass_section["num_samples"]
        four_bit = pass_section["load_in_4bit"] if stage == "rejection_sampling" else model.get("load_in_4bit", True)
        lora = model.get("lora_r", 16) if stage == "rejection_sampling" else 0
        utilization = pass_section.get("vllm_gpu_memory_utilization", 0.9)
        backends = ["transformers", "fast"] + (["vllm"] if vllm and pass_section.get("backend", "auto") !=
                                               "transformers" else [])
    if args.dry_run:
        sequences, widths = DRY_RUN["batch"], []
    return [{"stage": stage, "backend": backend, "sequences": n, "load_in_4bit": bool(four_bit),
             "lora_r": lora, "vllm_gpu_memory_utilization": utilization}
            for n in [sequences, *widths] for backend in backends]


def point_recipe(row: dict) -> tuple[dict, str]:
    """A `gpu_points.jsonl` row as a one-stage recipe (`--remeasure`): its model, mode, lengths and batch."""
    model = {"model_name_or_path": row["model"], "lora_r": row.get("lora_r", 16),
             "load_in_4bit": row["mode"] == "qlora"}
    batch = row["per_device_train_batch_size"]
    if row["trainer"] == "sft":
        return {"model": model, "training": {"bf16": True}, "cold_start": {
            "max_length": row["prompt_length"] + row["completion_length"], "per_device_train_batch_size": batch}}, \
            "cold_start"
    section = {"max_completion_length": row["completion_length"], "per_device_train_batch_size": batch,
               "num_generations": batch * row.get("gradient_accumulation_steps", 1)}
    if row.get("generation") == "vllm":
        section.update(use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=row[
            "vllm_gpu_memory_utilization"], vllm_enable_sleep_mode=bool(row.get("vllm_enable_sleep_mode")))
    return {"model": model, "training": {"bf16": True}, "rl": section}, "rl"


def measure_stage(data: dict, stage: str, args, context: dict) -> dict:
    """One stage: its training step (SFT, GRPO) and its generation passes, each beside the formula."""
    entry: dict = {"measured": [], "changed": {}}
    training = None
    if stage in SFT_STAGES or stage == "rl":
        section, entry["changed"] = stage_section(data, stage, args, context["vllm"])
        training = run_child({"stage": stage, "data": data, "section": section, "model_dir": context["model_dir"],
                              "run_dir": str(context["work"] / stage), "dry_run": args.dry_run,
                              "prompt_words": context["prompt_words"]}, args.timeout)
        entry["measured"].append({"what": "training", **training})
    else:
        section = data[stage]
    for point in generation_points(data, stage, section, training, args, context["vllm"]):
        point.update(model_dir=context["model_dir"], gen_tokens=args.gen_tokens, prompt_words=context["prompt_words"],
                     dry_run=args.dry_run)
        entry["measured"].append({"what": "generation", **point, **run_child(point, args.timeout)})
    for measured in entry["measured"]:
        if "error" not in measured and (measured["what"] == "training" or measured["backend"] != "vllm"):
            measured["formula_reserved_gib"] = formula_gib(context["shape"], measured, context["card_memory_gb"])
    return entry


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if "--acceptance" in argv:  # issue 33's fast-generation run: its own script, no recipe
        sys.path.insert(0, str(Path(__file__).parent))
        from fast_generation_acceptance import main as acceptance

        return acceptance(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recipe", nargs="?")
    parser.add_argument("--stages", nargs="+", help="default: every stage of the recipe, and evaluation")
    parser.add_argument("--steps", type=int, help="optimizer steps per training stage (default 2: the first is "
                        "warm-up, the rest are timed)")
    parser.add_argument("--prompt-tokens", type=int, default=512, help="rl / generation prompt length (about)")
    parser.add_argument("--transformers-completion", type=int, default=1024,
                        help="rl completion length when it generates with transformers (slow: shortened)")
    parser.add_argument("--gen-tokens", type=int, default=256, help="new tokens per sequence of a generation pass")
    parser.add_argument("--wide", type=int, default=64, help="rl: the generation passes also at this many sequences")
    parser.add_argument("--model-dir", help="where the random-weight model is built (reused when it is there)")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--points", help="append the measured training points to this gpu_points.jsonl")
    parser.add_argument("--remeasure", metavar="POINTS", help="instead of a recipe: measure again each training "
                        "point of a gpu_points.jsonl file at its own settings (benchmarks/data/gpu_points.jsonl)")
    parser.add_argument("--dry-run", action="store_true", help="CPU, the model's ci size, tiny lengths (CI)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per measurement")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        point = json.loads(args.child)
        print(json.dumps(measure_generation(point) if "backend" in point else measure_training(point)))
        return {}
    if not args.recipe and not args.remeasure:
        parser.error("RECIPE (or --remeasure POINTS) is required")
    import importlib.util

    import torch

    if not args.dry_run and not torch.cuda.is_available():
        parser.error("no CUDA GPU here: run on a GPU machine, or pass --dry-run (CPU, tiny sizes)")
    args.steps = args.steps or STEPS
    if args.dry_run:
        args.prompt_tokens, args.gen_tokens = DRY_RUN["prompt_tokens"], DRY_RUN["gen_tokens"]
    began = time.time()
    env = environment(args.dry_run)
    vllm = importlib.util.find_spec("vllm") is not None and not args.dry_run
    command = " ".join(["python benchmarks/gpu.py", *(argv if argv is not None else sys.argv[1:])])
    work = Path(tempfile.mkdtemp(prefix="trl_r1_gpu_"))
    if args.remeasure:
        rows = [json.loads(line) for line in Path(args.remeasure).read_text().splitlines() if line.strip()]
        results = {**env, "recipe": None, "remeasured": args.remeasure, "command": command, "stages": {}}
        for i, row in enumerate(rows):
            data, stage = point_recipe(row)
            if row["trainer"] == "grpo":
                args.prompt_tokens = row["prompt_length"]
            context = prepare_model(data, args, env, work / f"point-{i}", vllm)
            entry = measure_stage(data, stage, args, context)
            entry["recorded"] = {k: row[k] for k in ("card", "versions", "peak_reserved_gib", "source")}
            results["model"], results["size"] = row["model"], context["size"]
            results["stages"][f"point {i}: {row['trainer']} {row['mode']} "
                              f"{row['prompt_length']}+{row['completion_length']} x "
                              f"{row['per_device_train_batch_size']}"] = entry
    else:
        data = yaml.safe_load(Path(args.recipe).read_text())
        context = prepare_model(data, args, env, work, vllm)
        stages = args.stages or [s for s in ("cold_start", "rl", "rejection_sampling", "final_sft", "evaluation")
                                 if s in data]
        results = {**env, "recipe": args.recipe, "model": context["name"], "size": context["size"],
                   "command": command, "stages": {stage: measure_stage(data, stage, args, context)
                                                  for stage in stages}}
    results["total_s"] = round(time.time() - began)
    print_table(results)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    if args.points and not args.dry_run:
        with open(args.points, "a") as points:
            for line in gpu_points(results):
                points.write(json.dumps(line) + "\n")
    return results


def prepare_model(data: dict, args, env: dict, work: Path, vllm: bool) -> dict:
    """Build the recipe's model shape with random weights (reused when built before) and what a stage needs."""
    from trl_r1.trainers.memory import spec_shape
    from trl_r1.rehearsal.models import build_model, model_spec

    name, size = data["model"]["model_name_or_path"], "ci" if args.dry_run else "full"
    model_dir = args.model_dir or str(Path(tempfile.gettempdir()) / "trl_r1_gpu" / f"{name.replace('/', '--')}-{size}")
    build_model(name, model_dir, size=size)
    return {"name": name, "size": size, "model_dir": model_dir, "work": work, "vllm": vllm,
            "shape": spec_shape(name, model_spec(name).sized(size)),
            "card_memory_gb": env["card_memory_gb"],
            "prompt_words": max(1, args.prompt_tokens - 20)}  # the chat template's own tokens make up the rest


def gpu_points(results: dict) -> list[dict]:
    """The measured training steps as `benchmarks/data/gpu_points.jsonl` rows."""
    rows = []
    for stage, entry in results["stages"].items():
        for m in entry["measured"]:
            if m["what"] != "training" or "peak_reserved_gib" not in m:
                continue
            sft = m["kind"] == "sft"
            rows.append({"card": results["card"], "card_memory_gb": results["card_memory_gb"],
                         "versions": results["versions"], "model": results["model"], "trainer": m["kind"],
                         "mode": "qlora" if m["load_in_4bit"] else "lora",
                         "prompt_length": 0 if sft else m["prompt_tokens"],
                         "completion_length": m["max_length"] if sft else m["max_completion_length"],
                         "per_device_train_batch_size": m["per_device_train_batch_size"],
                         "gradient_accumulation_steps": 1 if sft else m["steps_per_generation"],
                         "lora_r": m["lora_r"], "gradient_checkpointing": True,
                         "generation": None if sft else ("vllm" if m["use_vllm"] else "transformers"),
                         "vllm_gpu_memory_utilization": None if sft else m["vllm_gpu_memory_utilization"],
                         "vllm_enable_sleep_mode": None if sft else m["vllm_enable_sleep_mode"],
                         "peak_reserved_gib": round(m["peak_reserved_gib"], 3),
                         "source": f"{results['command']} ({stage})"})
    return rows


def print_table(results: dict) -> None:
    print(f"\n{results['recipe']} on {results['card']} ({results['model']}, size {results['size']}; "
          f"{results['total_s']} s)")
    print("| stage | what | settings | peak reserved GiB | formula GiB | formula / measured | train tok/s (rl: "
          "whole step) | generated tok/s | device used GiB (vLLM) | IS masked share |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for stage, entry in results["stages"].items():
        for m in entry["measured"]:
            if "error" in m:
                print(f"| {stage} | {m['what']} {m.get('backend', '')} | error: "
                      f"{m['error'].strip().splitlines()[-1] if m['error'].strip() else '?'} | | | | | | | |")
                continue
            if m["what"] == "training":
                settings = (f"{m['max_length']} tok x {m['per_device_train_batch_size']}" if m["kind"] == "sft" else
                            f"{m['per_device_train_batch_size'] * m['steps_per_generation']} x "
                            f"({m['prompt_tokens']} + {m['max_completion_length']}), "
                            f"{'vLLM' if m['use_vllm'] else 'fast' if m.get('fast_generation') else 'transformers'}")
                speed = (f"{m['train_tokens_per_s']:.0f}" + ("" if m["kind"] == "sft" else
                                                             f" ({m['step_seconds']:.1f} s/step)"), "")
            else:
                settings = f"{m['sequences']} seq x {m['new_tokens']} new, {m['backend']}"
                speed = ("", f"{m['generated_tokens_per_s']:.0f} ({m['ms_per_step']:.1f} ms/step)")
            peak, formula = m.get("peak_reserved_gib"), m.get("formula_reserved_gib")
            ratio = f"{formula / peak:.2f}" if peak and formula else "-"
            if entry.get("recorded") and m["what"] == "training":
                settings += f" (recorded on {entry['recorded']['card']}: {entry['recorded']['peak_reserved_gib']} GiB)"
            used, masked = m.get("device_used_gib"), m.get("masked_share")
            print(f"| {stage} | {m['what']} | {settings} | {f'{peak:.2f}' if peak else '-'} | "
                  f"{f'{formula:.2f}' if formula else '-'} | {ratio} | {speed[0]} | {speed[1]} | "
                  f"{f'{used:.2f}' if used and m.get('use_vllm', m.get('backend') == 'vllm') else '-'} | "
                  f"{f'{masked:.3f}' if masked is not None else '-'} |")
        if entry["changed"]:
            print(f"|   | shortened | {entry['changed']} | | | | | | | |")


if __name__ == "__main__":
    main()
