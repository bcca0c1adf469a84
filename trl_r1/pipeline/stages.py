"""The pipeline's stages: one protocol (`Stage`), one registry (`STAGE_REGISTRY`, in pipeline order), and what
each kind does: train with a TRL trainer (resuming), rejection-sample, hand the model on.

A stage answers four questions, so the runner never asks for a stage by name:

* `plan(name, section, where, problems)`: validate its recipe section into a `StagePlan` (and
  `check_recipe(plan, present, problems)`: what it needs from the other stages);
* `check_data(plan, pipeline)`: problems with its dataset, before any work (preflight);
* `cost(plan, pipeline, costs)`: what it will spend (prompts, samples, tokens: `plan.StageCost`), for the plan;
* `run(plan, pipeline)`: the work. A `data_parallel` stage runs on every rank (training: accelerate/TRL shard
  the batches); any other stage runs on the main process only;
* `record(plan, pipeline, result)`: on the main process, what the next stages get (the model handle, merged if
  asked, or the dataset) and the metrics, as a `StageRecord`.

For `run --smoke` (`trl_r1.pipeline.smoke`) it also gives `smoke(section)`, its section shrunk to a CPU minute,
and `smoke_problems(name, stage_dir)`, what such a run failed to exercise.

Adding a stage (R1's second RL phase, say) is one registration at the bottom of this file::

    STAGE_REGISTRY.add("rl_2", RLStage(starts_from=("final_sft", "rl", "cold_start")))

Every stage writes `<run_dir>/<stage>/stage.json`: its fingerprint, status (`running` / `done`), outputs (the
model to continue from, as a full model path plus an optional LoRA adapter; for a merged LoRA stage also the
adapter and its base, which generate as the stage's model) and metrics. A `done` stage with
the same fingerprint is skipped; a `running` one resumes from its last `checkpoint-*`; a stage whose
fingerprint changed (its section, the model, or an earlier stage was edited) is moved aside and redone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checkpoints import last_complete_checkpoint
from .fingerprint import ModelHandle, StageRecord, prepare_stage_dir, read_record, stage_status, write_record
from .plan import StageCost, dataset_rows, final_sft_cost, rejection_sampling_cost, rl_cost, training_cost
from .preflight import Run, dataset_problems, short_max_length_problems
from .recipe import (
    STAGE_REGISTRY,
    TRAINER_KINDS,
    FinalSFTArguments,
    PlanContext,
    R1ModelConfig,
    RejectionSamplingStageArguments,
    RLStageArguments,
    SFTStageArguments,
    StagePlan,
    build,
    check_mix_entry,
    fields_of,
    pick,
    plan_section_keys,
    plan_trainer_stage,
    rejection_sampling_config,
    reward_weights,
    run_seed,
)
from ..trainers.chat_templates import prepare_assistant_only_loss

if TYPE_CHECKING:
    from collections.abc import Iterator

    from datasets import Dataset
    from peft import PeftConfig
    from transformers import BitsAndBytesConfig, PreTrainedModel, Trainer, TrainingArguments

    from ..data.rejection_sampling import RejectionSamplingConfig

logger = logging.getLogger("trl_r1.pipeline")

SMOKE_MAX_SAMPLES = 8  # `run --smoke`: the rows a stage keeps of its own dataset


class StageError(RuntimeError):
    """A stage could not produce what the next one needs (reported without a traceback; re-run to retry)."""


# --------------------------------------------------------------------------------------------- training


@dataclass
class TrainingResult:
    """What `train` leaves for `record`: the trainer's numbers (every rank has them; the main one records)."""

    start: ModelHandle
    metrics: dict[str, Any]
    seconds: float


