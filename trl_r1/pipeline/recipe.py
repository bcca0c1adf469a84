"""Recipe YAMLs for `trl-r1 run`: the schema, and validation before any work is done.

A recipe has one section per stage, and each section maps one-to-one onto TRL's configs, so every TRL
option can be set where it belongs::

    run_dir: runs/qwen2.5-1.5b-math       # every stage writes under <run_dir>/<stage>/
    model: {...}                          # R1ModelConfig = trl.ModelConfig (+ tiny, adapter_handoff), QLoRA defaults
    training: {...}                       # defaults for every trainer config (SFTConfig / GRPOConfig fields)
    cold_start: {...}                     # SFTStageArguments + trl.SFTConfig + model overrides
    rl: {...}                             # RLStageArguments + R1GRPOConfig (or R1PPOConfig) + model overrides
    rejection_sampling: {...}             # RejectionSamplingStageArguments + RejectionSamplingConfig
    final_sft: {...}                      # FinalSFTArguments + trl.SFTConfig + model overrides
    evaluation: {...}                     # EvaluationConfig: held-out accuracy after each training stage

The stage sections are the registered stages (`trl_r1.pipeline.stages.STAGE_REGISTRY`); each stage plans its
own section (`Stage.plan`, with the helpers here) and says what it needs from the others (`check_recipe`). Any
stage may be left out (R1-Zero is `rl` alone). Values go through `trl_r1.config`, the one config dialect.
Validation collects every problem at once and names the stage and the key: unknown keys (with close-match
suggestions), wrong types, incompatible options, and keys the pipeline sets itself. Dataset columns are checked
in the preflight (`Stage.check_data`), as that loads data.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainingArguments
from trl import ModelConfig

from ..config import ConfigError, build, check_keys, checkpointing_key, fields_of, pick, suggest
from ..config import read_yaml as _read_yaml
from ..data.generation import vllm_fallback_field
from ..registry import Registry, resolve_import_path
from ..rewards.aliases import REWARD_ALIASES
from .fingerprint import changed_keys, fingerprint_stages

if TYPE_CHECKING:
    from ..data.rejection_sampling import RejectionSamplingConfig

    # a stage's parsed config: a TRL trainer's (SFTConfig, R1GRPOConfig, R1PPOConfig) or the sampler's
    SectionConfig = TrainingArguments | RejectionSamplingConfig
from .fingerprint import digest as _digest

PIPELINE_SET_KEYS = {"output_dir", "model_name_or_path", "adapter_path"}  # stage sections may not set these
QLORA_TARGETS = ["all-linear"]


class RecipeError(ConfigError):
    """Every problem found in a recipe, each naming its stage (section) and key."""

    def __init__(self, problems: list[str], title: str = "invalid recipe"):
        super().__init__(problems, title)


#: The stage kinds, in pipeline order: the recipe's stage sections. `stages` fills it (the package imports it), so
#: that parsing a recipe never imports the stages built on that parsing; its entries are `stages.Stage`s.
STAGE_REGISTRY: Registry = Registry("stage", signature="Stage: plan, check_data, run, record")


def sections() -> tuple[str, ...]:
    return ("run_dir", "model", "training", *STAGE_REGISTRY.choices(), "evaluation")


def model_stages() -> list[str]:
    """The registered stages that train a model (evaluated after, and a later stage may start from it)."""
    return [name for name in STAGE_REGISTRY if STAGE_REGISTRY[name].makes_model]


@dataclass(frozen=True)
class TrainerKind:
    """A training stage kind's TRL config and trainer classes, named by import path: TRL's trainers load only
    when a stage is planned or trained."""

    config_path: str
    trainer_path: str

    @property
    def config(self) -> type:
        return resolve_import_path(self.config_path)

    @property
    def trainer(self) -> type:
        return resolve_import_path(self.trainer_path)


# `StagePlan.kind` of a training stage -> its classes; `rewards=True` kinds train on rewards (an RL `algorithm`).
TRAINER_KINDS: Registry[TrainerKind] = Registry("trainer kind", signature="TrainerKind(config, trainer)")
TRAINER_KINDS.add("sft", TrainerKind("trl:SFTConfig", "trl:SFTTrainer"), rewards=False)
TRAINER_KINDS.add("grpo", TrainerKind("trl_r1.trainers:R1GRPOConfig", "trl_r1.trainers:R1GRPOTrainer"), rewards=True)
TRAINER_KINDS.add("ppo", TrainerKind("trl_r1.trainers:R1PPOConfig", "trl_r1.trainers:R1PPOTrainer"), rewards=True)


@dataclass
class R1ModelConfig(ModelConfig):
    """`trl.ModelConfig` with QLoRA defaults (the single-GPU path) and two pipeline fields.

    QLoRA (Dettmers et al., 2023): 4-bit NF4 base with double quantisation and bf16 compute, LoRA on every
    linear layer. Set `load_in_4bit: false` (LoRA) or also `use_peft: false` (full fine-tuning) to opt out.
    """

    dtype: str | None = field(default="bfloat16", metadata={
        "help": "Weights / 4-bit compute dtype (trl.ModelConfig, default here bfloat16 as in QLoRA).",
        "choices": ["auto", "bfloat16", "float16", "float32"]})
    load_in_4bit: bool = field(default=True, metadata={"help": "QLoRA: 4-bit base weights (default True)."})
    bnb_4bit_quant_type: str = field(default="nf4", metadata={
        "help": "4-bit type: nf4 (QLoRA's NormalFloat, default) or fp4.", "choices": ["fp4", "nf4"]})
    use_bnb_nested_quant: bool = field(default=True, metadata={
        "help": "QLoRA double quantisation of the quantisation constants (~0.4 bit/param saved, default True)."})
    use_peft: bool = field(default=True, metadata={"help": "Train LoRA adapters (default True)."})
    lora_target_modules: list[str] | str | None = field(default_factory=lambda: list(QLORA_TARGETS), metadata={
        "help": "LoRA targets: 'all-linear' (the default: every linear layer; QLoRA paper: adapters on every layer "
        "matter) or a list of module names."})
    tiny: dict[str, Any] | None = field(default=None, metadata={
        "help": "Build the tiny offline model (trl_r1.toy.build_tiny_model keyword arguments) into "
        "<run_dir>/base_model and use it as model_name_or_path. For demos and tests."})
    adapter_handoff: str = field(default="merge", metadata={
        "help": "How LoRA adapters pass between stages: 'merge' (merge into the base in `dtype`, the next stage "
        "quantises that afresh and trains new adapters; default) or 'continue' (keep training the same adapter "
        "on the 4-bit base).", "choices": ["merge", "continue"]})


@dataclass
class DataArguments:
    """Where a stage's data comes from (field names follow trl.ScriptArguments)."""

    dataset_name: str | None = field(default=None, metadata={
        "help": "Hub dataset id, local file (.json/.jsonl/.parquet/.csv) or directory, or a Python builder "
        "'module:function' called with `dataset_kwargs` (e.g. trl_r1.toy.arithmetic:arithmetic_dataset)."})
    dataset_config: str | None = field(default=None, metadata={"help": "Dataset configuration name."})
    dataset_train_split: str = field(default="train", metadata={"help": "Split to train on (default 'train')."})
    dataset_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "Keyword arguments for a 'module:function' builder, or extra datasets.load_dataset arguments."})
    max_samples: int | None = field(default=None, metadata={"help": "Keep only the first N rows (None: all)."})
    prompt_column: str = field(default="prompt", metadata={
        "help": "Column holding the prompt; a text column other than 'prompt' becomes a one-turn conversational "
        "'prompt' (e.g. 'problem' for MATH-500)."})
    solution_column: str = field(default="solution", metadata={
        "help": "Column holding the gold answer, renamed to 'solution' (what the math reward reads)."})
    allow_missing_answers: bool = field(default=False, metadata={
        "help": "Keep rows whose gold answer (or another column a reward reads) is empty: the rewards skip them. "
        "By default any such row fails the preflight, naming the file and the first row."})

    def __post_init__(self):
        if self.max_samples is not None and self.max_samples < 1:
            raise ValueError(f"max_samples must be >= 1 (leave it out to keep every row), got {self.max_samples}")


