"""Running one stage: build the TRL trainer from a `StagePlan`, train (resuming), save, hand the model on.

Every stage writes `<run_dir>/<stage>/stage.json`: its fingerprint, status (`running` / `done`), outputs (the
model to continue from, as a full model path plus an optional LoRA adapter) and metrics. A `done` stage with
the same fingerprint is skipped; a `running` one resumes from its last `checkpoint-*`; a stage whose
fingerprint changed (its section, the model, or an earlier stage was edited) is moved aside and redone.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .recipe import R1ModelConfig, StagePlan

logger = logging.getLogger("trl_r1.pipeline")

STAGE_FILE = "stage.json"


class StageError(RuntimeError):
    """A stage could not produce what the next one needs (reported without a traceback; re-run to retry)."""


@dataclass
class ModelHandle:
    """A model to start from: a full model directory, optionally with a LoRA adapter trained on top of it."""

    model_path: str
    adapter_path: str | None = None


@dataclass
class StageRecord:
    """What `stage.json` holds."""

    name: str
    fingerprint: str
    status: str = "running"  # running | done
    outputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    evaluation: dict[str, Any] | None = None
    seconds: float = 0.0

    @property
    def handle(self) -> ModelHandle | None:
        if "model_path" not in self.outputs:
            return None
        return ModelHandle(self.outputs["model_path"], self.outputs.get("adapter_path"))


def read_record(stage_dir: Path) -> StageRecord | None:
    """The stage's record, or None if it never started (or the file is unreadable: the stage is redone)."""
    try:
        return StageRecord(**json.loads((stage_dir / STAGE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_record(stage_dir: Path, record: StageRecord) -> None:
    stage_dir.mkdir(parents=True, exist_ok=True)
    tmp = stage_dir / (STAGE_FILE + ".tmp")
    tmp.write_text(json.dumps(asdict(record), indent=2, default=str))
    tmp.replace(stage_dir / STAGE_FILE)  # atomic: an interrupted write never leaves a half file


def stage_status(plan: StagePlan, forced: bool = False) -> str:
    """`done` (skip), `resume` (interrupted, same config), `stale` (config changed: redo) or `new`."""
    record = read_record(plan.output_dir)
    if record is None:
        return "new"
    if record.fingerprint != plan.fingerprint:
        return "stale"
    if forced:
        return "stale"
    return "done" if record.status == "done" else "resume"


def prepare_stage_dir(plan: StagePlan, status: str) -> None:
    """Move a stale stage's outputs aside (to `<stage>.previous`) so that nothing of the old run is mixed in."""
    if status == "stale" and plan.output_dir.exists():
        previous = plan.output_dir.with_name(plan.output_dir.name + ".previous")
        shutil.rmtree(previous, ignore_errors=True)
        plan.output_dir.rename(previous)
        logger.info("%s: configuration changed, previous outputs moved to %s", plan.name, previous)


# --------------------------------------------------------------------------------------------- training stages


def run_training_stage(plan: StagePlan, start: ModelHandle, train_dataset: Any, *,
                       reward_funcs: list[Any] | None = None) -> StageRecord:
    """Train one SFT / GRPO / PPO stage from `start`; returns its finished record (outputs + metrics)."""
    from transformers.trainer_utils import get_last_checkpoint

    model_args = plan.model_args
    config = plan.config
    plan.output_dir.mkdir(parents=True, exist_ok=True)
    resume = get_last_checkpoint(str(plan.output_dir)) if any(plan.output_dir.glob("checkpoint-*")) else None
    if resume:
        logger.info("%s: resuming from %s", plan.name, resume)
    model, peft_config, quantization_config = _model_for_trainer(model_args, start, config)
    trainer_cls = _trainer_class(plan.kind)
    kwargs: dict[str, Any] = {"model": model, "args": config, "train_dataset": train_dataset,
                              "peft_config": peft_config, "quantization_config": quantization_config}
    if reward_funcs is not None:
        kwargs["reward_funcs"] = reward_funcs
    trainer = trainer_cls(**kwargs)
    began = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(str(plan.output_dir))
    trainer.save_state()
    outputs = _hand_on(plan, start, model_args)
    trained = trainer.model
    metrics = {"train": dict(result.metrics), "global_step": trainer.state.global_step,
               "resumed_from": resume, "loaded_in_4bit": bool(getattr(trained, "is_loaded_in_4bit", False)),
               "trainable_params": sum(p.numel() for p in trained.parameters() if p.requires_grad)}
    return StageRecord(plan.name, plan.fingerprint, "done", outputs, metrics, seconds=time.perf_counter() - began)


def _trainer_class(kind: str) -> type:
    if kind == "sft":
        from trl import SFTTrainer

        return SFTTrainer
    from .. import trainers

    return trainers.R1PPOTrainer if kind == "ppo" else trainers.R1GRPOTrainer


def _model_for_trainer(model_args: R1ModelConfig, start: ModelHandle, config: Any) -> tuple[Any, Any, Any]:
    """(model, peft_config, quantization_config) for a TRL trainer constructor.

    A new adapter: the model path as a string (TRL loads it with `model_init_kwargs`, quantised if asked) and a
    LoRA config. Continuing an adapter (`adapter_handoff: continue`): the 4-bit base with that adapter loaded as
    trainable; TRL then keeps a frozen copy as the reference ("ref" adapter).
    """
    from trl import get_peft_config, get_quantization_config

    init_kwargs = {"dtype": model_args.dtype, "revision": model_args.model_revision,
                   "attn_implementation": model_args.attn_implementation}
    config.model_init_kwargs = {**{k: v for k, v in init_kwargs.items() if v is not None},
                                **(config.model_init_kwargs or {})}
    quantization = get_quantization_config(model_args)
    if start.adapter_path is None:
        return start.model_path, get_peft_config(model_args), quantization
    from peft import PeftModel
    from trl.trainer.utils import create_model_from_path

    kwargs = dict(config.model_init_kwargs)
    if quantization is not None:
        kwargs["quantization_config"] = quantization
    base = create_model_from_path(start.model_path, **kwargs)
    return PeftModel.from_pretrained(base, start.adapter_path, is_trainable=True), None, None


def _hand_on(plan: StagePlan, start: ModelHandle, model_args: R1ModelConfig) -> dict[str, Any]:
    """The model the next stage starts from: this stage's full model, its adapter on the same base, or the
    adapter merged into a fresh full-precision copy of the base (`<stage>/merged`)."""
    out = str(plan.output_dir)
    if not model_args.use_peft:
        return {"model_path": out}
    if model_args.adapter_handoff == "continue":
        return {"model_path": start.model_path, "adapter_path": out}
    merged = plan.output_dir / "merged"
    merge_adapter(start.model_path, out, merged, dtype=model_args.dtype)
    return {"model_path": str(merged), "adapter_path": None, "adapter": out}


def merge_adapter(base_path: str, adapter_path: str, output_dir: Path, *, dtype: str | None = "bfloat16") -> Path:
    """Merge a LoRA adapter into an unquantised copy of its base and save it with the tokenizer.

    QLoRA trains against the 4-bit base; merging into the 16-bit base is the standard hand-off (the next stage
    quantises the merged weights afresh), at the cost of the small quantisation error the adapter absorbed.
    """
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch_dtype = getattr(torch, dtype) if dtype not in (None, "auto") else "auto"
    base = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch_dtype)
    merged = PeftModel.from_pretrained(base, adapter_path).merge_and_unload()
    merged.save_pretrained(output_dir)
    tokenizer_source = adapter_path if (Path(adapter_path) / "tokenizer_config.json").is_file() else base_path
    AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(output_dir)
    return output_dir


# --------------------------------------------------------------------------------------------- rejection sampling


def run_rejection_sampling_stage(plan: StagePlan, start: ModelHandle, model: R1ModelConfig, prompts: Any,
                                 *, rewards: list[Any] | None, think_prefilled: bool) -> StageRecord:
    """Sample from the RL checkpoint with trl-r1's data builder; the accepted set feeds the final SFT."""
    from ..data.rejection_sampling import rejection_sample

    section = plan.section
    config = replace(
        plan.config, model_name_or_path=start.model_path, adapter_path=start.adapter_path,
        output_dir=str(plan.output_dir),
        load_in_4bit=section.get("load_in_4bit", bool(model.load_in_4bit)),
        rewards=section.get("rewards", rewards if rewards is not None else plan.config.rewards),
        think_prefilled=section.get("think_prefilled", True if think_prefilled else plan.config.think_prefilled),
    )
    began = time.perf_counter()
    result = rejection_sample(config, dataset=prompts)
    outputs = {"dataset_path": str(Path(result.output_dir) / "sft.jsonl"), "num_accepted": len(result.dataset)}
    if len(result.dataset) == 0:
        raise StageError(f"{plan.name}: no sample was accepted (stats: {result.stats}); the final SFT would have "
                           "nothing to train on. Train the RL stage longer, sample more (num_samples), or lower "
                           "min_reward")
    return StageRecord(plan.name, plan.fingerprint, "done", outputs, {"rejection_sampling": result.stats},
                       seconds=time.perf_counter() - began)


def final_sft_dataset(plan: StagePlan, accepted_path: str | None):
    """The accepted samples (their `messages`), mixed with the recipe's `mix_datasets` and/or its own dataset."""
    import datasets
    from trl import DatasetMixtureConfig, get_dataset

    from .data import load_stage_dataset

    parts = []
    if accepted_path:
        parts.append(datasets.load_dataset("json", data_files=accepted_path, split="train"))
    if plan.args.dataset_name:
        parts.append(load_stage_dataset(plan.args))
    if plan.args.mix_datasets:
        parts.append(get_dataset(DatasetMixtureConfig(datasets=[dict(d) for d in plan.args.mix_datasets]))["train"])
    parts = [p.select_columns(["messages"]) for p in parts]
    return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts).shuffle(seed=plan.config.seed)
