"""Held-out evaluation between stages: sample answers to unseen prompts and score them with trl-r1's rewards.

R1 reports pass@1 estimated from k samples at temperature 0.6 (§3.1); the defaults follow it. Each reward's
mean is reported under its name (so `math_accuracy_reward` is the held-out accuracy), with a 95% interval
(`<name>/ci95`: a bootstrap over prompts, since the k samples of one prompt are not independent) and
pass@k (`<name>/pass@k`: the share of prompts with at least one of their k samples scoring 1), next to the mean
completion length and the share of truncated completions. Samples a reward does not apply to (None: no gold
answer, no tests, no sandbox) are left out of its metrics and counted in `<name>/skipped`, as TRL leaves them out
of its reward means; counting them as 0 would report them as wrong answers. Each reward's per-prompt means
(`<name>/per_prompt`, in prompt order) let two evaluations of the same prompts be compared pairwise
(`intervals.paired_gain_interval`), which is far tighter than comparing their two intervals; the first `SAMPLES_SHOWN`
prompts' first completions (`samples`) let a reader see what changed.

`trl-r1 evaluate` (`main`) is the same evaluation on its own: one model, or a PEFT adapter on its base, on a
benchmark (`BENCHMARKS`: MATH-500, AIME 2024) or any dataset `dataset_name` names (a local file, a Hub id), with
the pipeline's report table (`report.evaluation_table`) written to `<output_dir>/report.md`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from dataclasses import asdict, dataclass, field
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..rewards.aliases import reward_entries
from ..verifiers.format import with_think_prefix
from ..algorithms.intervals import bootstrap_interval, pass_at_k
from .fingerprint import ModelHandle, StageRecord, digest, write_record
from .recipe import EvaluationConfig, Recipe, StagePlan

logger = logging.getLogger("trl_r1.pipeline")
SAMPLES_SHOWN = 3  # held-out prompts whose first completion an evaluation keeps, the same prompts at every stage
DEFAULT_REWARDS = ["format", "math"]
BASE_EVALUATION = "base_evaluation.json"  # in the run directory: the untrained model's scores, keyed by settings


class HeldOutEvaluation:
    """A run's held-out evaluation (the recipe's `evaluation` section) across its stages: which rewards it scores
    with, what its scores depend on (`settings`), when a finished stage's scores are out of date, and the scores
    themselves, the base model's cached in the run directory.

    `prompts` loads the evaluation set once; `adapted` fits reward entries to the chat template the preflight
    found (`templates.adapt_rewards`)."""

    def __init__(self, recipe: Recipe, base_model_path: str, prompts: Callable[[], Any],
                 adapted: Callable[[list[Any]], list[Any]], echo: Callable[[str], None]):
        self.recipe, self.config, self.base_model_path = recipe, recipe.evaluation, base_model_path
        self.prompts, self.adapted, self.echo = prompts, adapted, echo

    def reward_entries(self) -> list[Any]:
        """`evaluation.rewards`, else the first stage's that trains on rewards, else `DEFAULT_REWARDS`."""
        trained_with = [p.args.rewards for p in self.recipe.stages if isinstance(getattr(p.args, "rewards", None), list)]
        return self.config.rewards or (trained_with[0] if trained_with else DEFAULT_REWARDS)

    def rewards(self) -> list[Any]:
        return self.adapted(self.reward_entries())

    def settings(self) -> dict[str, Any]:
        """What a stage's evaluation depends on besides its model: the recipe's evaluation keys and its rewards."""
        return json.loads(json.dumps({"evaluation": self.recipe.shared.get("evaluation", {}),
                                      "sampling": {"seed": self.config.seed},  # the run's, by default
                                      "rewards": {"entries": self.reward_entries()}}, default=str))

    def outdated(self, plan: StagePlan, record: StageRecord | None) -> bool:
        """Whether a finished stage's scores were measured with other settings (or not at all)."""
        return (self.config is not None and plan.name in self.config.stages and record is not None
                and record.generator is not None and record.evaluation_settings != self.settings())

    def evaluate(self, stage: str, handle: ModelHandle, *, load_in_4bit: bool = False) -> dict[str, float] | None:
        """Held-out scores of a stage's model (None where the recipe does not evaluate `stage`); an adapter loads on
        its base as the stage trained it (`StagePlan.evaluation_4bit`: a stage may set its own `load_in_4bit`)."""
        if self.config is None or stage not in self.config.stages:
            return None
        self.echo(f"[{stage}] evaluating on held-out prompts")
        return evaluate_model(handle.model_path, self.prompts(), self.config, self.rewards(),
                              adapter_path=handle.adapter_path, seed=self.config.seed, load_in_4bit=load_in_4bit,
                              batch_size=self.recipe.evaluation_batch[0] if self.recipe.evaluation_batch else None)

    def score(self, plan: StagePlan, record: StageRecord) -> StageRecord:
        """`record` with its generator's held-out scores and the settings they were measured with."""
        record.evaluation = (self.evaluate(plan.name, record.generator, load_in_4bit=plan.evaluation_4bit)
                             if record.generator is not None else None)
        record.evaluation_settings = self.settings() if record.evaluation is not None else None
        return record

    def rescored(self, plan: StagePlan, record: StageRecord | None) -> StageRecord | None:
        """A finished stage's record, scored again (and written) where the evaluation settings changed since: the
        evaluation is not part of a stage's fingerprint, so no training stage is redone for it."""
        if not self.outdated(plan, record):
            return record
        write_record(plan.output_dir, self.score(plan, record))
        return record

    def base(self) -> dict[str, float] | None:
        """The untrained model's held-out scores (cached in the run directory, keyed by the settings)."""
        if self.config is None or "base" not in self.config.stages:
            return None
        path = self.recipe.run_dir / BASE_EVALUATION
        key = digest({"model": self.base_model_path, "tiny": self.recipe.model.tiny, "evaluation": str(self.config),
                      "rewards": self.rewards()})  # by default the RL stage's: an edit there counts too
        try:
            cached = json.loads(path.read_text())
            if cached.get("key") == key:
                return cached["results"]
        except (OSError, ValueError):
            pass
        results = self.evaluate("base", ModelHandle(self.base_model_path))
        path.write_text(json.dumps({"key": key, "results": results}, indent=2))
        return results


