"""The R1 pipeline's loop: preflight checks, the resolved plan, each stage in order (skipping finished ones), report.

cold-start SFT -> GRPO/PPO -> rejection sampling from the RL checkpoint -> SFT on the accepted samples, or any
other sequence of registered stages (`trl_r1.pipeline.stages.STAGE_REGISTRY`). The loop knows no stage by name:
it asks each stage object to check its data, run and record (see `stages.Stage`).

Several processes (`accelerate launch`, `trl-r1 run --num_processes N`): every rank runs this loop; the main
process alone decides stage status, runs the preflight, builds the tiny model, moves stage directories,
records, merges adapters, evaluates, runs the stages that are not data-parallel (rejection sampling) and writes
the report (`Ranks.on_main`, whose broadcast is the barrier at every hand-off); every rank trains.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..data.loading import EmptyDatasetError, LocalDataError, SplitError
from ..data.scan import (budget_problems, dataset_scan, duplicate_prompt_notes, held_out_problems, prompt_budget,
                         seen_in_training, think_tag_notes)
from ..rehearsal.pretrained import resolve_model_name
from .data import DatasetSchema, load_stage_dataset
from .memory import model_shape
from .preflight import (
    backend_problems,
    card_memory_gb,
    column_key_problems,
    dataset_kwargs_problems,
    context_problems,
    fast_prompt_problems,
    generation_backend_problems,
    conversation_problems,
    long_prompt_problems,
    lora_target_problems,
    memory_problems,
    missing_template_problems,
    missing_value_problems,
    model_context,
    model_path_problems,
    rows_asked,
    precision_problems,
    run_dir_model_problems,
    run_dir_problems,
    tracker_problems,
    value_problems,
    resolve_stage,
    set_column_keys,
    split_key,
    unique,
)
from .ranks import Ranks
from .cards import card_precision_problems, cpu_stage_notes
from .fingerprint import data_file, file_stamp, next_previous, record_notes
from .key_effects import ignored_key_notes
from .recipe import Recipe, RecipeError, StagePlan, _digest, changed_keys
from .stages import STAGE_REGISTRY, ModelHandle, StageRecord, prepare_stage_dir, read_record, stage_status, write_record
from .templates import TemplateReport, adapt_rewards, inspect_chat_template, template_problems

logger = logging.getLogger("trl_r1.pipeline")

BASE_MODEL_DIR, BASE_EVALUATION = "base_model", "base_evaluation.json"
TINY_SETTINGS = "trl_r1_tiny.json"  # in BASE_MODEL_DIR: the `model.tiny` settings it was built with
DEFAULT_EVAL_REWARDS = ["format", "math"]
DETECT_CARD = "detect"  # Pipeline(card=...): the GPU torch.cuda sees here


PROMPT_COLUMNS = ("problem", "question", "query", "instruction", "input")  # what other datasets call the prompt


def column_hint(needed: str, columns: list[str]) -> str:
    """The key that maps a dataset's own prompt column (GSM8K's 'question', MATH's 'problem') to 'prompt'."""
    found = [c for c in PROMPT_COLUMNS if c in columns] if needed == "prompt" else []
    return f"; set prompt_column: {found[0]} (the column holding the prompt)" if found else ""