def train(plan: StagePlan, start: ModelHandle, train_dataset: Dataset, *,
          reward_funcs: list[Any] | None = None, long_examples: "DropLongExamples | None" = None) -> TrainingResult:
    """Train one SFT / GRPO / PPO stage from `start`, resuming from its last checkpoint, and save it; with
    `long_examples`, the examples longer than `max_length` are dropped from what the trainer prepared.

    Runs on every rank: TRL's trainer shards the batches across processes and saves on the main one.
    """
    from ..data.generation import release_accelerator_memory
    from ..trainers.trl_compat import shutdown_trainer_vllm

    config = plan.config
    plan.output_dir.mkdir(parents=True, exist_ok=True)
    resume = last_complete_checkpoint(plan.output_dir)
    if resume:
        logger.info("%s: resuming from %s", plan.name, resume)
    trainer = None
    try:  # the vLLM engine TRL starts with the trainer is freed whether training succeeds or raises
        with long_examples.untruncated(config) if long_examples is not None else contextlib.nullcontext():
            trainer = make_trainer(plan, start, train_dataset, reward_funcs=reward_funcs)
        dropped = {"long_examples": long_examples(trainer)} if long_examples is not None else {}
        began = time.perf_counter()
        result = trainer.train(resume_from_checkpoint=resume)
        trainer.save_model(str(plan.output_dir))
        trainer.save_state()
        trained = trainer.model
        metrics = {"train": dict(result.metrics), "global_step": trainer.state.global_step,
                   "resumed_from": resume, "loaded_in_4bit": bool(getattr(trained, "is_loaded_in_4bit", False)),
                   "trainable_params": sum(p.numel() for p in trained.parameters() if p.requires_grad),
                   "num_processes": trainer.accelerator.num_processes, "seed": config.seed, **dropped}
        seconds = time.perf_counter() - began
    finally:
        if trainer is not None:
            shutdown_trainer_vllm(trainer)  # TRL never does: its engine would stay resident for the later stages
        del trainer
        release_accelerator_memory()
    return TrainingResult(start, metrics, seconds)


def make_trainer(plan: StagePlan, start: ModelHandle, train_dataset: Dataset, *,
                 reward_funcs: list[Any] | None = None) -> Trainer:
    """The TRL trainer a training stage runs, as its plan resolved it: vLLM generation only where
    `StagePlan.generation` says so, a 4-bit base where `StagePlan.load_in_4bit` does."""
    config = plan.config
    if getattr(config, "use_vllm", False) and plan.generation != "vllm":  # never silent: say why
        logger.warning("%s: generating with transformers, not vLLM: %s", plan.name, plan.generation_why)
        config.use_vllm = False
    model_args = replace(plan.model_args, load_in_4bit=plan.load_in_4bit)
    model, peft_config, quantization_config = _model_for_trainer(model_args, start, config)
    kwargs: dict[str, Any] = {"model": model, "args": config, "train_dataset": train_dataset,
                              "peft_config": peft_config, "quantization_config": quantization_config}
    if reward_funcs is not None:
        kwargs["reward_funcs"] = reward_funcs
    return TRAINER_KINDS[plan.kind].trainer(**kwargs)


def _model_for_trainer(model_args: R1ModelConfig, start: ModelHandle, config: TrainingArguments
                       ) -> tuple[PreTrainedModel | str, PeftConfig | None, BitsAndBytesConfig | None]:
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

    from ..trainers.trl_compat import create_model_from_path  # a TRL internal: only through the seam

    kwargs = dict(config.model_init_kwargs)
    if quantization is not None:
        kwargs["quantization_config"] = quantization
    base = create_model_from_path(start.model_path, **kwargs)
    return PeftModel.from_pretrained(base, start.adapter_path, is_trainable=True), None, None


def hand_on(plan: StagePlan, result: TrainingResult) -> StageRecord:
    """The finished record of a training stage, with the model the next stage starts from: this stage's full
    model, its adapter on the same base, or the adapter merged into a fresh full-precision copy of the base
    (`<stage>/merged`). Main process only: the adapter is complete on disk once every rank has passed the
    barrier after training."""
    out, model_args = str(plan.output_dir), plan.model_args
    if not model_args.use_peft:
        outputs = {"model_path": out}
    elif model_args.adapter_handoff == "continue":
        outputs = {"model_path": result.start.model_path, "adapter_path": out}
    else:
        merged = plan.output_dir / "merged"
        merge_adapter(result.start.model_path, out, merged, dtype=model_args.dtype)
        outputs = {"model_path": str(merged), "adapter_path": None, "adapter": out,
                   "adapter_base": result.start.model_path}
    return StageRecord(plan.name, plan.fingerprint, "done", outputs, result.metrics, seconds=result.seconds)


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
    logger.info("merging the LoRA adapter %s into %s -> %s", adapter_path, base_path, output_dir)
    merged = PeftModel.from_pretrained(base, adapter_path).merge_and_unload(progressbar=True)  # minutes at 7B
    merged.save_pretrained(output_dir)
    tokenizer_source = adapter_path if (Path(adapter_path) / "tokenizer_config.json").is_file() else base_path
    AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(output_dir)
    return output_dir