def evaluate_model(model_path: str, prompts: Any, config: EvaluationConfig, rewards: list[Any], *,
                   adapter_path: str | None = None, load_in_4bit: bool = False, seed: int = 0,
                   batch_size: int | None = None) -> dict[str, float]:
    """Mean reward per reward function (and length statistics) of `model_path` on `prompts` (a `prompt` column),
    `batch_size` prompts per generate call (a run's plan decides it, `preflight.size_generation`; None: the most
    the memory model fits on this machine's GPU, else the configured `batch_size`)."""
    from tqdm.auto import tqdm

    from ..data.generation import SamplingParams, load_generator, vllm_engine_kwargs
    from ..rewards import get_reward_funcs

    funcs = get_reward_funcs(rewards)
    names = [reward_column_name(entry, func) for entry, func in zip(rewards, funcs)]
    generator = load_generator(config.backend, model_path, adapter_path=adapter_path, load_in_4bit=load_in_4bit,
                               seed=seed, vllm_kwargs=vllm_engine_kwargs(config.vllm_gpu_memory_utilization,
                                                                         config.vllm_max_model_length),
                               vllm_fallback=config.vllm_fallback)
    try:  # the engine is freed before the next stage starts one
        params = SamplingParams(config.num_samples, config.max_new_tokens, config.temperature, config.top_p)
        rows = [prompts[i] for i in range(min(len(prompts), config.num_prompts or len(prompts)))]
        why = "the run's plan" if batch_size else "the configured batch_size"
        if batch_size is None and generator.describe()["backend"] == "transformers":
            from ..trainers.memory import GenerationSettings, adapter_rank, card_generation_batch

            batch_size, why = card_generation_batch(model_path, GenerationSettings(
                batch_size=config.batch_size, num_samples=config.num_samples, max_new_tokens=config.max_new_tokens,
                load_in_4bit=load_in_4bit, lora_r=adapter_rank(adapter_path),
                fast=bool(generator.describe().get("fast_generation"))))
        batch_size = batch_size or config.batch_size
        logger.info("evaluation: %d prompts per generate call (%s)", batch_size, why)
        scores: dict[str, list[float | None]] = {name: [] for name in names}  # prompt-major: k samples per prompt
        lengths: list[int] = []
        firsts: list[tuple[Any, str]] = []  # (prompt, its first completion) of the first SAMPLES_SHOWN prompts
        truncated = 0
        bar = tqdm(total=len(rows), unit="prompt", desc="evaluating", dynamic_ncols=True)
        for start in range(0, len(rows), batch_size):
            batch = rows[start:start + batch_size]
            groups = generator.generate([r["prompt"] for r in batch], params, seed=seed + start)
            completions, columns = [], {}
            for row, group in zip(batch, groups):
                for completion in group:
                    completions.append(with_think_prefix(completion.content, bool(completion.think_prefilled)))
                    lengths.append(completion.num_tokens or 0)
                    truncated += completion.finish_reason == "length"
                    for key, value in row.items():
                        if key != "prompt":
                            columns.setdefault(key, []).append(value)
                if len(firsts) < SAMPLES_SHOWN and group:
                    firsts.append((row["prompt"], completions[-len(group)]))
            for name, func in zip(names, funcs):
                values = func(completions=completions, **columns)
                scores[name].extend(None if v is None else float(v) for v in values)
            bar.update(len(batch))
        bar.close()
    finally:
        generator.close()
    results: dict[str, Any] = {}
    for name, values in scores.items():
        results.update(summarize_scores(name, values, config.num_samples, seed=seed))
    # scores are prompt-major, k per prompt: prompt i's first sample is at i * k
    results["samples"] = [{"prompt": prompt_text(prompt), "completion": text,
                           "rewards": {name: values[i * config.num_samples] for name, values in scores.items()}}
                          for i, (prompt, text) in enumerate(firsts)]
    results["mean_length"] = sum(lengths) / max(len(lengths), 1)
    results["truncated_ratio"] = truncated / max(len(lengths), 1)
    results["num_completions"] = len(lengths)
    return results