class Pipeline:
    """One run of a recipe. `run()` does the work; `plan_lines()` is what `--dry-run` prints."""

    def __init__(self, recipe: Recipe, *, from_stage: str | None = None, echo: Callable[[str], None] = print,
                 ranks: Ranks | None = None, dry_run: bool = False, overridden: Iterable[str] = (),
                 card: tuple[str, float] | None | str = DETECT_CARD, elsewhere: bool = False,
                 model_built_by_run: bool = False):
        """`dry_run`: the preflight builds nothing and streams Hub datasets' first rows; `overridden`: the keys a
        command line set (`section.key`, or `key` in any section), marked in the plan; `card`: (name, GB) of the
        GPU the memory check sizes for (default: what torch.cuda sees here; None: skip it); `elsewhere`: the plan
        is for `card` on another machine (`--card` where there is no GPU), so what this machine lacks (a GPU for
        bf16, vLLM, other backends) is a note, not an error; `model_built_by_run`: the model path is where the run
        builds the model (a smoke dry run), so its absence is no error."""
        if from_stage is not None and recipe.stage(from_stage) is None:
            names = [s.name for s in recipe.stages]
            raise RecipeError([f"--from-stage {from_stage!r} is not a stage of this recipe; stages: {names}"])
        self.recipe = recipe
        for plan in recipe.stages:  # every decision a stage's run takes, made once (on every rank)
            resolve_stage(plan, recipe, elsewhere=elsewhere and card is not None)
        self.ranks = ranks or Ranks()
        self.echo = echo if self.ranks.is_main else (lambda _: None)
        forced_from = [s.name for s in recipe.stages].index(from_stage) if from_stage else len(recipe.stages)
        self.from_stage, self.forced = from_stage, {plan.name for plan in recipe.stages[forced_from:]}
        self.status: dict[str, str] = self.ranks.on_main(lambda: {
            plan.name: stage_status(plan, forced=plan.name in self.forced) for plan in recipe.stages})
        self.template: TemplateReport | None = None
        self.handles: dict[str, ModelHandle] = {"base": ModelHandle(self.base_model_path)}
        self.generators: dict[str, ModelHandle] = dict(self.handles)  # see `StageRecord.generator`
        self._datasets: dict[str, Any] = {}
        self.dry_run, self.overridden = dry_run, set(overridden)
        self._card, self.elsewhere = card, elsewhere
        self._detects_card = card == DETECT_CARD  # this machine's own hardware: its lacks are errors
        self.model_built_by_run = model_built_by_run
        self.schemas: dict[str, DatasetSchema] = {}  # what the preflight saw of each dataset, by stage
        self.notes: list[str] = []  # what the preflight could not check here, and why
        self.longest_prompts: dict[str, int] = {}  # each stage's longest prompt in tokens, from the whole-file scan
        self.evaluation_seen = 0  # evaluation prompts also in a stage's training data
        self.untemplated = False  # the preflight found a tokenizer without a chat template
        self.tokenizer: Any = None  # the base model's tokenizer, once the preflight loaded it
        self.context: tuple[int, str] | None = None  # the model's context (tokens, where it was read)

    # ----------------------------------------------------------------------------------------- plan and checks

    @property
    def base_model_path(self) -> str:
        model = self.recipe.model
        if model.tiny is not None:
            return str(self.recipe.run_dir / BASE_MODEL_DIR)
        return resolve_model_name(model.model_name_or_path)  # a named offline model: its converted checkpoint

    @property
    def prefills_think(self) -> bool:
        return bool(self.template and self.template.prefills_think)

    @property
    def card(self) -> tuple[str, float] | None:
        """(name, GB) of the GPU the memory check sizes for; None without one."""
        if self._card == DETECT_CARD:
            self._card = card_memory_gb()
        return self._card

    @property
    def vllm_installed(self) -> bool:
        return importlib.util.find_spec("vllm") is not None

    def plan_lines(self) -> list[str]:
        """The resolved plan: each stage, what will happen to it, where it writes, its settings and its cost
        (`trl_r1.pipeline.plan`)."""
        from .plan import plan_lines

        costs: dict[str, Any] = {}
        for plan in self.recipe.stages:
            if plan.config is not None:
                costs[plan.name] = STAGE_REGISTRY[plan.name].cost(plan, self, costs)
        return plan_lines(self, costs)

    def stage_notes(self, plan: StagePlan) -> list[str]:
        """What the plan says under a stage besides its action: why a `redo` (the keys that changed, or the
        earlier stage that is redone) and where its old outputs go; that a finished stage is evaluated again."""
        status = self.status[plan.name]
        if status == "stale":
            previous = next_previous(plan.output_dir)
            return [f"redo:     {self._redo_reason(plan)}; its old outputs move to {previous}"]
        if status == "done" and self._evaluation_outdated(plan, read_record(plan.output_dir)):
            record = read_record(plan.output_dir)
            changed = (changed_keys(record.evaluation_settings, self._evaluation_settings())
                       if record.evaluation_settings else [])
            why = ", ".join(changed) if changed else "not evaluated with these settings"
            return [f"evaluate: again ({why}); the trained model is kept"]
        return []

    def _redo_reason(self, plan: StagePlan) -> str:
        record = read_record(plan.output_dir)
        if record is not None and record.fingerprint == plan.fingerprint:
            return f"--from-stage {self.from_stage}"
        if record is None or record.settings is None:
            return "its settings changed (its stage.json is unreadable, or does not record which: an older trl-r1)"
        changed = changed_keys(record.settings, plan.settings)
        if changed:
            return "changed: " + ", ".join(changed)
        earlier = [p.name for p in self.recipe.stages[:self.recipe.stages.index(plan)] if self.status[p.name] != "done"]
        return f"an earlier stage changed ({', '.join(earlier) or 'one no longer in the recipe'})"

    def pending(self) -> list[StagePlan]:
        return [plan for plan in self.recipe.stages if self.status[plan.name] != "done"]

    def preflight(self) -> TemplateReport | None:
        """Every check before any work (`trl_r1.pipeline.preflight`): chat template, each dataset's columns and
        the keys that name them, the backends each stage needs, and the memory model against this card. Raises
        RecipeError listing every problem; returns (and keeps) the chat-template report.

        Builds the tiny model first when the recipe asks for it (a dry run builds nothing)."""
        problems = (model_path_problems(self.base_model_path, built_by_run=self.model_built_by_run)
                    if self.recipe.model.tiny is None else [])
        context = self.context = None if problems else model_context(self.base_model_path)
        if context is not None:
            problems += context_problems(self.recipe, self.pending(), context)
        self.template = None if problems else self._inspect_template()
        if self.template is not None:
            chat_stages = [s.name for s in self.pending() if STAGE_REGISTRY[s.name].trains_on_chat]
            assistant_only = [s.name for s in self.recipe.stages if s.name in chat_stages
                              and getattr(s.config, "assistant_only_loss", False)
                              and not getattr(s.config, "chat_template_path", None)]
            problems += template_problems(self.template, sft_stages=chat_stages, assistant_only_stages=assistant_only)
        self.notes += record_notes(self.recipe.stages, {p for p, s in self.status.items() if s == 'done'})
        for plan in self.pending():
            problems += STAGE_REGISTRY[plan.name].check_data(plan, self)
        ev = self.recipe.evaluation
        if ev is not None:
            problems += self.check_columns("evaluation", self._evaluation_prompts, ("prompt",), self._eval_rewards(),
                                           named=[ev])
            problems += self._held_out_problems()
        if self.untemplated:
            chat_stages = [s.name for s in self.pending() if STAGE_REGISTRY[s.name].trains_on_chat]
            problems += missing_template_problems(self.base_model_path, self._datasets, chat_stages)
        problems += run_dir_problems(self.recipe.run_dir) + value_problems(self.recipe, self.pending())
        problems += run_dir_model_problems(self.recipe.run_dir, self.base_model_path)
        self.notes += [f"{plan.name}: learning_rate 0: this stage trains no weight (its outputs equal its inputs)"
                       for plan in self.pending() if plan.model_args is not None
                       and getattr(plan.config, "learning_rate", None) == 0]
        if self.recipe.model.use_peft and self.recipe.model.tiny is None:
            problems += lora_target_problems(self.base_model_path, self.recipe.model.lora_target_modules)
        machine = backend_problems(self.recipe, self.pending(), self._rewards_by_stage(), cuda=self.card is not None)
        # what follows from the recipe fails on any machine, the card planned for included
        problems += generation_backend_problems(self.recipe, self.pending(), self.notes, elsewhere=self.elsewhere)
        self.notes += ignored_key_notes(self.pending(), self.recipe.shared.get("training", {}))
        machine += tracker_problems(self.pending())
        if self._detects_card and self.card is None or self.elsewhere:
            # bf16 on a card without it belongs with the recipe's problems: the cards table (pipeline/cards.py,
            # branch first-run-plan) names the card's bf16; until then bf16 is judged on this machine only
            machine += precision_problems(self.pending())
        if self.card is not None:
            problems += card_precision_problems(self.pending(), self.card)
            self.notes += cpu_stage_notes(self.pending(), self.card)
        if self.elsewhere:
            self.notes += [f"this machine, not the GPU planned for: {p}" for p in machine]
        else:
            problems += machine
        problems += self._memory_problems()
        if problems:
            raise RecipeError(problems)
        return self.template

    def _held_out_problems(self) -> list[str]:
        """The evaluation set against each stage's training data (`data.scan.held_out_problems`)."""
        held_out = self._datasets.get("evaluation")
        if held_out is None or not hasattr(held_out, "column_names"):
            return []
        trained = {key: data for key, data in self._datasets.items()
                   if self.recipe.stage(key) is not None and hasattr(data, "column_names")}
        ev = self.recipe.evaluation
        same_source = frozenset(key for key in trained if (plan := self.recipe.stage(key)).args is not None
                                and getattr(plan.args, "dataset_name", None) == ev.dataset_name
                                and getattr(plan.args, "dataset_train_split", None) == ev.dataset_split)
        problems, warnings = held_out_problems(held_out, trained, same_source)
        self.evaluation_seen = seen_in_training(held_out, trained)  # the report then does not say held-out
        for warning in warnings:
            logger.warning(warning)
        self.notes += warnings
        return problems

    def _rewards_by_stage(self) -> dict[str, list[Any]]:
        """The reward entries each pending stage (and the evaluation) scores with."""
        rewards = {plan.name: STAGE_REGISTRY[plan.name].rewards(plan, self) for plan in self.pending()
                   if hasattr(STAGE_REGISTRY[plan.name], "rewards")}
        if self.recipe.evaluation is not None:
            rewards["evaluation"] = self._eval_rewards()
        return rewards

    def _memory_problems(self) -> list[str]:
        if self.card is None:
            self.notes.append("memory: no GPU here, so the memory model was not checked against a card (it is "
                              "checked on the GPU machine)")
            return []
        shape = model_shape(self.base_model_path)
        if shape is None:
            self.notes.append(f"memory: no config.json for {self.base_model_path} at hand, so the memory model was "
                              "not checked")
            return []
        return memory_problems(self.recipe, self.pending(), shape, self.card, vllm_installed=self.vllm_installed,
                               longest_prompts=self.longest_prompts)

    def _inspect_template(self) -> TemplateReport | None:
        from transformers import AutoTokenizer

        tiny = self.recipe.model.tiny
        if tiny is not None and not self.dry_run:
            self._build_tiny_model()
        try:
            if tiny is not None and self.dry_run:  # its tokenizer alone (a second), the model is built by the run
                from ..toy.tiny import build_tokenizer

                tokenizer = build_tokenizer(**{k: tiny[k] for k in ("vocab_size", "prefill_think") if k in tiny})
            else:
                tokenizer = AutoTokenizer.from_pretrained(self.base_model_path)
        except (OSError, ValueError) as exc:
            logger.warning("cannot load the tokenizer of %s to check its chat template: %s", self.base_model_path, exc)
            self.notes.append(f"chat template: not checked, the tokenizer of {self.base_model_path} cannot be loaded "
                              f"here ({type(exc).__name__})")
            return None
        self.tokenizer = tokenizer
        self.untemplated = tokenizer.chat_template is None
        if self.untemplated:
            return None
        return inspect_chat_template(tokenizer)

    # ----------------------------------------------------------------------------------------- what stages ask

    def cached(self, key: str, load: Callable[[], Any]) -> Any:
        """A dataset loaded once per run (per process)."""
        if key not in self._datasets:
            self._datasets[key] = load()
        return self._datasets[key]

    def stage_data(self, key: str, args: Any, split_attribute: str = "dataset_train_split") -> Any:
        """The dataset a stage's arguments (a `DataArguments`-like object) point at, standard column names."""
        return self.load_data(key, args.dataset_name, split=getattr(args, split_attribute), config=args.dataset_config,
                              kwargs=args.dataset_kwargs, max_samples=getattr(args, "max_samples", None),
                              rename={"prompt_column": args.prompt_column, "solution_column": args.solution_column})

    def load_data(self, key: str, name: str, **spec: Any) -> Any:
        """A dataset loaded once per run (`data.load_stage_dataset`); on a dry run a Hub dataset's first rows."""
        def load():
            dataset, self.schemas[key] = load_stage_dataset(name, streaming=self.dry_run, **spec)
            return dataset

        return self.cached(key, load)

    def check_columns(self, where: str, load: Callable[[], Any], needed: tuple[str, ...], rewards: list[Any], *,
                      named: list[Any] = (), any_of: tuple[tuple[str, ...], ...] = ()) -> list[str]:
        """Problems with a dataset's columns: a key of `named` (config objects) that names a column it lacks, the
        stage's own needs (`needed`, and one of the `any_of` sets), and what its rewards declare they read. A key
        naming a missing column is the one mistake: what would follow from it is not reported again."""
        from ..rewards import get_reward_funcs
        from ..rewards.base import column_problems, declared

        problems = [p for obj in named if obj is not None for p in dataset_kwargs_problems(where, obj)]
        if problems:
            return problems
        try:
            dataset = load()
            columns = list(dataset.column_names)
        except ConnectionError as exc:  # no Hub here: a dry run says so; a run cannot train without the data
            if not self.dry_run:
                return [f"{where}: cannot load the dataset: {type(exc).__name__}: {exc}"]
            self.notes.append(f"{where}: dataset not checked, the Hub is not reachable here ({exc})")
            return []
        except StopIteration:  # `datasets`' json builder on blank lines
            return [f"{where}: the dataset has no rows"]
        except EmptyDatasetError as exc:
            return [f"{where}: the dataset has no rows ({exc})"]
        except SplitError as exc:
            return [f"{where}: key {split_key(named)!r}: {exc}"]
        except LocalDataError as exc:
            return [f"{where}: key 'dataset_name': {exc}"]
        except Exception as exc:  # a dataset that cannot be loaded is reported, not a crash
            return [f"{where}: cannot load the dataset: {type(exc).__name__}: {exc}"]
        if not len(dataset):
            return [f"{where}: the dataset has no rows after its split and max_samples ({rows_asked(named)}); "
                    "select at least one"]
        published = self.schemas[where].columns if where in self.schemas else columns
        problems = [p for obj in named if obj is not None
                    for p in column_key_problems(where, *set_column_keys(obj), published)]
        if problems:
            return problems
        problems = [f"{where}: the dataset has no {c!r} column (columns: {columns}){column_hint(c, columns)}"
                    for c in needed if c not in columns]
        if any_of and not any(set(c) <= set(columns) for c in any_of):
            wanted = " or ".join(" + ".join(repr(c) for c in group) for group in any_of)
            problems.append(f"{where}: the dataset has columns {columns}; it needs {wanted}")
        for func in get_reward_funcs(rewards):
            missing = column_problems(func, columns)
            problems += [f"{where}: {problem}" for problem in missing]
            if not problems:
                read = (*declared(func, "required_columns"), *declared(func, "reference_columns"))
                needed_values = [c for c in read if c in columns]
                problems += missing_value_problems(where, dataset, needed_values, named)
        problems = unique(problems) + conversation_problems(where, dataset)
        if not problems and "prompt" in needed and self.tokenizer is not None and self.context is not None:
            problems += long_prompt_problems(where, dataset, self.tokenizer, self.context)
        plan = self.recipe.stage(where)
        if not problems and "prompt" in needed and self.tokenizer is not None and plan is not None:
            budget = prompt_budget(plan.config, self.context)
            fast_key = getattr(plan.config, "fast_generation_max_prompt_length", None)
            lengths = dataset_scan(where, dataset, self.tokenizer, budget[0] if budget else fast_key) \
                if budget or fast_key else None
            problems += budget_problems(where, dataset, self.tokenizer, budget, lengths)
            if lengths is not None and fast_key:
                self.longest_prompts[where] = lengths.longest
                fast_problems, fast_notes = fast_prompt_problems(
                    where, plan.config, lengths, refuse=plan.config.fast_generation == "on" or self.card is not None)
                problems += fast_problems
                self.notes += fast_notes
        if not problems:
            self.notes += duplicate_prompt_notes(where, dataset) + think_tag_notes(where, dataset)
        return problems

    def adapted(self, rewards: list[Any]) -> list[Any]:
        """Reward entries adapted to the chat template (see `templates.adapt_rewards`)."""
        return adapt_rewards(rewards, self.template) if self.template is not None else list(rewards)

    def start_from(self, stages: tuple[str, ...]) -> ModelHandle:
        """The model of the first of `stages` that produced one ("base" names the base model), else the base."""
        return next((self.handles[s] for s in stages if s in self.handles), self.handles["base"])

    def generator_from(self, stages: tuple[str, ...]) -> ModelHandle:
        """Like `start_from`, the model to generate from: a LoRA stage's adapter on its base, never its merged copy."""
        return next((self.generators[s] for s in stages if s in self.generators), self.generators["base"])

    def output_of(self, stage: str, key: str) -> Any:
        """One output of an earlier stage's record (None when the recipe has no such stage)."""
        plan = self.recipe.stage(stage)
        record = read_record(plan.output_dir) if plan is not None else None
        return record.outputs.get(key) if record is not None else None

    # ----------------------------------------------------------------------------------------- running

    def run(self) -> dict[str, Any] | None:
        """Run every stage that is not done, evaluate, and write the report; returns the report (on every rank)."""
        from .report import terminal_summary, write_report

        def start() -> TemplateReport | None:
            self.recipe.run_dir.mkdir(parents=True, exist_ok=True)
            return self.preflight()

        self.template = self.ranks.on_main(start)
        if self.ranks.is_main:  # the plan's costs use what the main process's preflight saw
            for line in self.plan_lines():
                self.echo(line)
        base_evaluation = self.ranks.on_main(self._base_evaluation)
        for plan in self.recipe.stages:
            stage, status = STAGE_REGISTRY[plan.name], self.status[plan.name]
            if status == "done":
                self.echo(f"[{plan.name}] done earlier, skipped")
                record = self.ranks.on_main(lambda: self._reevaluated(plan, read_record(plan.output_dir)))
            else:
                self.ranks.on_main(lambda: prepare_stage_dir(plan, status))
                self.echo(f"[{plan.name}] {'resuming' if status == 'resume' else 'running'}")
                if stage.data_parallel:
                    result = stage.run(plan, self)
                    record = self.ranks.on_main(lambda: self._finish(stage, plan, result))
                else:
                    record = self.ranks.on_main(lambda: self._finish(stage, plan, stage.run(plan, self)))
                self.echo(f"[{plan.name}] done in {record.seconds:.0f}s")
            if record is not None and record.handle is not None:
                self.handles[plan.name], self.generators[plan.name] = record.handle, record.generator

        def report() -> dict[str, Any]:
            written = write_report(self.recipe.run_dir, [s.name for s in self.recipe.stages], base_evaluation,
                                   stage_dirs={s.name: s.output_dir for s in self.recipe.stages},
                                   seen_in_training=self.evaluation_seen)
            self.echo(terminal_summary(written))
            self.echo(f"report: {self.recipe.run_dir / 'report.md'}")
            return written

        return self.ranks.on_main(report)

    def _finish(self, stage: Any, plan: StagePlan, result: Any) -> StageRecord:
        """Main process: the stage's record (hand-off, metrics), its held-out evaluation, written to stage.json."""
        began = time.perf_counter()
        record = stage.record(plan, self, result)
        handed_on = time.perf_counter()
        if record.generator is not None:
            record.evaluation = self._evaluate(plan.name, record.generator)
            record.evaluation_settings = self._evaluation_settings() if record.evaluation is not None else None
        record.settings = plan.settings
        if (source := data_file(plan)) is not None:  # a later edit of the file is noted, a touch is not
            record.metrics["data_file"] = file_stamp(source)
        # what the other ranks waited for (merging, evaluation), next to the stage's own `seconds`
        record.metrics["main_process_seconds"] = {"record": round(handed_on - began, 3),
                                                  "evaluation": round(time.perf_counter() - handed_on, 3)}
        write_record(plan.output_dir, record)
        return record

    def _reevaluated(self, plan: StagePlan, record: StageRecord | None) -> StageRecord | None:
        """A finished stage's record, its held-out evaluation run again where the evaluation settings changed
        since (the evaluation is not part of a stage's fingerprint: no training stage is redone for it)."""
        if not self._evaluation_outdated(plan, record):
            return record
        record.evaluation = self._evaluate(plan.name, record.generator)
        record.evaluation_settings = self._evaluation_settings()
        write_record(plan.output_dir, record)
        return record

    def _evaluation_outdated(self, plan: StagePlan, record: StageRecord | None) -> bool:
        ev = self.recipe.evaluation
        return (ev is not None and plan.name in ev.stages and record is not None and record.generator is not None
                and record.evaluation_settings != self._evaluation_settings())

    def _evaluation_settings(self) -> dict[str, Any]:
        """What a stage's evaluation depends on besides its model: the recipe's evaluation keys and its rewards."""
        return json.loads(json.dumps({"evaluation": self.recipe.shared.get("evaluation", {}),
                                      "sampling": {"seed": self.recipe.evaluation.seed},  # the run's, by default
                                      "rewards": {"entries": self._eval_reward_entries()}}, default=str))

    def _eval_reward_entries(self) -> list[Any]:
        trained_with = [p.args.rewards for p in self.recipe.stages
                        if isinstance(getattr(p.args, "rewards", None), list)]
        return self.recipe.evaluation.rewards or (trained_with[0] if trained_with else DEFAULT_EVAL_REWARDS)

    def _eval_rewards(self) -> list[Any]:
        return self.adapted(self._eval_reward_entries())

    def _evaluation_prompts(self):
        return self.stage_data("evaluation", self.recipe.evaluation, split_attribute="dataset_split")

    def _evaluate(self, stage: str, handle: ModelHandle) -> dict[str, float] | None:
        """Held-out scores of a stage's model; an adapter is loaded on its base as the stage trained it
        (`StagePlan.evaluation_4bit`: a stage may set its own `load_in_4bit`)."""
        from .evaluate import evaluate_model

        ev, plan = self.recipe.evaluation, self.recipe.stage(stage)
        if ev is None or stage not in ev.stages:
            return None
        self.echo(f"[{stage}] evaluating on held-out prompts")
        return evaluate_model(handle.model_path, self._evaluation_prompts(), ev, self._eval_rewards(),
                              adapter_path=handle.adapter_path, seed=ev.seed,
                              load_in_4bit=plan is not None and plan.evaluation_4bit)

    def _base_evaluation(self) -> dict[str, float] | None:
        """The untrained model's held-out scores (cached in the run directory, keyed by the settings)."""
        ev = self.recipe.evaluation
        if ev is None or "base" not in ev.stages:
            return None
        path = self.recipe.run_dir / BASE_EVALUATION
        key = _digest({"model": self.base_model_path, "tiny": self.recipe.model.tiny, "evaluation": str(ev),
                       "rewards": self._eval_rewards()})  # by default the RL stage's: an edit there counts too
        try:
            cached = json.loads(path.read_text())
            if cached.get("key") == key:
                return cached["results"]
        except (OSError, ValueError):
            pass
        results = self._evaluate("base", ModelHandle(self.base_model_path))
        path.write_text(json.dumps({"key": key, "results": results}, indent=2))
        return results

    def _build_tiny_model(self) -> None:
        """Build the recipe's tiny model into the run directory, or reuse the one built with the same settings
        (a model built with other `model.tiny` settings is rebuilt: the stages are then stale too)."""
        import shutil

        from ..toy import build_tiny_model

        out = self.recipe.run_dir / BASE_MODEL_DIR
        stamp, settings = out / TINY_SETTINGS, json.dumps(self.recipe.model.tiny, sort_keys=True, default=str)
        if out.exists() and (not stamp.exists() or stamp.read_text() != settings):
            logger.info("model.tiny changed since %s was built: rebuilding it", out)
            shutil.rmtree(out)
        build_tiny_model(out, **self.recipe.model.tiny)
        stamp.write_text(settings)


__all__ = ["Pipeline"]