class DropLongExamples:
    """Drop, not cut, the SFT examples longer than `max_length` tokens.

    TRL 1.16's SFTTrainer truncates them (`truncation_mode`), which cuts a long reasoning trace before its answer
    and teaches the model to stop mid-reasoning. The trainer is built with `max_length=None` (TRL tokenizes
    every example in full, with its own chat template and masks), then the prepared examples longer than
    `max_length` are filtered out and `max_length` is restored. The counts go into the stage's record; a dataset
    left empty is an error, never a silent no-op.
    """

    def __init__(self, stage: str, max_length: int):
        self.stage, self.max_length = stage, max_length

    @contextlib.contextmanager
    def untruncated(self, config: TrainingArguments) -> Iterator[None]:
        config.max_length = None
        try:
            yield
        finally:
            config.max_length = self.max_length

    def __call__(self, trainer: Trainer) -> dict[str, Any]:
        dataset, limit = trainer.train_dataset, self.max_length
        kept = dataset.filter(lambda ids: [len(x) <= limit for x in ids], input_columns=["input_ids"], batched=True,
                              desc=f"{self.stage}: dropping examples longer than {limit} tokens")
        counts = {"policy": "drop", "max_length": limit, "examples": len(dataset), "dropped": len(dataset) - len(kept)}
        if len(kept) == 0:
            raise StageError(f"{self.stage}: all {len(dataset)} examples are longer than max_length {limit} tokens, "
                             "so nothing is left to train on; raise max_length or set long_examples: truncate")
        if counts["dropped"]:
            logger.warning("%s: dropped %d of %d examples longer than max_length %d tokens (long_examples: "
                           "truncate cuts them instead)", self.stage, counts["dropped"], len(dataset), limit)
        trainer.train_dataset = kept
        return counts


# --------------------------------------------------------------------------------------------- the stage protocol


class Stage:
    """A kind of pipeline stage (see the module docstring for the protocol).

    Attributes:
        data_parallel: `run` runs on every rank (training); otherwise on the main process only.
        trains_on_chat: trains on chat-rendered assistant turns (the chat-template check applies to it).
        makes_model: hands on a model (the evaluation follows it by default; a later stage may start from it).
        starts_from: the stages whose model it continues from, in order of preference (else the base model).
    """

    data_parallel: bool = False
    trains_on_chat: bool = False
    makes_model: bool = False
    starts_from: tuple[str, ...] = ()

    def plan(self, name: str, section: dict[str, Any], where: PlanContext, problems: list[str]) -> StagePlan | None:
        raise NotImplementedError

    def check_recipe(self, plan: StagePlan, present: set[str], problems: list[str]) -> None:
        """Problems with what this stage needs from the recipe's other stages (none by default)."""

    def check_data(self, plan: StagePlan, pipeline: Run) -> list[str]:
        return []

    def cost(self, plan: StagePlan, pipeline: Run, costs: dict[str, StageCost]) -> StageCost | None:
        """What the stage will spend, given the earlier stages' `costs` (None: not known before it runs)."""
        return None

    def run(self, plan: StagePlan, pipeline: Run) -> Any:
        raise NotImplementedError

    def record(self, plan: StagePlan, pipeline: Run, result: Any) -> StageRecord:
        raise NotImplementedError

    def smoke(self, section: dict[str, Any]) -> dict[str, Any]:
        """The stage's section for `run --smoke` (`trl_r1.pipeline.smoke`): its work shrunk to a CPU minute."""
        raise NotImplementedError

    def smoke_problems(self, name: str, stage_dir: Path) -> list[str]:
        """What a finished smoke run of this stage failed to exercise (nothing to check by default)."""
        return []


