"""Recipe YAMLs for `trl-r1 run`: the schema, and validation before any work is done.

A recipe has one section per stage, and each section maps one-to-one onto TRL's configs, so every TRL
option can be set where it belongs::

    run_dir: runs/qwen2.5-1.5b-math       # every stage writes under <run_dir>/<stage>/
    model: {...}                          # R1ModelConfig = trl.ModelConfig (+ tiny, adapter_handoff), QLoRA defaults
    training: {...}                       # defaults for every trainer config (SFTConfig / GRPOConfig fields)
    cold_start: {...}                     # SFTStageArguments + trl.SFTConfig + model overrides
    rl: {...}                             # RLStageArguments + R1GRPOConfig (or PPOConfig) + model overrides
    rejection_sampling: {...}             # RejectionSamplingStageArguments + RejectionSamplingConfig
    final_sft: {...}                      # FinalSFTArguments + trl.SFTConfig + model overrides
    evaluation: {...}                     # EvaluationConfig: held-out accuracy after each training stage

Any stage may be left out (R1-Zero is `rl` alone). Validation collects every problem at once and names the
stage and the key: unknown keys (with close-match suggestions), wrong types, incompatible options, and keys
the pipeline sets itself. Dataset columns are checked separately (`check_datasets`), as that loads data.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import hashlib
import inspect
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from trl import ModelConfig

STAGES = ("cold_start", "rl", "rejection_sampling", "final_sft")
SECTIONS = ("run_dir", "model", "training", *STAGES, "evaluation")
PIPELINE_SET_KEYS = {"output_dir", "model_name_or_path", "adapter_path"}  # stage sections may not set these
QLORA_TARGETS = ["all-linear"]


class RecipeError(ValueError):
    """Every problem found in a recipe, each naming its stage (section) and key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid recipe:\n" + "\n".join(f"  - {p}" for p in problems))


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
    lora_target_modules: list[str] | None = field(default_factory=lambda: list(QLORA_TARGETS), metadata={
        "help": "LoRA targets; default all linear layers (QLoRA paper: adapters on every layer matter)."})
    tiny: dict[str, Any] | None = field(default=None, metadata={
        "help": "Build the tiny offline model (trl_r1.testing.build_tiny_model keyword arguments) into "
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
        "'module:function' called with `dataset_kwargs` (e.g. trl_r1.testing.arithmetic:arithmetic_dataset)."})
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


@dataclass
class SFTStageArguments(DataArguments):
    """Cold-start SFT (R1 §2.3.1): a small long-CoT set teaches the format before RL."""


@dataclass
class RLStageArguments(DataArguments):
    """The RL stage: algorithm and rewards (R1 §2.2.2: accuracy + format, combined with equal weight)."""

    algorithm: str = field(default="grpo", metadata={
        "help": "'grpo' (trl_r1.trainers.R1GRPOTrainer, default) or 'ppo' (actor-critic with GAE).",
        "choices": ["grpo", "ppo"]})
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
class FinalSFTArguments(DataArguments):
    """SFT on the rejection-sampled set (R1 §2.3.3), optionally mixed with other data."""

    init_from: str = field(default="rl", metadata={
        "help": "Which model the final SFT starts from: 'rl' (the RL checkpoint, default), 'cold_start', or "
        "'base' (the original base model, as R1 fine-tunes DeepSeek-V3-Base on the 800k samples).",
        "choices": ["base", "cold_start", "rl"]})
    mix_datasets: list[dict[str, Any]] = field(default_factory=list, metadata={
        "help": "Extra SFT datasets mixed with the accepted samples: trl DatasetConfig entries "
        "(path, name, data_dir, data_files, split, columns, fraction); each needs a 'messages' column."})