@dataclass
class SFTStageArguments(DataArguments):
    """Cold-start SFT (R1 §2.3.1): a small long-CoT set teaches the format before RL."""

    long_examples: str = field(default="drop", metadata={
        "help": "What happens to an example longer than `max_length` tokens: 'drop' it (default; the stage's "
        "record counts the dropped ones, and the stage fails if none is left) or 'truncate' it as TRL does "
        "(`truncation_mode`). A cut reasoning trace teaches the model to stop before its answer.",
        "choices": ["drop", "truncate"]})


@dataclass
class RLStageArguments(DataArguments):
    """The RL stage: algorithm and rewards (R1 §2.2.2: accuracy + format, combined with equal weight)."""

    algorithm: str = field(default="grpo", metadata={
        "help": "'grpo' (trl_r1.trainers.R1GRPOTrainer, default) or 'ppo' (actor-critic with GAE).",
        "choices": list(TRAINER_KINDS.choices(rewards=True))})
    rewards: list[Any] = field(default_factory=lambda: ["format", "math"], metadata={
        "help": "Rewards by name (trl_r1.rewards registry or dotted path), or {name, weight, **options}; "
        "weights become GRPOConfig.reward_weights (default 1.0 each)."})


@dataclass
class RejectionSamplingStageArguments:
    """Data keys of the rejection-sampling stage (the sampler's own options are RejectionSamplingConfig's)."""

    dataset_config: str | None = field(default=None, metadata={"help": "Dataset configuration name."})
    dataset_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "Keyword arguments for a 'module:function' prompt builder. Without `dataset_name`, the RL "
        "stage's prompts are used (R1 §2.3.3 samples from the RL checkpoint on reasoning prompts)."})