class TrainingStage(Stage):
    """A stage that trains with a TRL trainer (`StagePlan.kind`, a `TRAINER_KINDS` entry) and hands the model on."""

    data_parallel = makes_model = True
    smoke_settings: dict[str, Any] = {}  # what `--smoke` sets: one step, small batches and lengths

    def check_recipe(self, plan, present, problems):
        if plan.args is not None and not plan.args.dataset_name:
            problems.append(f"{plan.name}: key 'dataset_name' is required")
        check_push_to_hub(plan, present, problems)

    def record(self, plan, pipeline, result):
        return hand_on(plan, result)

    def smoke(self, section):
        # epochs give way to max_steps; vLLM needs a GPU, so generation stays in transformers
        out = {k: v for k, v in section.items()
               if k not in ("num_train_epochs", "use_vllm") and not k.startswith("vllm_")}
        out.update(self.smoke_settings)
        if out.get("dataset_name"):
            out["max_samples"] = SMOKE_MAX_SAMPLES
        return out


def check_push_to_hub(plan: StagePlan, present: set[str], problems: list[str]) -> None:
    """TRL's `push_to_hub` pushes a stage's LoRA adapter naming its base by the path it was loaded from: with the
    `merge` hand-off, a stage after another that trains a model starts from that stage's merged folder, and the
    tiny model is built locally, so the pushed adapter would claim a local path nobody else has."""
    model = plan.model_args
    if not getattr(plan.config, "push_to_hub", False) or model is None or not model.use_peft:
        return
    names = list(STAGE_REGISTRY)
    earlier = [n for n in names[:names.index(plan.name)] if n in present and STAGE_REGISTRY[n].makes_model]
    local = model.tiny is not None or Path(str(model.model_name_or_path)).exists()
    if local or (earlier and model.adapter_handoff == "merge"):
        base = "the tiny model built in <run_dir>/base_model" if model.tiny is not None else \
            f"the local folder {model.model_name_or_path}" if local else f"{earlier[-1]}'s merged model, a local folder"
        problems.append(f"{plan.name}: push_to_hub would push a LoRA adapter whose base is {base}; publish the "
                        "run's model with its card instead: `trl-r1 publish RECIPE --repo-id ID` (docs/howto_publish.md)")


class SFTStage(TrainingStage):
    """Supervised fine-tuning on the stage's dataset (R1's cold start, §2.3.1)."""

    trains_on_chat = True
    args_class: type = SFTStageArguments
    # a smoke run cuts its long examples to a CPU minute rather than dropping them all
    smoke_settings = {"max_steps": 1, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1,
                      "max_length": 128, "warmup_steps": 0, "long_examples": "truncate"}

    def plan(self, name, section, where, problems):
        plan = plan_trainer_stage(name, "sft", section, where, self.args_class, problems)
        choices = self.args_class.__dataclass_fields__["long_examples"].metadata["choices"]
        if plan is not None and plan.args is not None and plan.args.long_examples not in choices:
            problems.append(f"{name}: key 'long_examples': expected one of {list(choices)}, got "
                            f"{plan.args.long_examples!r}")
        return plan

    def check_data(self, plan, pipeline):
        if plan.args.dataset_name is None:
            return []
        text_field = getattr(plan.config, "dataset_text_field", "text")  # TRL's SFTConfig: the text column's name
        problems = dataset_problems(pipeline, plan.name, lambda: self.own_dataset(plan, pipeline), (), [],
                                          named=[plan.args, plan.config],
                                          any_of=(("messages",), (text_field,), ("prompt", "completion")))
        if not problems and pipeline.tokenizer is not None and self.long_examples(plan) is not None:
            problems = short_max_length_problems(plan.name, self.own_dataset(plan, pipeline), pipeline.tokenizer,
                                                 plan.config.max_length)
        return problems

    def cost(self, plan, pipeline, costs):
        return training_cost(plan, pipeline, dataset_rows(pipeline, plan.name, plan), "")

    def own_dataset(self, plan, pipeline):
        """The stage's `dataset_name`, loaded once."""
        return pipeline.data.of(plan.name, plan.args)

    def dataset(self, plan, pipeline):
        """What the stage trains on."""
        return self.own_dataset(plan, pipeline)

    def start(self, plan, pipeline) -> ModelHandle:
        return pipeline.start_from(self.starts_from)

    def run(self, plan, pipeline):
        start = self.start(plan, pipeline)
        prepare_assistant_only_loss(plan.config, start.model_path, plan.output_dir)
        return train(plan, start, self.dataset(plan, pipeline), long_examples=self.long_examples(plan))

    def long_examples(self, plan) -> DropLongExamples | None:
        """The drop of over-long examples, unless the stage truncates them (or packs, which splits them)."""
        if plan.args.long_examples == "truncate" or plan.config.max_length is None or plan.config.packing:
            return None
        return DropLongExamples(plan.name, plan.config.max_length)