# options that do not change what a reward measures: left out of its column name
_UNNAMED_OPTIONS = ("name", "weight", "think_prefilled")


def reward_column_name(entry: str | dict[str, Any], func: Any) -> str:
    """The metric name of a reward entry: the function's name, with the options that change what it measures, so
    that two settings of one reward (the strict format reward and the recipes' `require_answer: false`) never
    share a column.

    >>> from ..rewards import get_reward_func
    >>> reward_column_name({"name": "format", "require_answer": False}, get_reward_func("format"))
    'format_reward(require_answer=false)'
    >>> reward_column_name({"name": "format", "think_prefilled": True, "weight": 0.5}, get_reward_func("format"))
    'format_reward'
    """
    name = getattr(func, "__name__", type(func).__name__)
    options = entry.items() if isinstance(entry, dict) else ()
    shown = [f"{key}={json.dumps(value)}" for key, value in sorted(options) if key not in _UNNAMED_OPTIONS]
    return f"{name}({', '.join(shown)})" if shown else name


def summarize_scores(name: str, values: list[float | None], k: int, *, seed: int = 0) -> dict[str, Any]:
    """A reward's held-out metrics from its prompt-major scores (k per prompt): mean, 95% interval and pass@k
    over the samples it scored, and the share it skipped (None: it did not apply, e.g. no gold answer or no
    sandbox), which would otherwise pass for wrong answers.

    >>> summarize_scores("acc", [1.0, None, 0.0, 0.0], k=2)
    {'acc/skipped': 0.25, 'acc': 0.3333333333333333, 'acc/ci95': [0.0, 1.0], 'acc/pass@2': 0.5, 'acc/per_prompt': [1.0, 0.0]}
    """
    if not values:
        return {}
    results: dict[str, Any] = {f"{name}/skipped": sum(v is None for v in values) / len(values)}
    aligned = [[v for v in values[i:i + k] if v is not None] for i in range(0, len(values), k)]
    per_prompt = [group for group in aligned if group]
    if results[f"{name}/skipped"]:
        logger.warning("held-out %s: %.0f%% of the samples were not scored (the reward did not apply; see its "
                       "log lines); its metrics cover the rest", name, 100 * results[f"{name}/skipped"])
    if per_prompt:
        scored = [v for group in per_prompt for v in group]
        results[name] = sum(scored) / len(scored)
        results[f"{name}/ci95"] = bootstrap_interval(per_prompt, seed=seed)
        results[f"{name}/pass@{k}"] = pass_at_k(per_prompt)
        results[f"{name}/per_prompt"] = [sum(g) / len(g) if g else None for g in aligned]
    return results