@dataclass
class EvaluationConfig:
    """Held-out evaluation after each training stage: sampled answers scored by the listed rewards."""

    dataset_name: str | None = field(default=None, metadata={
        "help": "Held-out prompts (same forms as DataArguments.dataset_name); needs a `prompt` column."})
    dataset_config: str | None = field(default=None, metadata={"help": "Dataset configuration name."})
    dataset_split: str = field(default="test", metadata={"help": "Split to evaluate on (default 'test')."})
    dataset_kwargs: dict[str, Any] = field(default_factory=dict, metadata={"help": "Builder keyword arguments."})
    prompt_column: str = field(default="prompt", metadata={"help": "As in DataArguments."})
    solution_column: str = field(default="solution", metadata={"help": "As in DataArguments."})
    num_prompts: int | None = field(default=200, metadata={"help": "Evaluate the first N prompts (default 200)."})
    num_samples: int = field(default=4, metadata={
        "help": "Samples per prompt; the reward means over them estimate pass@1 (R1 §3.1 uses k samples)."})
    temperature: float = field(default=0.6, metadata={
        "help": "Sampling temperature (R1 §3.1: 0.6; 0 = greedy decoding with num_samples 1)."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling threshold (R1 §3.1: 0.95)."})
    max_new_tokens: int = field(default=512, metadata={"help": "Generation budget per sample (default 512)."})
    batch_size: int = field(default=16, metadata={"help": "Prompts per generate call (default 16)."})
    backend: str = field(default="auto", metadata={
        "help": "Generation backend: auto (vLLM when it can serve the model here, else transformers), vllm or "
        "transformers.", "choices": ["auto", "vllm", "transformers"]})
    rewards: list[Any] | None = field(default=None, metadata={
        "help": "Rewards reported as metrics (default: the RL stage's rewards, else format + math)."})
    stages: list[str] = field(default_factory=lambda: ["base", "cold_start", "rl", "final_sft"], metadata={
        "help": "After which stages to evaluate ('base' = the model before training)."})


@dataclass
class StagePlan:
    """One resolved stage: its argument objects, where it writes, and a fingerprint of everything it depends on."""

    name: str
    kind: str  # sft | grpo | ppo | rejection_sampling
    args: Any  # the stage's *Arguments dataclass
    config: Any  # SFTConfig / R1GRPOConfig / PPOConfig / RejectionSamplingConfig
    model_args: R1ModelConfig | None
    output_dir: Path
    fingerprint: str = ""
    section: dict[str, Any] = field(default_factory=dict)  # the user's keys, for the plan printout


@dataclass
class Recipe:
    """A validated recipe: the model, the stages in pipeline order, and the evaluation settings."""

    run_dir: Path
    model: R1ModelConfig
    stages: list[StagePlan]
    evaluation: EvaluationConfig | None
    source: Path | None = None

    def stage(self, name: str) -> StagePlan | None:
        return next((s for s in self.stages if s.name == name), None)


# --------------------------------------------------------------------------------------------- loading


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A recipe file as a mapping (a clear error for a missing file, bad YAML or a non-mapping)."""
    path = Path(path)
    if not path.is_file():
        raise RecipeError([f"recipe file {str(path)!r} not found"])
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise RecipeError([f"{path}: not valid YAML: {exc}"]) from exc
    if not isinstance(data, dict):
        raise RecipeError([f"{path}: a recipe must be a mapping of sections, got {type(data).__name__}"])
    return data


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
    problems: list[str] = []
    for key in data:
        if key not in SECTIONS:
            problems.append(f"unknown section {key!r}{_suggest(key, SECTIONS)}")
    if not isinstance(data.get("run_dir"), str):
        problems.append("output_dir: required, a directory path (string)" if single_stage
                        else "run_dir: required, a directory path (string)")
    if not any(name in data for name in STAGES):
        problems.append(f"no stage section: a recipe needs at least one of {list(STAGES)}")
    for name in ("model", "training", *STAGES, "evaluation"):
        if name in data and not isinstance(data[name], dict):
            problems.append(f"{name}: must be a mapping of keys, got {type(data[name]).__name__}")
            data.pop(name)
    if problems:
        raise RecipeError(problems)

    model_section = data.get("model", {})
    model = _build("model", R1ModelConfig, _pick(model_section, R1ModelConfig), problems)
    _check_keys("model", model_section, [R1ModelConfig], problems)
    if model is not None:
        _check_model(model, problems)
    training = data.get("training", {})
    _check_keys("training", training, [_trainer_config("sft"), _trainer_config("grpo")], problems)
    run_root = Path(data["run_dir"])
    stages: list[StagePlan] = []
    for name in STAGES:
        if name in data:
            output_dir = run_root if single_stage else run_root / name
            plan = _plan_stage(name, data[name], training, model_section, output_dir, problems, check_hardware)
            if plan is not None:
                stages.append(plan)
    evaluation = None
    if "evaluation" in data:
        _check_keys("evaluation", data["evaluation"], [EvaluationConfig], problems)
        evaluation = _build("evaluation", EvaluationConfig, _pick(data["evaluation"], EvaluationConfig), problems)
        if evaluation is not None:
            known = {"base", *STAGES}
            for stage in evaluation.stages:
                if stage not in known:
                    problems.append(f"evaluation: stages entry {stage!r} is not a stage{_suggest(stage, known)}")
    _check_cross_stage(data, stages, problems)
    if problems:
        raise RecipeError(problems)
    _fingerprint(stages, model_section, data.get("evaluation"))
    return Recipe(run_dir=run_root, model=model, stages=stages, evaluation=evaluation, source=path)


def flat_to_recipe(flat: dict[str, Any], stage: str) -> dict[str, Any]:
    """A TRL-style flat YAML (one namespace, as `trl sft --config`) as a one-stage recipe.

    Model keys go to `model:`, `output_dir` becomes the run directory, everything else to the stage.

    >>> flat_to_recipe({"model_name_or_path": "m", "lora_r": 8, "output_dir": "out", "max_steps": 3}, "cold_start")
    {'run_dir': 'out', 'model': {'model_name_or_path': 'm', 'lora_r': 8}, 'cold_start': {'max_steps': 3}}
    """
    model_keys = {f.name for f in dataclasses.fields(R1ModelConfig)}
    flat = dict(flat)
    run_dir = flat.pop("output_dir", None)
    model = {k: flat.pop(k) for k in list(flat) if k in model_keys}
    return {"run_dir": run_dir, "model": model, stage: flat}


# --------------------------------------------------------------------------------------------- stages


def stage_dataclasses(name: str, section: dict[str, Any]) -> list[type]:
    """The dataclasses whose fields a stage section may set, in priority order."""
    if name == "rejection_sampling":
        return [RejectionSamplingStageArguments, _rejection_sampling_config()]
    if name == "rl":
        algorithm = section.get("algorithm", "grpo")
        return [RLStageArguments, _trainer_config("ppo" if algorithm == "ppo" else "grpo"), R1ModelConfig]
    return [FinalSFTArguments if name == "final_sft" else SFTStageArguments, _trainer_config("sft"), R1ModelConfig]


def _plan_stage(name: str, section: dict[str, Any], training: dict[str, Any], model_section: dict[str, Any],
                output_dir: Path, problems: list[str], check_hardware: bool = True) -> StagePlan | None:
    classes = stage_dataclasses(name, section)
    count = len(problems)
    _check_keys(name, section, classes, problems)
    for key in sorted(PIPELINE_SET_KEYS & set(section)):
        problems.append(f"{name}: key {key!r} is set by the pipeline (stage outputs live in <run_dir>/{name})")
    if len(problems) > count:
        return None
    args_cls, config_cls = classes[0], classes[1]
    args = _build(name, args_cls, _pick(section, args_cls), problems)
    if name == "rejection_sampling":
        values = {k: v for k, v in section.items() if k not in _fields(args_cls)}
        values["output_dir"] = str(output_dir)
        values["model_name_or_path"] = "<rl checkpoint>"  # the pipeline sets the real path when the stage runs
        if "rewards" in values:
            _reward_weights(values["rewards"], name, problems)
        config = _build(name, config_cls, values, problems)
        return StagePlan(name, "rejection_sampling", args, config, None, output_dir, section=section)
    model_values = {**model_section, **_pick(section, R1ModelConfig, exclude=_fields(config_cls))}
    model_args = _build(name, R1ModelConfig, model_values, problems)
    trainer_values = {k: v for k, v in training.items() if k in _fields(config_cls)}
    trainer_values.update(_pick(section, config_cls, exclude=_fields(args_cls)))
    trainer_values["output_dir"] = str(output_dir)
    if model_args is not None:
        _check_model(model_args, problems, stage=name)
        trainer_values.setdefault("gradient_checkpointing", True)
        if model_args.load_in_4bit or model_args.load_in_8bit:
            trainer_values.setdefault("optim", "paged_adamw_8bit")
    if name == "rl" and args is not None:
        weights = _reward_weights(args.rewards, name, problems)
        if weights is not None:
            if "reward_weights" in section:
                problems.append(f"{name}: set reward weights either in `rewards` entries or in `reward_weights`, "
                                "not both")
            else:
                trainer_values["reward_weights"] = weights
    config = _build(name, config_cls, trainer_values, problems, check_hardware=check_hardware)
    kind = "sft" if name in ("cold_start", "final_sft") else args.algorithm if args is not None else "grpo"
    return StagePlan(name, kind, args, config, model_args, output_dir, section=section)


def _reward_weights(rewards: Any, stage: str, problems: list[str]) -> list[float] | None:
    """Resolve the reward list now (unknown names fail before any work); return the weights if any were set."""
    from ..rewards import get_reward_funcs

    if not isinstance(rewards, list) or not rewards:
        problems.append(f"{stage}: key 'rewards' must be a non-empty list of names or {{name, weight}} mappings")
        return None
    try:
        get_reward_funcs(rewards)
    except (ValueError, TypeError) as exc:
        problems.append(f"{stage}: key 'rewards': {exc}")
        return None
    weights = [entry.get("weight") if isinstance(entry, dict) else None for entry in rewards]
    if all(w is None for w in weights):
        return None
    try:
        return [1.0 if w is None else float(w) for w in weights]
    except (TypeError, ValueError):
        problems.append(f"{stage}: key 'rewards': every weight must be a number, got {weights}")
        return None


def _check_model(model: R1ModelConfig, problems: list[str], stage: str = "model") -> None:
    if (model.load_in_4bit or model.load_in_8bit) and not model.use_peft:
        problems.append(f"{stage}: load_in_4bit/load_in_8bit needs use_peft: true (quantised weights cannot be "
                        "trained directly); set use_peft: true, or load_in_4bit: false for full fine-tuning")
    if stage == "model" and not model.model_name_or_path and model.tiny is None:
        problems.append("model: set model_name_or_path (Hub id or local path) or tiny: {} (build the tiny model)")
    if stage == "model" and model.model_name_or_path and model.tiny is not None:
        problems.append("model: set either model_name_or_path or tiny, not both")
    if stage == "model" and model.tiny:
        from ..testing import build_tiny_model

        allowed = [p for p in inspect.signature(build_tiny_model).parameters if p != "output_dir"]
        for key in model.tiny:
            if key not in allowed:
                problems.append(f"model: tiny: unknown key {key!r}{_suggest(key, allowed)}")


def _check_cross_stage(data: dict[str, Any], stages: list[StagePlan], problems: list[str]) -> None:
    names = {s.name for s in stages}
    for plan in stages:
        if plan.name in ("cold_start", "rl") and plan.args is not None and not plan.args.dataset_name:
            problems.append(f"{plan.name}: key 'dataset_name' is required")
        if plan.name == "rejection_sampling" and "rl" not in names and "cold_start" not in names:
            problems.append("rejection_sampling: needs an rl or cold_start stage to sample from")
        if plan.name == "rejection_sampling" and plan.config is not None and not plan.config.dataset_name \
                and "rl" not in names:
            problems.append("rejection_sampling: key 'dataset_name' is required when the recipe has no rl stage")
        if plan.name == "final_sft" and plan.args is not None:
            if "rejection_sampling" not in names and not plan.args.dataset_name:
                problems.append("final_sft: key 'dataset_name' is required when the recipe has no "
                                "rejection_sampling stage")
            if plan.args.init_from != "base" and plan.args.init_from not in names:
                problems.append(f"final_sft: init_from {plan.args.init_from!r} names a stage the recipe does not "
                                "have; use 'base' or add the stage")
            for i, entry in enumerate(plan.args.mix_datasets):
                _check_mix_entry(entry, i, problems)


def _check_mix_entry(entry: Any, index: int, problems: list[str]) -> None:
    from trl.scripts.utils import DatasetConfig

    where = f"final_sft: mix_datasets[{index}]"
    if not isinstance(entry, dict) or "path" not in entry:
        problems.append(f"{where}: must be a mapping with at least 'path'")
        return
    allowed = _fields(DatasetConfig)
    for key in entry:
        if key not in allowed:
            problems.append(f"{where}: unknown key {key!r}{_suggest(key, allowed)}")


def _fingerprint(stages: list[StagePlan], model_section: dict[str, Any], evaluation: Any) -> None:
    """Chain fingerprints: a stage is stale when its section, the model, or any earlier stage changed."""
    previous = _digest({"model": model_section, "evaluation": evaluation})
    for plan in stages:
        plan.fingerprint = previous = _digest({"previous": previous, "name": plan.name, "section": plan.section})


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------- key and type checks


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.init]


def _pick(section: dict[str, Any], cls: type, exclude: list[str] = ()) -> dict[str, Any]:
    names = set(_fields(cls)) - set(exclude)
    return {k: v for k, v in section.items() if k in names}


def _check_keys(where: str, section: dict[str, Any], classes: list[type], problems: list[str]) -> None:
    allowed = sorted({name for cls in classes for name in _fields(cls)})
    for key in section:
        if key not in allowed:
            problems.append(f"{where}: unknown key {key!r}{_suggest(str(key), allowed)}")


def _suggest(key: str, candidates: Any) -> str:
    close = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.7)
    return f"; did you mean {close[0]!r}?" if close else ""


def _build(where: str, cls: type, values: dict[str, Any], problems: list[str], check_hardware: bool = True) -> Any:
    """Type-check `values` against `cls`'s annotations, then construct it (its own checks name the stage).

    Reward lists are checked by resolving them (`_reward_weights`), not by their annotation.
    """
    hints = _type_hints(cls)
    coerced, ok = {}, True
    for key, value in values.items():
        try:
            coerced[key] = value if key == "rewards" else coerce(value, hints.get(key, Any))
        except TypeError as exc:
            problems.append(f"{where}: key {key!r}: {exc}")
            ok = False
    if not ok:
        return None
    hardware_free = not check_hardware and "use_cpu" in _fields(cls)
    try:
        if hardware_free:
            built = cls(**{**coerced, "use_cpu": True})
            built.use_cpu = coerced.get("use_cpu", False)
            return built
        return cls(**coerced)
    except (ValueError, TypeError) as exc:
        problems.append(f"{where}: {exc}")
        return None


def _type_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError, AttributeError):  # an unresolvable forward reference: no type checks
        return {}


def coerce(value: Any, annotation: Any) -> Any:
    """`value` checked against a dataclass annotation; numeric strings become numbers (YAML reads 1e-5 as text).

    >>> coerce("1e-5", float), coerce(3, float | None), coerce("cosine", Literal["linear", "cosine"])
    (1e-05, 3.0, 'cosine')
    >>> coerce("yes", bool)
    Traceback (most recent call last):
    ...
    TypeError: expected bool, got 'yes' (str)
    """
    if annotation is Any or annotation is None:
        return value
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in sorted((o for o in options if o is not type(None)), key=_union_order):
            try:
                return coerce(value, option)
            except TypeError as exc:
                errors.append(str(exc))
        raise TypeError(errors[0] if len(errors) == 1 else f"expected {_type_name(annotation)}, got {_show(value)}")
    if origin is Literal:
        if value in typing.get_args(annotation):
            return value
        raise TypeError(f"expected one of {list(typing.get_args(annotation))}, got {_show(value)}")
    if origin in (list, tuple) or annotation in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a list, got {_show(value)}")
        args = typing.get_args(annotation)
        item = args[0] if args else Any
        return [coerce(v, item) for v in value]
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected a mapping, got {_show(value)}")
        return value
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise TypeError(f"expected bool, got {_show(value)}")
    if annotation in (int, float):
        if isinstance(value, bool):
            raise TypeError(f"expected {annotation.__name__}, got {_show(value)}")
        if isinstance(value, (int, float)) and (annotation is float or float(value).is_integer()):
            return annotation(value)
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
            else:
                if annotation is float or number.is_integer():
                    return annotation(number)
        raise TypeError(f"expected {annotation.__name__}, got {_show(value)}")
    if annotation is str:
        if isinstance(value, str):
            return value
        raise TypeError(f"expected str, got {_show(value)}")
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        allowed = [m.value for m in annotation]
        if value in allowed or isinstance(value, annotation):
            return value
        raise TypeError(f"expected one of {allowed}, got {_show(value)}")
    return value  # other annotations (classes, callables): the config's own __post_init__ checks them


def _union_order(option: Any) -> int:
    """Try the strictest types first, so '3' for `int | str` becomes 3 but 'cosine' stays a string."""
    return {bool: 0, int: 1, float: 2}.get(option, 4 if option is str else 3)


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _show(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


# --------------------------------------------------------------------------------------------- lazy config classes


def _trainer_config(kind: str) -> type:
    """The TRL config class of a stage kind (imported lazily: trl_r1.trainers pulls in TRL's trainers)."""
    if kind == "sft":
        from trl import SFTConfig

        return SFTConfig
    from .. import trainers

    return trainers.PPOConfig if kind == "ppo" else trainers.R1GRPOConfig


def _rejection_sampling_config() -> type:
    from ..data.rejection_sampling import RejectionSamplingConfig

    return RejectionSamplingConfig