class FinalSFTStage(SFTStage):
    """SFT on the rejection-sampled set, optionally mixed with other data (R1 §2.3.3); it starts from its
    section's `init_from`, else from `starts_from`."""

    args_class = FinalSFTArguments

    def __init__(self, data_from: str, starts_from: tuple[str, ...]):
        self.data_from = data_from  # the stage whose accepted samples it trains on
        self.starts_from = starts_from

    def init_from(self, plan: StagePlan) -> tuple[str, ...]:
        return (plan.args.init_from,) if plan.args.init_from else self.starts_from

    def check_recipe(self, plan, present, problems):
        check_push_to_hub(plan, present, problems)
        if plan.args is None:
            return
        if self.data_from not in present and not plan.args.dataset_name:
            problems.append(f"{plan.name}: key 'dataset_name' is required when the recipe has no "
                            f"{self.data_from} stage")
        names = list(STAGE_REGISTRY)
        earlier = [n for n in names[:names.index(plan.name)] if STAGE_REGISTRY[n].makes_model]
        wanted = self.init_from(plan)
        unknown = [s for s in wanted if s != "base" and s not in earlier]
        if unknown:
            problems.append(f"{plan.name}: init_from {unknown[0]!r} is neither 'base' nor an earlier stage that "
                            f"trains a model ({', '.join(earlier)})")
        elif "base" not in wanted and not present & set(wanted):
            problems.append(f"{plan.name}: init_from {wanted[0]!r} names a stage the recipe does not have; use "
                            "'base' or add the stage")
        for i, entry in enumerate(plan.args.mix_datasets):
            check_mix_entry(entry, i, problems)

    def start(self, plan, pipeline):
        return pipeline.start_from(self.init_from(plan))

    def cost(self, plan, pipeline, costs):
        source = pipeline.recipe.stage(self.data_from)
        per_prompt = getattr(source.config, "max_per_prompt", None) if source is not None else None
        return final_sft_cost(plan, pipeline, costs.get(self.data_from), per_prompt)

    def dataset(self, plan, pipeline):
        accepted = pipeline.output_of(self.data_from, "dataset_path")
        own = self.own_dataset(plan, pipeline) if plan.args.dataset_name else None
        return final_sft_dataset(plan, accepted, own)