@dataclass
class FinalSFTArguments(SFTStageArguments):
    """SFT on the rejection-sampled set (R1 §2.3.3), optionally mixed with other data."""

    init_from: str | None = field(default=None, metadata={
        "help": "Which model the final SFT starts from: an earlier stage that trains one ('rl', the RL checkpoint, "
        "by default: the stage's registered `starts_from`; or 'cold_start'), or 'base' (the original base model, "
        "as R1 fine-tunes DeepSeek-V3-Base on the 800k samples)."})
    mix_datasets: list[dict[str, Any]] = field(default_factory=list, metadata={
        "help": "Extra SFT datasets mixed with the accepted samples: trl DatasetConfig entries "
        "(path, name, data_dir, data_files, split, columns, fraction); each needs a 'messages' column."})


@dataclass
class EvaluationConfig:
    """Held-out evaluation after each training stage: sampled answers scored by the listed rewards."""

    dataset_name: str | None = field(default=None, metadata={
        "help": "Held-out prompts (same forms as DataArguments.dataset_name); needs a `prompt` column."})
    dataset_config: str | None = field(default=None, metadata={"help": "Dataset configuration name."})
    dataset_split: str | None = field(default=None, metadata={
        "help": "Split to evaluate on (default 'test'; for a single local file, its one split 'train')."})
    dataset_kwargs: dict[str, Any] = field(default_factory=dict, metadata={"help": "Builder keyword arguments."})
    prompt_column: str = field(default="prompt", metadata={"help": "As in DataArguments."})
    solution_column: str = field(default="solution", metadata={"help": "As in DataArguments."})
    allow_missing_answers: bool = field(default=False, metadata={"help": "As in DataArguments."})
    num_prompts: int | None = field(default=200, metadata={"help": "Evaluate the first N prompts (default 200)."})
    num_samples: int = field(default=4, metadata={
        "help": "Samples per prompt; the reward means over them estimate pass@1 (R1 §3.1 uses k samples)."})
    seed: int | None = field(default=None, metadata={
        "help": "Sampling seed; prompt batch b uses seed + its first index (default: the run's seed, `run_seed`)."})
    temperature: float = field(default=0.6, metadata={
        "help": "Sampling temperature (R1 §3.1: 0.6; 0 = greedy decoding with num_samples 1)."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling threshold (R1 §3.1: 0.95)."})
    max_new_tokens: int = field(default=512, metadata={"help": "Generation budget per sample (default 512)."})
    batch_size: int = field(default=16, metadata={"help": "Prompts per generate call (default 16)."})
    backend: str = field(default="auto", metadata={
        "help": "Generation backend: auto (vLLM when it can serve the model here, else transformers), vllm or "
        "transformers.", "choices": ["auto", "vllm", "transformers"]})
    vllm_fallback: str = vllm_fallback_field("backend: vllm")
    vllm_gpu_memory_utilization: float | None = field(default=None, metadata={
        "help": "vllm backend: share of the GPU the engine takes (None: vLLM's 0.9)."})
    vllm_max_model_length: int | None = field(default=None, metadata={
        "help": "vllm backend: the longest prompt + completion it serves (None: the model's whole context)."})
    rewards: list[Any] | None = field(default=None, metadata={
        "help": "Rewards reported as metrics (default: the RL stage's rewards, else format + math)."})
    stages: list[str] = field(default_factory=lambda: ["base", *model_stages()], metadata={
        "help": "After which stages to evaluate ('base' = the model before training; default: base and every "
        "stage that trains a model)."})

    def __post_init__(self):
        if self.dataset_split is None:
            from ..data.loading import held_out_split

            self.dataset_split = held_out_split(self.dataset_name)
        for key in ("num_prompts", "num_samples", "max_new_tokens", "batch_size"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ValueError(f"{key} must be >= 1, got {value}")


@dataclass
class StagePlan:
    """One resolved stage: its argument objects, where it writes, and a fingerprint of everything it depends on."""

    name: str
    kind: str  # sft | grpo | ppo | rejection_sampling
    args: SFTStageArguments | RLStageArguments | RejectionSamplingStageArguments | None  # None: its section failed
    config: SectionConfig | None
    model_args: R1ModelConfig | None
    output_dir: Path
    fingerprint: str = ""
    section: dict[str, Any] = field(default_factory=dict)  # the user's keys, for the plan printout
    settings: dict[str, Any] = field(default_factory=dict)  # what its fingerprint covers, by section (`fingerprint_stages`)
    # what the pipeline gives a key the recipe leaves out (QLoRA's optimizer, checkpointing on, the rewards' weights,
    # a sampler's seed): a key written at that value changes nothing, one written at its class default does
    filled: dict[str, Any] = field(default_factory=dict)
    # decided once for the card planned for (`preflight.resolve_stage`): the dry run prints, the preflight checks,
    # the memory model sizes and the run executes these, none of them deciding again
    generation: str | None = None  # vllm | transformers | openai; None: the stage does not generate
    generation_why: str = ""  # why that backend (a fallback names what vLLM cannot do)
    load_in_4bit: bool = False  # the model it loads (trains, or samples from) is a 4-bit base
    evaluation_4bit: bool = False  # its held-out evaluation loads its adapter on a 4-bit base
    generation_batch: int | None = None  # rejection sampling: prompts per generate call (`preflight.size_generation`)
    generation_batch_why: str = ""  # how that batch follows from the card, the model and the lengths

    @property
    def seed(self) -> int | None:
        return getattr(self.config, "seed", None)


@dataclass
class Recipe:
    """A validated recipe: the model, the stages in pipeline order, and the evaluation settings."""

    run_dir: Path
    model: R1ModelConfig
    stages: list[StagePlan]
    evaluation: EvaluationConfig | None
    source: Path | None = None
    shared: dict[str, dict[str, Any]] = field(default_factory=dict)  # the user's model/training/evaluation keys
    evaluation_generation: tuple[str, str] | None = None  # (backend, why), decided once (`preflight.resolve_plan`)
    evaluation_batch: tuple[int, str] | None = None  # (prompts per generate call, why) (`preflight.size_generation`)

    def stage(self, name: str) -> StagePlan | None:
        return next((s for s in self.stages if s.name == name), None)


# --------------------------------------------------------------------------------------------- loading


# section names a TRL or open-r1 user reaches for (their commands), with what trl-r1 calls them
SECTION_ALIASES = {"sft": "'cold_start' (or 'final_sft')", "grpo": "'rl' (algorithm: grpo)",
                   "ppo": "'rl' (algorithm: ppo)", "eval": "'evaluation'"}


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A recipe file as a mapping (a clear error for a missing file, bad YAML or a non-mapping)."""
    return _read_yaml(path, RecipeError)


def load_recipe(source: str | Path | dict[str, Any], *, single_stage: bool = False,
                check_hardware: bool = True) -> Recipe:
    """Parse and validate a pipeline recipe (a YAML path or a mapping); raises RecipeError listing all problems.

    With `single_stage` (`trl-r1 sft|grpo|ppo`), the one stage writes into `run_dir` itself. With
    `check_hardware=False` (`--dry-run`), a GPU recipe validates on a CPU-only machine: TRL's configs refuse
    bf16 without a GPU, so they are built as if `use_cpu` were set (the flag is restored afterwards).

    >>> recipe = load_recipe({"run_dir": "/tmp/r", "model": {"model_name_or_path": "m"}, "cold_start": {
    ...     "dataset_name": "d", "learning_rate": "2e-5", "use_cpu": True}})
    >>> [s.name for s in recipe.stages], recipe.stages[0].config.learning_rate, recipe.model.load_in_4bit
    (['cold_start'], 2e-05, True)
    >>> load_recipe({"run_dir": "/tmp/r", "model": {"model_name_or_path": "m"}, "rl": {"learning_rat": 1e-6}})
    Traceback (most recent call last):
    ...
    trl_r1.pipeline.recipe.RecipeError: invalid recipe:
      - rl: unknown key 'learning_rat'; did you mean 'learning_rate'?
    """
    data = dict(read_yaml(source)) if not isinstance(source, dict) else dict(source)
    path = Path(source) if not isinstance(source, dict) else None
    registry = STAGE_REGISTRY
    stage_names, known_sections = registry.choices(), sections()
    problems: list[str] = []
    flat_keys = [key for key in data if key not in known_sections and not isinstance(data[key], dict)]
    accelerate_keys = [key for key in ACCELERATE_KEYS if key in data]
    if accelerate_keys:
        raise RecipeError([f"{path or 'this YAML'} is an accelerate config ({', '.join(accelerate_keys)}), not a "
                           "recipe: give it to `accelerate launch --config_file FILE -m trl_r1.cli run RECIPE`, or "
                           "run the recipe on N GPUs with `trl-r1 run RECIPE --num_processes N`"])
    if not single_stage and not any(name in data for name in stage_names) and len(flat_keys) > len(data) / 2:
        raise RecipeError([f"{path or 'this YAML'} is a single-stage config (flat keys such as "
                           f"{', '.join(map(repr, flat_keys[:3]))} at the top level), not a pipeline recipe: run it "
                           "with `trl-r1 sft|grpo|ppo --config FILE`, or put its keys under the sections model:, "
                           "training: and a stage (cold_start:, rl:, ...); see docs/recipes.md"])
    for key in data:
        if key not in known_sections:
            hint = suggest(key, known_sections) or (f"; trl-r1 calls the {key} stage {SECTION_ALIASES[key]}"
                                                    if key in SECTION_ALIASES else "")
            if not hint and not isinstance(data[key], dict):  # `--set learning_rate=1e-6`, or a key unindented
                hint = (f"; a key goes under a section: `training:` for every stage or a stage's own (with --set: "
                        f"--set training.{key}=...)")
            problems.append(f"unknown section {key!r}{hint}")
    if not isinstance(data.get("run_dir"), str):
        problems.append("output_dir: required, a directory path (string)" if single_stage
                        else "run_dir: required, a directory path (string)")
    if not any(name in data for name in stage_names):
        problems.append(f"no stage section: a recipe needs at least one of {list(stage_names)}")
    for name in ("model", "training", *stage_names, "evaluation"):
        if name in data and not isinstance(data[name], dict):
            problems.append(f"{name}: must be a mapping of keys, got {type(data[name]).__name__}")
            data.pop(name)
    if problems:
        raise RecipeError(problems)

    model_section = data.get("model", {})
    model = build("model", R1ModelConfig, pick(model_section, R1ModelConfig), problems)
    check_keys("model", model_section, [R1ModelConfig], problems)
    if model is not None:
        check_model(model, problems)
    training = data.get("training", {})
    check_keys("training", training, [TRAINER_KINDS[kind].config for kind in TRAINER_KINDS], problems)
    run_root = Path(data["run_dir"])
    stages: list[StagePlan] = []
    for name in stage_names:
        if name in data:
            where = PlanContext(training, model_section, run_root if single_stage else run_root / name,
                                check_hardware)
            plan = registry[name].plan(name, data[name], where, problems)
            if plan is not None:
                stages.append(plan)
    evaluation = None
    if "evaluation" in data:
        check_keys("evaluation", data["evaluation"], [EvaluationConfig], problems)
        evaluation = build("evaluation", EvaluationConfig, pick(data["evaluation"], EvaluationConfig), problems)
        if evaluation is not None:
            if evaluation.seed is None:
                evaluation.seed = run_seed(training)
            if evaluation.rewards is not None:
                reward_weights(evaluation.rewards, "evaluation", problems)
            known = {"base", *stage_names}
            for stage in evaluation.stages:
                if stage not in known:
                    problems.append(f"evaluation: stages entry {stage!r} is not a stage{suggest(stage, known)}")
    # a section that failed to plan is still present: its own error is the one mistake (no cascade of
    # "the recipe has no rl stage" from the stages that need it)
    present = {name for name in stage_names if name in data}
    for plan in stages:
        registry[plan.name].check_recipe(plan, present, problems)
    if problems:
        raise RecipeError(shared_once(problems, training, data, stage_names))
    fingerprint_stages(stages, model_section, training, model)
    shared = {name: data[name] for name in ("model", "training", "evaluation") if name in data}
    return Recipe(run_dir=run_root, model=model, stages=stages, evaluation=evaluation, source=path, shared=shared)


def run_seed(training: dict[str, Any]) -> int:
    """The run's seed: the `training` section's, else TrainingArguments' default (42). Evaluation and rejection
    sampling follow it unless their own section sets one, so one `seed` reproduces the whole run."""
    return training.get("seed", TrainingArguments.seed)


ACCELERATE_KEYS = ("compute_environment", "distributed_type", "deepspeed_config", "fsdp_config")  # `accelerate config`'s


def shared_once(problems: list[str], training: dict[str, Any], data: dict[str, Any],
                stage_names: Iterable[str]) -> list[str]:
    """A mistake in the `training` section fails every stage that inherits it: report it once, for `training`
    (a stage's problem is the section's when it names a training key, or its text value, that the stage does
    not set itself)."""
    out: list[str] = []
    for problem in problems:
        stage, _, rest = problem.partition(": ")
        if stage in stage_names:
            inherited = [key for key, value in training.items() if key not in data.get(stage, {})
                         and (f"key {key!r}" in rest or "key '" not in rest and isinstance(value, str)
                              and (rest.startswith(f"{value} ") or f"{value!r}" in rest))]
            if inherited:
                problem = f"training: {rest}" if rest.startswith("key ") else f"training: key {inherited[0]!r}: {rest}"
        if problem not in out:
            out.append(problem)
    return same_text_once(out, {"model", "training", *stage_names})


def same_text_once(problems: list[str], sections: set[str]) -> list[str]:
    """'section: text' problems with the same text (a shared section's value that every stage fails on, such as
    fp16 and bf16 both set) as one line naming every section, in their first order."""
    names: dict[str, list[str]] = {}
    for problem in problems:
        section, _, text = problem.partition(": ")
        names.setdefault(text if section in sections else problem, []).append(section)
    return [f"{', '.join(found)}: {text}" if found[0] in sections else text for text, found in names.items()]


def flat_to_recipe(flat: dict[str, Any], stage: str) -> dict[str, Any]:
    """A TRL-style flat YAML (one namespace, as `trl sft --config`) as a one-stage recipe.

    Model keys go to `model:`, `output_dir` becomes the run directory, everything else to the stage.

    >>> flat_to_recipe({"model_name_or_path": "m", "lora_r": 8, "output_dir": "out", "max_steps": 3}, "cold_start")
    {'run_dir': 'out', 'model': {'model_name_or_path': 'm', 'lora_r': 8}, 'cold_start': {'max_steps': 3}}
    """
    sections_found = [key for key in flat if key in sections() and key != "run_dir" and isinstance(flat[key], dict)]
    if sections_found or "run_dir" in flat:
        found = ", ".join(map(repr, sections_found or ["run_dir"]))
        raise RecipeError([f"--config: this is a pipeline recipe (sections {found}), not a flat single-stage "
                           "config: run it with `trl-r1 run FILE` (`--from-stage STAGE` redoes one stage and the "
                           "later ones), or give this command a flat YAML (docs/quickstart.md, One stage alone)"])
    model_keys = {f.name for f in dataclasses.fields(R1ModelConfig)}
    flat = dict(flat)
    run_dir = flat.pop("output_dir", None)
    model = {k: flat.pop(k) for k in list(flat) if k in model_keys}
    return {"run_dir": run_dir, "model": model, stage: flat}


# --------------------------------------------------------------------------------------------- stage planning


@dataclass(frozen=True)
class PlanContext:
    """What a stage's `plan` gets besides its own section: the shared sections and where it writes."""

    training: dict[str, Any]
    model_section: dict[str, Any]
    output_dir: Path
    check_hardware: bool = True


def plan_section_keys(name: str, section: dict[str, Any], classes: list[type], problems: list[str]) -> bool:
    """Check a stage section's keys against the dataclasses it may set; False when there were problems."""
    count = len(problems)
    check_keys(name, section, classes, problems)
    for key in sorted(PIPELINE_SET_KEYS & set(section)):
        problems.append(f"{name}: key {key!r} is set by the pipeline (stage outputs live in <run_dir>/{name})")
    return len(problems) == count


def plan_trainer_stage(name: str, kind: str, section: dict[str, Any], where: PlanContext, args_cls: type,
                       problems: list[str]) -> StagePlan | None:
    """A training stage's plan: its arguments, its TRL config (the `kind`'s: recipe `training` defaults, QLoRA
    defaults, the section; reward weights for a kind that trains on rewards) and its model arguments (recipe
    `model`, overridden by the section)."""
    config_cls = TRAINER_KINDS[kind].config
    if not plan_section_keys(name, section, [args_cls, config_cls, R1ModelConfig], problems):
        return None
    args = build(name, args_cls, pick(section, args_cls), problems)
    # a mistake in the model section is its one error (`model: ...`), not one more per stage that inherits it
    own_model_values = pick(section, R1ModelConfig, exclude=fields_of(config_cls))
    model_values = {**pick(where.model_section, R1ModelConfig), **own_model_values}
    model_problems: list[str] = []
    model_args = build(name, R1ModelConfig, model_values, model_problems)
    problems += [p for p in model_problems if "model" + p[len(name):] not in problems
                 or any(f"key {key!r}" in p for key in own_model_values)]
    trainer_values = {k: v for k, v in where.training.items() if k in fields_of(config_cls)}
    trainer_values.update(pick(section, config_cls, exclude=fields_of(args_cls)))
    filled: dict[str, Any] = {}  # what the pipeline gives a key the recipe leaves out (`StagePlan.filled`)
    trainer_values["output_dir"] = filled["output_dir"] = str(where.output_dir)
    if model_args is not None:
        check_model(model_args, problems, stage=name, own_keys=own_model_values)
        # on by default, set under transformers 5's new name (the old one, an alias, is a FutureWarning)
        checkpointing = checkpointing_key(config_cls)
        trainer_values.setdefault(checkpointing, trainer_values.pop("gradient_checkpointing", True))
        filled[checkpointing] = filled["gradient_checkpointing"] = True
        if model_args.load_in_4bit or model_args.load_in_8bit:
            trainer_values.setdefault("optim", filled.setdefault("optim", "paged_adamw_8bit"))
    if TRAINER_KINDS.meta(kind)["rewards"] and args is not None:
        weights = reward_weights(args.rewards, name, problems)
        if weights is not None:
            if "reward_weights" in section:
                problems.append(f"{name}: set reward weights either in `rewards` entries or in `reward_weights`, "
                                "not both")
            else:
                trainer_values["reward_weights"] = filled["reward_weights"] = weights
    config = build(name, config_cls, trainer_values, problems, check_hardware=where.check_hardware)
    given = trainer_values.get("reward_weights")
    if config is not None and args is not None and isinstance(given, list) and isinstance(args.rewards, list) \
            and len(given) != len(args.rewards):  # TRL raises at trainer init, after every earlier stage ran
        origin = name if "reward_weights" in section else "training"
        weights = f"{len(given)} weight{'s' * (len(given) != 1)}"
        problems.append(f"{origin}: key 'reward_weights': {weights} for the {len(args.rewards)} rewards of {name} "
                        f"({reward_names(args.rewards)}); give one weight per reward, or set each in its `rewards` "
                        "entry ({name: math, weight: 1.0})")
    return StagePlan(name, kind, args, config, model_args, where.output_dir, section=section, filled=filled)


def reward_weights(rewards: Any, stage: str, problems: list[str]) -> list[float] | None:
    """Resolve the reward list now (unknown names fail before any work); return the weights if any were set."""
    from ..rewards import REWARD_REGISTRY, get_reward_funcs

    if not isinstance(rewards, list) or not rewards:
        problems.append(f"{stage}: key 'rewards' must be a non-empty list of names or {{name, weight}} mappings")
        return None
    foreign = [f"{stage}: key 'rewards': {name!r} is {REWARD_ALIASES[name].why}" for name in reward_names(rewards)
               if name in REWARD_ALIASES and name not in REWARD_REGISTRY]
    if foreign:
        problems += foreign
        return None
    try:
        get_reward_funcs(rewards)
    except (ValueError, TypeError) as exc:
        problems.append(f"{stage}: key 'rewards': {exc}")
        return None
    repeated = [entry for i, entry in enumerate(rewards) if entry in rewards[:i]]
    if repeated:  # TRL sums every listed function: one listed twice silently doubles its weight
        problems.append(f"{stage}: key 'rewards': {repeated[0]!r} is listed twice; list each reward once and give "
                        "it a weight ({name: math, weight: 2.0}) to count it more")
        return None
    weights = [entry.get("weight") if isinstance(entry, dict) else None for entry in rewards]
    if all(w is None for w in weights):
        return None
    try:
        return [1.0 if w is None else float(w) for w in weights]
    except (TypeError, ValueError):
        problems.append(f"{stage}: key 'rewards': every weight must be a number, got {weights}")
        return None


def reward_names(rewards: list[Any]) -> list[str]:
    """The names of a `rewards` list's entries (a name, or a {name, ...} mapping)."""
    return [str(entry.get("name") if isinstance(entry, dict) else entry) for entry in rewards]


def check_model(model: R1ModelConfig, problems: list[str], stage: str = "model", own_keys: Iterable[str] = ()) -> None:
    """Problems with model arguments; a stage reports a value only where it sets the key itself (`own_keys`), so a
    mistake in the model section is one error."""
    choices = R1ModelConfig.__dataclass_fields__["dtype"].metadata["choices"]
    if (stage == "model" or "dtype" in own_keys) and model.dtype is not None and model.dtype not in choices:
        problems.append(f"{stage}: key 'dtype': expected one of {choices}, got {model.dtype!r}")
    if (model.load_in_4bit or model.load_in_8bit) and not model.use_peft:
        problems.append(f"{stage}: load_in_4bit/load_in_8bit needs use_peft: true (quantised weights cannot be "
                        "trained directly); set use_peft: true, or load_in_4bit: false for full fine-tuning")
    if stage == "model" and not model.model_name_or_path and model.tiny is None:
        problems.append("model: set model_name_or_path (Hub id or local path) or tiny: {} (build the tiny model)")
    if stage == "model" and model.model_name_or_path and model.tiny is not None:
        problems.append("model: set either model_name_or_path or tiny, not both")
    if stage == "model" and model.tiny:
        from ..toy import build_tiny_model

        allowed = [p for p in inspect.signature(build_tiny_model).parameters if p != "output_dir"]
        for key in model.tiny:
            if key not in allowed:
                problems.append(f"model: tiny: unknown key {key!r}{suggest(key, allowed)}")


def check_mix_entry(entry: Any, index: int, problems: list[str]) -> None:
    import typing

    from trl import DatasetMixtureConfig

    where = f"final_sft: mix_datasets[{index}]"
    if not isinstance(entry, dict) or "path" not in entry:
        problems.append(f"{where}: must be a mapping with at least 'path'")
        return
    # TRL's entry class, reached through its public mixture config (its own module is not TRL's public API)
    (entry_class,) = typing.get_args(typing.get_type_hints(DatasetMixtureConfig)["datasets"])
    allowed = fields_of(entry_class)
    for key in entry:
        if key not in allowed:
            problems.append(f"{where}: unknown key {key!r}{suggest(key, allowed)}")


# --------------------------------------------------------------------------------------------- lazy config class


def rejection_sampling_config() -> type:
    from ..data.rejection_sampling import RejectionSamplingConfig

    return RejectionSamplingConfig