def prompt_text(prompt: Any) -> str:
    """A prompt as a reader wants it: the last user message of a conversation (a string prompt as is).

    >>> prompt_text([{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": "<think>"}])
    'What is 2 + 3?'
    """
    if isinstance(prompt, str):
        return prompt
    users = [m.get("content") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
    return str(users[-1] if users else prompt)


# --------------------------------------------------------------------------------------------- trl-r1 evaluate

# benchmark name -> the evaluation keys it sets (the public datasets' own schemas)
BENCHMARKS: dict[str, dict[str, str]] = {
    "math500": {"dataset_name": "HuggingFaceH4/MATH-500", "dataset_split": "test", "prompt_column": "problem",
                "solution_column": "answer"},
    "aime24": {"dataset_name": "HuggingFaceH4/aime_2024", "dataset_split": "train", "prompt_column": "problem",
               "solution_column": "answer"},
}
EVALUATION_JSON, EVALUATION_MD = "evaluation.json", "report.md"


@dataclass
class EvaluateArguments(EvaluationConfig):
    """`trl-r1 evaluate`: a model (or a PEFT adapter on its base) on a benchmark, scored as the pipeline's held-out
    evaluation is: pass@1 estimated from `num_samples` samples per prompt (R1 §3.1), its 95% interval, pass@k."""

    model_name_or_path: str | None = field(default=None, metadata={
        "help": "The model: a Hub id or a local folder; a folder holding a PEFT adapter (adapter_config.json, e.g. "
        "<run_dir>/rl) is evaluated on its base, read from adapter_config.json."})
    base_model_name_or_path: str | None = field(default=None, metadata={
        "help": "For an adapter: the base to load it on, when the one adapter_config.json names is not here "
        "(default: that one)."})
    benchmark: str | None = field(default=None, metadata={
        "help": "A known benchmark, which sets dataset_name, dataset_split, prompt_column and solution_column: "
        + ", ".join(f"{name} ({keys['dataset_name']})" for name, keys in BENCHMARKS.items())
        + ". Those of the four keys given as well win.", "choices": list(BENCHMARKS)})
    dataset_split: str | None = field(default=None, metadata={
        "help": "Split to evaluate on (default: the benchmark's, else 'test'; a single local file's 'train')."})
    prompt_column: str | None = field(default=None, metadata={
        "help": "Column holding the prompt (default: the benchmark's, else 'prompt'); a text column becomes a "
        "one-turn conversation, so the chat template applies."})
    solution_column: str | None = field(default=None, metadata={
        "help": "Column holding the gold answer (default: the benchmark's, else 'solution')."})
    num_prompts: int | None = field(default=None, metadata={"help": "Evaluate the first N prompts (None: all)."})
    load_in_4bit: bool = field(default=False, metadata={
        "help": "Load the base in 4 bit (as QLoRA trained the adapter; transformers backend)."})
    seed: int = field(default=0, metadata={"help": "Sampling seed."})
    output_dir: str | None = field(default=None, metadata={
        "help": "Where evaluation.json and report.md are written (None: print only)."})
    stages: list[str] = field(default_factory=list, init=False, repr=False)  # a pipeline key: not for one model

    def __post_init__(self):
        if not self.model_name_or_path:
            raise ValueError("model_name_or_path: required (a Hub id, a model folder or an adapter folder)")
        if self.benchmark is not None and self.benchmark not in BENCHMARKS:
            raise ValueError(f"benchmark: expected one of {list(BENCHMARKS)}, got {self.benchmark!r}")
        preset, defaults = BENCHMARKS.get(self.benchmark or "", {}), EvaluationConfig()
        split_given = self.dataset_split is not None or "dataset_split" in preset
        for key in ("dataset_name", "dataset_split", "prompt_column", "solution_column"):
            if getattr(self, key) is None:
                setattr(self, key, preset.get(key, getattr(defaults, key)))
        if not split_given:  # 'test', or a single local file's one split
            from ..data.loading import held_out_split

            self.dataset_split = held_out_split(self.dataset_name)
        if self.benchmark is None and not self.dataset_name:
            raise ValueError(f"set benchmark ({', '.join(BENCHMARKS)}) or dataset_name (a file or a Hub id)")
        if self.num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {self.num_samples}")
        from ..data.generation import check_sampling

        check_sampling(self.temperature, self.top_p)


def resolve_model(model_name_or_path: str, base_model_name_or_path: str | None = None) -> tuple[str, str | None]:
    """(model to load, adapter on it or None): a folder with adapter_config.json is an adapter on the base it
    names (or `base_model_name_or_path`). A path-like name that is no folder here is a FileNotFoundError: it
    never goes to the Hub (whose error would be a connection failure, not "no such folder")."""
    path = Path(model_name_or_path)
    if not path.is_dir() and looks_like_local_path(model_name_or_path):
        raise FileNotFoundError(f"model_name_or_path: {model_name_or_path!r} is no folder here (a path, not a Hub "
                                "id: check the run directory and stage name, e.g. <run_dir>/rl)")
    config = path / "adapter_config.json"
    if not config.is_file():
        return model_name_or_path, None
    base = base_model_name_or_path or json.loads(config.read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{config} names no base model; set base_model_name_or_path")
    if not base_model_name_or_path and not Path(base).is_absolute() and not Path(base).is_dir():
        # a run records its base relative to where it ran (runs/r/cold_start/merged): from another folder, the
        # base is found beside the adapter, under the folder the run ran in
        base = next((str(root / base) for root in path.resolve().parents if (root / base).is_dir()), base)
    return base, model_name_or_path


def looks_like_local_path(name: str) -> bool:
    """Whether a model name can only mean a local folder: it starts with `.`, `/` or `~`, has more than one `/`,
    or its first part is a folder here (`runs/nope` beside a `runs/` folder); a Hub id is `owner/name`.

    >>> looks_like_local_path("Qwen/Qwen2.5-1.5B"), looks_like_local_path("./runs/rl"), looks_like_local_path("a/b/c")
    (False, True, True)
    """
    parts = name.split("/")
    return name.startswith((".", "/", "~")) or len(parts) > 2 or (len(parts) == 2 and Path(parts[0]).is_dir())


def recorded_evaluation(model_name_or_path: str) -> dict[str, Any] | None:
    """The evaluation settings the pipeline recorded for the stage whose output `model_name_or_path` is (its
    stage.json, in the folder or the one above it, e.g. `<run_dir>/rl` or `<run_dir>/rl/merged`): the recipe's
    `evaluation` keys and the reward entries it scored with, so that `trl-r1 evaluate` reproduces its figure;
    for an adapter folder, also `load_in_4bit` as the pipeline loaded its base (the stage's, else the model's)."""
    from .recipe import R1ModelConfig
    from .fingerprint import read_record

    for folder in (Path(model_name_or_path), Path(model_name_or_path).parent):
        record = read_record(folder) if folder.is_dir() else None
        if record is not None and record.evaluation_settings:
            settings = dict(record.evaluation_settings)
            if (Path(model_name_or_path) / "adapter_config.json").is_file() and record.settings:
                default = next(f.default for f in dataclasses.fields(R1ModelConfig) if f.name == "load_in_4bit")
                model = record.settings.get("model") or {}
                section = record.settings.get(record.name) or {}
                settings["load_in_4bit"] = bool(section.get("load_in_4bit", model.get("load_in_4bit", default)))
            return settings
    return None


def run_settings_argv(argv: list[str]) -> list[str]:
    """`argv` preceded by the run's recorded evaluation settings (`recorded_evaluation`) for the keys it does not
    set, when its model belongs to a pipeline run; flags and the `--config` YAML still win."""
    given = given_values(argv)
    recorded = recorded_evaluation(str(given.get("model_name_or_path", "")))
    if recorded is None:
        return argv
    # the pipeline's defaults for the keys its recipe left out (num_prompts 200, where evaluate's is all)
    pipeline_defaults = {key: value for key, value in asdict(EvaluationConfig()).items()
                         if key not in ("stages", "rewards")}
    settings = {key: value for key, value in {**pipeline_defaults, **(recorded.get("evaluation") or {})}.items()
                if key in pipeline_defaults and key not in given}
    entries = (recorded.get("rewards") or {}).get("entries")
    if entries and "rewards" not in given:
        settings["rewards"] = entries
    if "load_in_4bit" in recorded and "load_in_4bit" not in given:
        settings["load_in_4bit"] = recorded["load_in_4bit"]
    if "benchmark" in given:  # the user's benchmark names its own dataset and columns
        preset = {*BENCHMARKS.get(str(given["benchmark"]), {}), "dataset_config", "dataset_kwargs"}
        settings = {key: value for key, value in settings.items() if key not in preset}
    logger.info("evaluate: %s belongs to a pipeline run; its recorded evaluation settings apply (%s; flags win)",
                given["model_name_or_path"], ", ".join(sorted(settings)) or "none")
    tokens = []
    for key, value in settings.items():
        if value is not None:
            tokens += [f"--{key}", *(json.dumps(v) for v in value)] if isinstance(value, list) else \
                [f"--{key}", json.dumps(value) if not isinstance(value, str) else value]
    return [*tokens, *argv]


def given_values(argv: list[str]) -> dict[str, Any]:
    """The keys a command line sets, by flag (`--num_samples 4`, `--num-samples=4`) or in its `--config` YAML, with
    their first value as text (the YAML's as read).

    >>> given_values(["--model_name_or_path", "m", "--num-samples=4", "--bf16"])
    {'model_name_or_path': 'm', 'num_samples': '4', 'bf16': None}
    """
    values: dict[str, Any] = {}
    for i, token in enumerate(argv):
        if token.startswith("--"):
            key, eq, value = token[2:].partition("=")
            following = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
            values[key.replace("-", "_")] = value if eq else following
    if values.get("config"):
        from ..config import read_yaml

        values = {**read_yaml(values["config"]), **values}
    values.pop("config", None)
    return values



def evaluate_command(args: EvaluateArguments) -> dict[str, Any]:
    """Run `trl-r1 evaluate` with parsed arguments; returns {"settings", "evaluation": {model: metrics}} and
    writes evaluation.json and report.md into `output_dir` when set."""
    from .data import StageDatasets

    model, adapter = resolve_model(args.model_name_or_path, args.base_model_name_or_path)
    rewards = _adapted(reward_entries(args.rewards or DEFAULT_REWARDS), adapter or model)
    prompts = StageDatasets(streaming=False).of("evaluation", args, split_attribute="dataset_split")
    results = evaluate_model(model, prompts, args, rewards, adapter_path=adapter, load_in_4bit=args.load_in_4bit,
                             seed=args.seed)
    settings = {k: v for k, v in asdict(args).items() if k != "stages"}
    report = {"settings": {**settings, "rewards": rewards, "base_model": model if adapter else None},
              "evaluation": {args.model_name_or_path: results}}
    if args.output_dir:
        from .report import evaluation_table

        out = Path(args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / EVALUATION_JSON).write_text(json.dumps(report, indent=2, default=str))
        source = f"`{args.dataset_name}` (split `{args.dataset_split}`)"
        lines = ["# Evaluation report", "", f"{source}, {results.get('num_completions', 0)} completions: "
                 f"{args.num_samples} samples per prompt at temperature {args.temperature}, top-p {args.top_p}, "
                 f"at most {args.max_new_tokens} new tokens; rewards {rewards}.", "",
                 *evaluation_table(report["evaluation"], first_column="model")]
        (out / EVALUATION_MD).write_text("\n".join(lines) + "\n")
    return report


def _adapted(rewards: list[Any], tokenizer_path: str) -> list[Any]:
    """The rewards adapted to the model's chat template (a prefilled `<think>`), as the pipeline adapts them."""
    from transformers import AutoTokenizer

    from ..trainers.chat_templates import adapt_rewards, inspect_chat_template

    try:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    except (OSError, ValueError):
        return list(rewards)
    return adapt_rewards(rewards, inspect_chat_template(tokenizer)) if tokenizer.chat_template else list(rewards)


def main(argv: list[str] | None = None) -> int:
    """`trl-r1 evaluate --model_name_or_path M (--benchmark math500 | --dataset_name D) [--KEY VALUE ...]`."""
    from ..config import ConfigError, parse_command_line
    from .report import evaluation_lines

    prog = "trl-r1 evaluate"
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        argv = sys.argv[1:] if argv is None else argv
        args = parse_command_line(EvaluateArguments, run_settings_argv(argv), prog)
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    from ..data.loading import LocalDataError

    try:
        report = evaluate_command(args)
    except LocalDataError as exc:  # a dataset path that is no file here: an input mistake, like a bad flag
        print(f"{prog}: dataset_name: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, ImportError, KeyError) as exc:  # a model or dataset that cannot load
        print(f"{prog}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(evaluation_lines(report["evaluation"])))
    if args.output_dir:
        print(f"report: {Path(args.output_dir) / EVALUATION_MD}")
    return 0