class RLStage(TrainingStage):
    """GRPO (trl_r1's R1GRPOTrainer) or PPO on the stage's prompts, scored by its rewards (R1 §2.2).

    Its `algorithm` is any trainer kind that trains on rewards (`TRAINER_KINDS.choices(rewards=True)`).
    """

    smoke_settings = {"max_steps": 1, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 1,
                      "num_generations": 4, "max_completion_length": 48, "warmup_steps": 0}

    def __init__(self, starts_from: tuple[str, ...]):
        self.starts_from = starts_from

    def plan(self, name, section, where, problems):
        kind, algorithms = section.get("algorithm", RLStageArguments.algorithm), TRAINER_KINDS.choices(rewards=True)
        if kind not in algorithms:
            problems.append(f"{name}: key 'algorithm': expected one of {list(algorithms)}, got {kind!r}")
            return None
        return plan_trainer_stage(name, kind, section, where, RLStageArguments, problems)

    def prompts(self, plan, pipeline):
        return pipeline.data.of(plan.name, plan.args)

    def rewards(self, plan, pipeline) -> list[Any]:
        return pipeline.adapted(plan.args.rewards)

    def cost(self, plan, pipeline, costs):
        return rl_cost(plan, pipeline)

    def check_data(self, plan, pipeline):
        return dataset_problems(pipeline, plan.name, lambda: self.prompts(plan, pipeline), ("prompt",),
                                      self.rewards(plan, pipeline), named=[plan.args])

    def run(self, plan, pipeline):
        from ..rewards import get_reward_funcs

        return train(plan, pipeline.start_from(self.starts_from), self.prompts(plan, pipeline),
                     reward_funcs=get_reward_funcs(self.rewards(plan, pipeline)))

    def smoke_problems(self, name, stage_dir):
        # With random weights no completion ends, so `mask_truncated_completions` masks every token and the step
        # trains on nothing while reporting success: this is the check that catches it.
        state = stage_dir / "trainer_state.json"
        if not state.is_file():
            return []
        logs = [entry for entry in json.loads(state.read_text())["log_history"] if "completions/clipped_ratio" in entry]
        if not logs:
            return [f"{name}: no completion statistics were logged"]
        if all(entry["completions/clipped_ratio"] >= 1.0 for entry in logs):
            return [f"{name}: every completion hit max_completion_length, so no token was trained on "
                    "(mask_truncated_completions masks them all)"]
        return []


class RejectionSamplingStage(Stage):
    """Sample from the latest RL (or cold-start) model, keep verified readable traces (R1 §2.3.3).

    Runs on the main process: the records are written once, in prompt order, and resume after a kill.
    """

    smoke_settings = {"num_samples": 2, "max_new_tokens": 48, "batch_size": 4, "max_prompts": 4}

    def __init__(self, starts_from: tuple[str, ...], rewards_from: str):
        self.starts_from, self.rewards_from = starts_from, rewards_from

    def plan(self, name, section, where, problems):
        args_cls, config_cls = RejectionSamplingStageArguments, rejection_sampling_config()
        if not plan_section_keys(name, section, [args_cls, config_cls], problems):
            return None
        args = build(name, args_cls, pick(section, args_cls), problems)
        values = {k: v for k, v in section.items() if k not in fields_of(args_cls)}
        filled = {"output_dir": str(where.output_dir), "seed": run_seed({})}  # `StagePlan.filled`
        values["output_dir"] = filled["output_dir"]
        values["model_name_or_path"] = "<rl checkpoint>"  # the pipeline sets the real path when the stage runs
        values.setdefault("seed", run_seed(where.training))
        if "rewards" in values:
            reward_weights(values["rewards"], name, problems)
        config = build(name, config_cls, values, problems)
        return StagePlan(name, "rejection_sampling", args, config, None, where.output_dir, section=section,
                         filled=filled)

    def check_recipe(self, plan, present, problems):
        if not present & set(self.starts_from):
            problems.append(f"{plan.name}: needs an {' or '.join(self.starts_from)} stage to sample from")
        if plan.config is not None and not plan.config.dataset_name and self.rewards_from not in present:
            problems.append(f"{plan.name}: key 'dataset_name' is required when the recipe has no "
                            f"{self.rewards_from} stage")

    def rewards(self, plan, pipeline) -> list[Any]:
        source = pipeline.recipe.stage(self.rewards_from)
        default = pipeline.adapted(source.args.rewards) if source is not None else plan.config.rewards
        return plan.section.get("rewards", default)

    def prompts(self, plan, pipeline):
        cfg, args = plan.config, plan.args
        if cfg.dataset_name is None:
            source = pipeline.recipe.stage(self.rewards_from)
            return STAGE_REGISTRY[source.name].prompts(source, pipeline)
        return pipeline.data.load(plan.name, cfg.dataset_name, split=cfg.dataset_split, config=args.dataset_config,
                                  kwargs=args.dataset_kwargs)

    def check_data(self, plan, pipeline):
        if plan.config.dataset_name is None:
            return []
        return dataset_problems(pipeline, plan.name, lambda: self.prompts(plan, pipeline), (plan.config.prompt_column,),
                                      self.rewards(plan, pipeline), named=[plan.config])

    def cost(self, plan, pipeline, costs):
        source = pipeline.recipe.stage(self.rewards_from) if plan.config.dataset_name is None else plan
        rows = dataset_rows(pipeline, source.name, source) if source is not None else None
        return rejection_sampling_cost(plan, pipeline, rows)

    def sampling_config(self, plan: StagePlan, pipeline: Run) -> RejectionSamplingConfig:
        """The sampler's config as the plan resolved it (`StagePlan.generation`, `load_in_4bit`,
        `generation_batch`), on the model it samples from."""
        start = pipeline.generator_from(self.starts_from)
        logger.info("%s: %d prompts per generate call (%s)", plan.name, plan.generation_batch, plan.generation_batch_why)
        return replace(
            plan.config, model_name_or_path=start.model_path, adapter_path=start.adapter_path,
            output_dir=str(plan.output_dir), backend=plan.generation, load_in_4bit=plan.load_in_4bit,
            batch_size=plan.generation_batch, rewards=self.rewards(plan, pipeline),
            think_prefilled=plan.section.get("think_prefilled", True if pipeline.prefills_think else
                                             plan.config.think_prefilled),
        )

    def run(self, plan, pipeline):
        from ..data.rejection_sampling import rejection_sample

        config = self.sampling_config(plan, pipeline)
        began = time.perf_counter()
        return rejection_sample(config, dataset=self.prompts(plan, pipeline)), time.perf_counter() - began

    def record(self, plan, pipeline, result):
        result, seconds = result
        outputs = {"dataset_path": str(Path(result.output_dir) / "sft.jsonl"), "num_accepted": len(result.dataset)}
        if len(result.dataset) == 0:
            raise StageError(f"{plan.name}: no sample was accepted (stats: {result.stats}); the final SFT would have "
                             "nothing to train on. Train the RL stage longer, sample more (num_samples), or lower "
                             "min_reward")
        return StageRecord(plan.name, plan.fingerprint, "done", outputs,
                           {"rejection_sampling": result.stats, "seed": plan.config.seed},
                           seconds=seconds)

    def smoke(self, section):
        # the sampler's backend is left to choose: transformers on a CPU
        return {**{k: v for k, v in section.items() if k != "backend"}, **self.smoke_settings}

    def smoke_problems(self, name, stage_dir):
        record = read_record(stage_dir)
        return [f"{name}: no sample was accepted"] if record and not record.outputs.get("num_accepted") else []


def final_sft_dataset(plan: StagePlan, accepted_path: str | None, own: Dataset | None = None) -> Dataset:
    """The accepted samples (their `messages`), mixed with the recipe's `mix_datasets` and/or its own dataset."""
    import datasets
    from trl import DatasetMixtureConfig, get_dataset

    parts = []
    if accepted_path:
        parts.append(datasets.load_dataset("json", data_files=accepted_path, split="train"))
    if own is not None:
        parts.append(own)
    if plan.args.mix_datasets:
        parts.append(get_dataset(DatasetMixtureConfig(datasets=[dict(d) for d in plan.args.mix_datasets]))["train"])
    parts = [p.select_columns(["messages"]) for p in parts]
    return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts).shuffle(seed=plan.config.seed)


# --------------------------------------------------------------------------------------------- the registry

STAGE_REGISTRY.add("cold_start", SFTStage())
STAGE_REGISTRY.add("rl", RLStage(starts_from=("cold_start",)))
STAGE_REGISTRY.add("rejection_sampling", RejectionSamplingStage(starts_from=("rl", "cold_start"), rewards_from="rl"))
STAGE_REGISTRY.add("final_sft", FinalSFTStage(data_from="rejection_sampling", starts_from=("rl",)))
