"""The preflight: every check that needs more than the recipe's text, before any work (and all of `--dry-run`).

`plan_problems` runs them all, in one call, and returns every problem at once, one per real mistake, each naming
its stage (section) and key; what it could not check here goes into the run's notes:

* data (`Stage.check_data`, through `dataset_problems`): each dataset's schema, from its real loader
  (`pipeline.data.load_stage_dataset`: a builder's or local file's real rows; a Hub id, or its local mirror
  under TRL_R1_DATA_DIR, streamed for its first rows on a dry run). A column a key names (`prompt_column`,
  `solution_column`, `dataset_text_field`) must exist; the columns a stage and its rewards need must exist; a
  `messages` or `prompt` column must hold conversations the template renders (`conversation_problems`); a `split` in `dataset_kwargs` is for
  builders only (`dataset_kwargs_problems`).
* the model (`model_path_problems`): a local `model_name_or_path` that does not exist.
* the chat template (`templates.template_problems`; `missing_template_problems` where the tokenizer has none).
* backends (`backend_problems`): vLLM where a stage asks for it, bitsandbytes where a stage loads 4-bit, the
  code sandbox (bubblewrap) where a reward runs programs; each error gives the install command.
* memory (`memory_problems`): the memory model (`trl_r1.trainers.memory`) must say each stage fits the card
  planned for (`--card`, else `torch.cuda`); without a GPU the check is skipped with a note.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch

from ..data.fast_generation import fast_prompt_budget
from ..data.loading import EmptyDatasetError, LocalDataError, SplitError
from ..data.scan import (
    budget_problems,
    column_values,
    dataset_scan,
    duplicate_prompt_notes,
    held_out_problems,
    prompt_budget,
    seen_in_training,
    think_tag_notes,
)
from ..trainers import memory
from ..trainers.memory import card_memory_gb, model_shape
from ..trainers.speed import card_named, card_text
from .fingerprint import record_notes
from .key_effects import ignored_key_notes
from .recipe import STAGE_REGISTRY, same_text_once
from ..trainers.chat_templates import TemplateReport, inspect_chat_template, template_problems

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedTokenizerBase, TrainingArguments

    from ..data.rejection_sampling import RejectionSamplingConfig
    from ..data.scan import PromptScan
    from ..trainers.memory import GRPOSettings, ModelShape
    from .data import StageDatasets
    from .fingerprint import ModelHandle, StageRecord
    from .ranks import Ranks
    from .recipe import DataArguments, EvaluationConfig, R1ModelConfig, Recipe, SectionConfig, StagePlan

    Named = DataArguments | EvaluationConfig | SectionConfig | None  # a section's objects whose keys name data

logger = logging.getLogger("trl_r1.pipeline")


class Evaluating(Protocol):
    """What the preflight and the plan read of the run's held-out evaluation (`evaluate.HeldOutEvaluation`)."""

    def rewards(self) -> list[Any]: ...

    def prompts(self) -> Dataset: ...

    def settings(self) -> dict[str, Any]: ...

    def outdated(self, plan: StagePlan, record: StageRecord | None) -> bool: ...


class Run(Protocol):
    """What the preflight, the plan and the stages read of a run (`runner.Pipeline`), and what the preflight fills
    in for the plan (a protocol: the runner imports this module)."""

    recipe: Recipe
    base_model_path: str
    dry_run: bool
    elsewhere: bool  # the plan is for a card on another machine: what this one lacks is a note
    detects_card: bool  # the card is this machine's own: what it lacks is an error
    model_built_by_run: bool
    card: tuple[str, float] | None
    status: dict[str, str]
    evaluation: Evaluating
    notes: list[str]
    data: StageDatasets
    longest_prompts: dict[str, int]
    evaluation_seen: int
    tokenizer: PreTrainedTokenizerBase | None
    context: tuple[int, str] | None
    template: TemplateReport | None
    from_stage: str | None
    overridden: set[str]
    ranks: Ranks
    prefills_think: bool

    def pending(self) -> list[StagePlan]: ...

    def adapted(self, rewards: list[Any]) -> list[Any]: ...

    def start_from(self, stages: tuple[str, ...]) -> ModelHandle: ...

    def generator_from(self, stages: tuple[str, ...]) -> ModelHandle: ...

    def output_of(self, stage: str, key: str) -> Any: ...


def plan_problems(run: Run) -> list[str]:
    """Every problem of the run's plan, checked before any work: the model, the chat template, each pending stage's
    data (`Stage.check_data`) and the evaluation set's, values, backends, precision and memory on the card planned
    for. What cannot be checked here becomes one of `run.notes`; a refusal that depends only on this machine is a
    note too when the plan is for a card elsewhere (`run.elsewhere`)."""
    recipe, pending = run.recipe, run.pending()
    problems = (model_path_problems(run.base_model_path, built_by_run=run.model_built_by_run)
                if recipe.model.tiny is None else [])
    run.context = None if problems else model_context(run.base_model_path)
    if run.context is not None:
        problems += context_problems(recipe, pending, run.context)
    run.template = None if problems else _template(run)
    chat_stages = [s.name for s in pending if STAGE_REGISTRY[s.name].trains_on_chat]
    if run.template is not None:
        assistant_only = [s for s in chat_stages if getattr(recipe.stage(s).config, "assistant_only_loss", False)
                          and not getattr(recipe.stage(s).config, "chat_template_path", None)]
        problems += template_problems(run.template, sft_stages=chat_stages, assistant_only_stages=assistant_only)
    run.notes += record_notes(recipe.stages, {p for p, s in run.status.items() if s == "done"})
    for plan in pending:
        problems += STAGE_REGISTRY[plan.name].check_data(plan, run)
    if recipe.evaluation is not None:
        problems += dataset_problems(run, "evaluation", run.evaluation.prompts, ("prompt",),
                                     run.evaluation.rewards(), named=[recipe.evaluation])
        problems += _held_out_problems(run)
    if run.tokenizer is not None and run.tokenizer.chat_template is None:
        problems += missing_template_problems(run.base_model_path, run.data.loaded, chat_stages)
    problems += run_dir_problems(recipe.run_dir) + value_problems(recipe, pending)
    problems += run_dir_model_problems(recipe.run_dir, run.base_model_path)
    run.notes += [f"{plan.name}: learning_rate 0: this stage trains no weight (its outputs equal its inputs)"
                  for plan in pending if plan.model_args is not None and getattr(plan.config, "learning_rate", None) == 0]
    if recipe.model.use_peft and recipe.model.tiny is None:
        problems += lora_target_problems(run.base_model_path, recipe.model.lora_target_modules)
    rewards = {plan.name: STAGE_REGISTRY[plan.name].rewards(plan, run) for plan in pending
               if hasattr(STAGE_REGISTRY[plan.name], "rewards")}
    if recipe.evaluation is not None:
        rewards["evaluation"] = run.evaluation.rewards()
    machine = backend_problems(pending, rewards) + tracker_problems(pending)
    # what follows from the recipe fails on any machine, the card planned for included
    problems += generation_backend_problems(recipe, pending, run.notes, elsewhere=run.elsewhere)
    run.notes += ignored_key_notes(pending, recipe.shared.get("training", {}))
    if run.detects_card and run.card is None or run.elsewhere:
        # bf16 on a card without it belongs with the recipe's problems (`card_precision_problems`); bf16 on this
        # machine without a GPU is this machine's
        machine += precision_problems(pending)
    if run.card is not None:
        problems += card_precision_problems(pending, run.card)
        run.notes += cpu_stage_notes(pending, run.card)
    if run.elsewhere:
        run.notes += [f"this machine, not the GPU planned for: {p}" for p in machine]
    else:
        problems += machine
    size_generation(run)
    return problems + _memory_problems(run)


def _template(run: Run) -> TemplateReport | None:
    """The chat template's report (`templates.inspect_chat_template`), the tokenizer kept on `run`; None (and a
    note) where the tokenizer cannot be loaded here, or has no template."""
    from transformers import AutoTokenizer

    tiny = run.recipe.model.tiny
    try:
        if tiny is not None and run.dry_run:  # its tokenizer alone (a second), the model is built by the run
            from ..toy.tiny import build_tokenizer

            run.tokenizer = build_tokenizer(**{k: tiny[k] for k in ("vocab_size", "prefill_think") if k in tiny})
        else:
            run.tokenizer = AutoTokenizer.from_pretrained(run.base_model_path)
    except (OSError, ValueError) as exc:
        logger.warning("cannot load the tokenizer of %s to check its chat template: %s", run.base_model_path, exc)
        run.notes.append(f"chat template: not checked, the tokenizer of {run.base_model_path} cannot be loaded "
                         f"here ({type(exc).__name__})")
        return None
    return None if run.tokenizer.chat_template is None else inspect_chat_template(run.tokenizer)


def _held_out_problems(run: Run) -> list[str]:
    """The evaluation set against each stage's training data (`data.scan.held_out_problems`)."""
    held_out, recipe = run.data.loaded.get("evaluation"), run.recipe
    if held_out is None or not hasattr(held_out, "column_names"):
        return []
    trained = {key: data for key, data in run.data.loaded.items()
               if recipe.stage(key) is not None and hasattr(data, "column_names")}
    ev = recipe.evaluation
    same_source = frozenset(key for key in trained if (plan := recipe.stage(key)).args is not None
                            and getattr(plan.args, "dataset_name", None) == ev.dataset_name
                            and getattr(plan.args, "dataset_train_split", None) == ev.dataset_split)
    problems, warnings = held_out_problems(held_out, trained, same_source)
    run.evaluation_seen = seen_in_training(held_out, trained)  # the report then does not say held-out
    for warning in warnings:
        logger.warning(warning)
    run.notes += warnings
    return problems


def _memory_problems(run: Run) -> list[str]:

    if run.card is None:
        run.notes.append("memory: no GPU here, so the memory model was not checked against a card (it is checked "
                         "on the GPU machine)")
        return []
    shape = model_shape(run.base_model_path)
    if shape is None:
        run.notes.append(f"memory: no config.json for {run.base_model_path} at hand, so the memory model was not "
                         "checked")
        return []
    return memory_problems(run.recipe, run.pending(), shape, run.card, longest_prompts=run.longest_prompts)


PROMPT_COLUMNS = ("problem", "question", "query", "instruction", "input")  # what other datasets call the prompt


def column_hint(needed: str, columns: list[str]) -> str:
    """The key that maps a dataset's own prompt column (GSM8K's 'question', MATH's 'problem') to 'prompt'."""
    found = [c for c in PROMPT_COLUMNS if c in columns] if needed == "prompt" else []
    return f"; set prompt_column: {found[0]} (the column holding the prompt)" if found else ""


def dataset_problems(run: Run, where: str, load: Callable[[], Dataset], needed: tuple[str, ...], rewards: list[Any],
                     *, named: list[Named] = (), any_of: tuple[tuple[str, ...], ...] = ()) -> list[str]:
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
        if not run.dry_run:
            return [f"{where}: cannot load the dataset: {type(exc).__name__}: {exc}"]
        run.notes.append(f"{where}: dataset not checked, the Hub is not reachable here ({exc})")
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
    published = run.data.schemas[where].columns if where in run.data.schemas else columns
    problems = [p for obj in named if obj is not None
                for p in column_key_problems(where, obj, published)]
    if problems:
        return problems
    problems = [f"{where}: the dataset has no {c!r} column (columns: {columns}){column_hint(c, columns)}"
                for c in needed if c not in columns]
    if any_of and not any(set(c) <= set(columns) for c in any_of):
        wanted = " or ".join(" + ".join(repr(c) for c in group) for group in any_of)
        problems.append(f"{where}: the dataset has columns {columns}; it needs {wanted}")
    for func in get_reward_funcs(rewards):
        problems += [f"{where}: {problem}" for problem in column_problems(func, columns)]
        if not problems:
            read = (*declared(func, "required_columns"), *declared(func, "reference_columns"))
            problems += missing_value_problems(where, dataset, [c for c in read if c in columns], named)
    problems = unique(problems) + conversation_problems(where, dataset)
    if not problems and "prompt" in needed and run.tokenizer is not None:
        problems += _prompt_length_problems(run, where, dataset)
    if not problems:
        run.notes += duplicate_prompt_notes(where, dataset) + think_tag_notes(where, dataset)
    return problems


def _prompt_length_problems(run: Run, where: str, dataset: Dataset) -> list[str]:
    """Prompts against the model's context, the stage's prompt budget and its fast path's
    (`fast_prompt_problems`), from one scan of the data, which also records the longest (`run.longest_prompts`)."""
    problems = long_prompt_problems(where, dataset, run.tokenizer, run.context) if run.context is not None else []
    plan = run.recipe.stage(where)
    if problems:
        return problems
    budget = prompt_budget(plan.config, run.context) if plan is not None else None
    if plan is None and run.recipe.evaluation.num_prompts:  # the evaluation generates for its first prompts only
        dataset = dataset.select(range(min(len(dataset), run.recipe.evaluation.num_prompts)))
    fast_key = getattr(plan.config, "fast_generation_max_prompt_length", None) if plan is not None else None
    # the whole set's longest prompt: what the memory model and the batches are sized for (`prompt_tokens`)
    lengths = dataset_scan(where, dataset, run.tokenizer, budget[0] if budget else fast_key or PROMPT_TOKENS)
    if lengths is not None:
        run.longest_prompts[where] = lengths.longest
    problems += budget_problems(where, dataset, run.tokenizer, budget, lengths)
    if lengths is not None and fast_key:
        fast_problems, fast_notes = fast_prompt_problems(
            plan, lengths, refuse=plan.config.fast_generation == "on" or run.card is not None)
        problems += fast_problems
        run.notes += fast_notes
    return problems


COLUMN_KEYS = ("prompt_column", "solution_column", "dataset_text_field")  # keys whose value names a column
PROMPT_TOKENS = 512  # the prompt length the memory model and the plan assume where the data was not scanned


def column_key_problems(where: str, obj: Named, columns: list[str]) -> list[str]:
    """A key of the config dataclass `obj` that names a column the dataset does not have is an error
    (`solution_column: answr` would otherwise be ignored and another column silently scored). Keys left at their
    default are checked by what needs them."""
    return [f"{where}: key {f.name!r}: the dataset has no {value!r} column (columns: {columns})"
            for f in dataclasses.fields(obj)
            if f.name in COLUMN_KEYS and (value := getattr(obj, f.name)) != f.default and value not in columns]


CHAT_ROLES = ("system", "user", "assistant", "tool", "developer")  # the roles chat templates render
SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant"}
CHECKED_ROWS = 10_000  # rows the conversation checks read (a column slice: fast even on a large file)


def conversation_problems(where: str, dataset: Dataset, rows: int = CHECKED_ROWS) -> list[str]:
    """The conversations a stage renders with the chat template, checked on the first `rows` rows, one problem per
    column naming the row and the fix: a `messages` column holds lists of {role, content} turns whose roles the
    template knows (ShareGPT's human/gpt are not), with text content and an assistant turn to learn from; a
    `prompt` column holds non-empty texts or such turn lists (a list of strings renders as nothing). Each would
    otherwise pass the dry run and fail the trainer at its first batch, or train on empty text."""
    problems = []
    head = dataset.select(range(min(rows, len(dataset))))
    if "messages" in dataset.column_names:
        problems += _turns_problems(where, "messages", head["messages"], needs_assistant=True)
    if "prompt" in dataset.column_names:
        prompts = head["prompt"]
        if any(not isinstance(p, str) for p in prompts):
            problems += _turns_problems(where, "prompt", prompts, needs_assistant=False)
        else:
            empty = [i for i, p in enumerate(prompts) if not p.strip()]
            if empty:
                problems.append(f"{where}: column 'prompt': {len(empty)} of {len(prompts)} rows have an empty "
                                f"prompt (first: row {empty[0]}, counted from 0); remove them or fill them in")
    return problems


def long_prompt_problems(where: str, dataset: Dataset, tokenizer: PreTrainedTokenizerBase, context: tuple[int, str],
                         rows: int = 1000) -> list[str]:
    """Prompts (the first `rows`, rendered as the stage renders them) that fill the model's whole context leave
    no room to generate: the run would fail or score empty completions. One line: how many, the first, the fix."""
    limit, source = context
    head = dataset.select(range(min(rows, len(dataset))))["prompt"]
    too_long = []
    for i, prompt in enumerate(head):
        if isinstance(prompt, str):
            tokens = len(tokenizer(prompt)["input_ids"])
        elif tokenizer.chat_template is not None:
            try:
                tokens = len(tokenizer.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True,
                                                                return_dict=False))
            except Exception as exc:  # jinja's error on content the template cannot render, e.g. a list of parts
                return [f"{where}: column 'prompt', row {i} (counted from 0): the chat template cannot render it "
                        f"({type(exc).__name__}: {exc}); write each turn's content as one text"]
        else:
            continue
        if tokens >= limit:
            too_long.append((i, tokens))
    if not too_long:
        return []
    i, tokens = too_long[0]
    return [f"{where}: column 'prompt': {len(too_long)} of {len(head)} prompts fill the model's context of {limit} "
            f"tokens (max_position_embeddings in {source}), leaving no room to answer (first: row {i}, {tokens} "
            "tokens); shorten or drop them"]


def short_max_length_problems(where: str, dataset: Dataset, tokenizer: PreTrainedTokenizerBase, max_length: int,
                              rows: int = 200) -> list[str]:
    """An SFT `max_length` below every one of the first `rows` examples (rendered with the chat template) drops
    them all (`stages.DropLongExamples`): the stage would fail after loading the model, or train on nothing."""
    if "messages" not in dataset.column_names or tokenizer.chat_template is None:
        return []
    head = dataset.select(range(min(rows, len(dataset))))["messages"]
    shortest = min(len(tokenizer.apply_chat_template(turns, tokenize=True, return_dict=False)) for turns in head)
    if shortest <= max_length:
        return []
    return [f"{where}: key 'max_length': {max_length} tokens is shorter than every one of the first {len(head)} "
            f"examples (the shortest: {shortest} tokens), so all would be dropped; raise it (R1 recipes: 4096 and up), or set long_examples: truncate"]


def _turns_problems(where: str, column: str, values: list[Any], *, needs_assistant: bool) -> list[str]:
    """The first row of `column` that is not a conversation the chat template can render (see
    `conversation_problems`), as one problem; [] when every row is one."""
    shape = ('a list of {role, content} turns, e.g. [{"role": "user", "content": "..."}'
             + (', {"role": "assistant", "content": "..."}]' if needs_assistant else "]")
             + (" (or one text)" if column == "prompt" else ""))
    for i, turns in enumerate(values):
        at = f"{where}: column {column!r}, row {i} (counted from 0)"
        if column == "prompt" and isinstance(turns, str):
            continue
        if not (isinstance(turns, list) and turns):
            return [f"{at} is {type(turns).__name__} {str(turns)[:60]!r}, not {shape}"]
        for j, turn in enumerate(turns):
            if not (isinstance(turn, dict) and {"role", "content"} <= set(turn)):
                return [f"{at}, turn {j} is {type(turn).__name__} {str(turn)[:40]!r}; a conversation is {shape}"]
            role = turn["role"]
            if role not in CHAT_ROLES:
                rename = (f"; rename the ShareGPT roles ({', '.join(f'{k} -> {v}' for k, v in SHAREGPT_ROLES.items())})"
                          if role in SHAREGPT_ROLES else "")
                return [f"{at}, turn {j}: role {role!r} is none of the chat template's roles {list(CHAT_ROLES)}"
                        f"{rename}"]
            if not isinstance(turn["content"], (str, list)):
                return [f"{at}, turn {j} ({role}): content is {turn['content']!r}, not text; fill it in or drop the "
                        "row"]
        if column == "prompt" and not any(turn["role"] == "user" for turn in turns):
            return [f"{at} has no user turn ({[turn['role'] for turn in turns]}), so the model is asked nothing; "
                    "put the question in a user turn after the system turn"]
        if needs_assistant and not any(turn["role"] == "assistant" for turn in turns):
            return [f"{at} has no assistant turn, so nothing to learn from; each SFT row needs the answer as an "
                    "assistant turn (a prompt-only file belongs to the rl stage)"]
    return []


def dataset_kwargs_problems(where: str, obj: DataArguments | EvaluationConfig | SectionConfig) -> list[str]:
    """A `split` in `dataset_kwargs` is a builder function's argument; with a file, a saved dataset or a Hub id
    (often left over from a builder swapped out) `datasets` gets the split twice."""
    from ..data.loading import names_builder

    name, kwargs = getattr(obj, "dataset_name", None), getattr(obj, "dataset_kwargs", None)
    if not name or not isinstance(kwargs, dict) or "split" not in kwargs or names_builder(name):
        return []
    return [f"{where}: key 'dataset_kwargs': 'split' is an argument of a builder function, not of {name!r}; "
            f"remove it and set {split_key([obj])} instead"]


def split_key(named: list[Named]) -> str:
    """The key that picks the split of the dataset the config objects `named` describe."""
    return next(("dataset_train_split" for obj in named if hasattr(obj, "dataset_train_split")), "dataset_split")


def rows_asked(named: list[Named]) -> str:
    """The split and row limit the config objects `named` ask for, as the user wrote them."""
    obj = next((o for o in named if o is not None and hasattr(o, "dataset_name")), None)
    if obj is None:
        return "its split"
    split = getattr(obj, "dataset_train_split", None) or getattr(obj, "dataset_split", None)
    limit = getattr(obj, "max_samples", None) or getattr(obj, "num_prompts", None) or getattr(obj, "max_prompts", None)
    return f"split {split!r}" + (f", first {limit} rows" if limit else "")


def missing_value_problems(where: str, dataset: Dataset, columns: list[str], named: list[Named]) -> list[str]:
    """Rows whose gold answer (or another column a reward needs) is empty: a reward skips each such row, so a
    share of the data would silently train or score on nothing. Any such row is an error, unless the stage sets
    `allow_missing_answers: true` (then the rewards skip those rows, as a visible choice)."""
    allowing = [o for o in named if o is not None and hasattr(o, "allow_missing_answers")]
    if any(o.allow_missing_answers for o in allowing):
        return []
    source = next((o.dataset_name for o in named if getattr(o, "dataset_name", None)), "the dataset")
    problems = []
    for column in columns:
        empty = [i for i, value in enumerate(column_values(dataset, column, f"{where}: {column!r} values"))
                 if value is None or (isinstance(value, float) and math.isnan(value))  # JSON NaN: pandas' missing
                 or (isinstance(value, (str, list, dict)) and not value)
                 or (isinstance(value, str) and not value.strip())]
        if empty:
            fix = ("fill them in or drop them" + (", or set allow_missing_answers: true to keep them (the rewards "
                                                  "that need the column skip those rows)" if allowing else ""))
            problems.append(f"{where}: {source}: {len(empty)} of {len(dataset)} rows have no {column!r} (first: row "
                            f"{empty[0]}, counted from 0); {fix}")
    return problems


def unique(problems: list[str]) -> list[str]:
    """`problems` without repeats, in order (one mistake reported once)."""
    return list(dict.fromkeys(problems))


def model_path_problems(model_path: str, *, built_by_run: bool = False) -> list[str]:
    """A `model_name_or_path` that does not exist and is a path (it starts like one, '/data/models/X',
    './models/X', or is no valid Hub id 'org/name') is an error here, not at the first model load ("Repo id must
    be in the form ..."): a name that looks like a path never becomes a Hub id. A Hub id that cannot be reached
    offline is left to the tokenizer check's note. `built_by_run`: the run builds the model there (a smoke dry
    run names the folder its run builds the model in)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    from ..data.loading import looks_like_path

    path = Path(model_path).expanduser()
    if path.exists():
        return checkpoint_problems(model_path, path)
    if built_by_run:
        return []
    try:
        validate_repo_id(model_path)
        hub_id = not looks_like_path(model_path)
    except HFValidationError:
        hub_id = False
    if hub_id:
        return offline_model_problems(model_path)
    folder = path.absolute().parent
    missing = "" if folder.is_dir() else f", nor does its folder {folder}"
    return [f"model: key 'model_name_or_path': {model_path!r} does not exist{missing} (a path, so not looked up on "
            "the Hub); fix the path, or give a Hub id 'org/name'"]


def hub_offline() -> bool:
    """Whether the Hub is switched off here (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE, read now, not at import)."""
    import os

    from huggingface_hub.constants import is_offline_mode

    return is_offline_mode() or any(os.environ.get(key, "").upper() in ("1", "ON", "YES", "TRUE")
                                    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def offline_model_problems(model_path: str) -> list[str]:
    """A bare model name ('tinyy', no 'org/') with no such folder, no cached Hub snapshot and the Hub offline
    cannot load anywhere this run goes: most likely a misspelt local folder, so an error here rather than a note
    and a failed first stage. An 'org/name' id stays allowed (a laptop plans a run that downloads it on the GPU
    machine; the tokenizer check notes that it was not read)."""
    import difflib

    from huggingface_hub import try_to_load_from_cache

    if "/" in model_path or not hub_offline() or isinstance(try_to_load_from_cache(model_path, "config.json"), str):
        return []
    close = difflib.get_close_matches(model_path, [p.name for p in Path(".").iterdir() if p.is_dir()], n=1,
                                      cutoff=0.6)
    hint = f"did you mean the folder {close[0]!r}? " if close else ""
    return [f"model: key 'model_name_or_path': {model_path!r} is no folder here (paths are relative to "
            f"{Path.cwd()}), and the Hub is offline (HF_HUB_OFFLINE) with no cached snapshot of it; {hint}fix the "
            "name, or download it first (hf download <org/name>)"]


def lora_target_problems(model_path: str, targets: list[str] | str | None) -> list[str]:
    """LoRA target names the model has no linear layer for (`qkv` on a model with q_proj/k_proj/v_proj): peft
    would refuse them at the first model load, after the base evaluation. Checked on a local model folder, whose
    config builds the model with empty weights (seconds); a Hub id is left to the run."""
    if not isinstance(targets, list) or not (Path(model_path) / "config.json").is_file():
        return []
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        with init_empty_weights():
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_path))
    except (OSError, ValueError, KeyError):
        return []
    linear = sorted({name.rpartition(".")[2] for name, module in model.named_modules()
                     if isinstance(module, torch.nn.Linear)} - {"lm_head"})
    unknown = [t for t in targets if t != "all-linear" and t not in linear]
    if not unknown:
        return []
    return [f"model: key 'lora_target_modules': {unknown} name no linear layer of {model_path} (its linear layers: "
            f"{linear}); use those names, or all-linear"]


def run_dir_problems(run_dir: Path | str, key: str = "run_dir") -> list[str]:
    """A run_dir that is a file, or lies under one, fails here, not when the first stage writes its outputs.
    `key` is what the command calls it (`trl-r1 sft|grpo|ppo`: output_dir)."""
    import os
    import tempfile

    named = "run_dir (or --run-dir)" if key == "run_dir" else key
    folder = next((path for path in (Path(run_dir), *Path(run_dir).parents) if path.exists()), None)
    if folder is not None and not folder.is_dir():
        return [f"{key}: {run_dir} {'is' if folder == Path(run_dir) else f'lies under {folder}, which is'} a "
                f"file, not a folder; give {named} a folder path"]
    try:  # run_dir, or its nearest existing parent, must take a new folder: permission bits do not tell for root,
        # a read-only mount or /proc, so one is made and removed at once
        if folder is not None:
            os.rmdir(tempfile.mkdtemp(prefix=".trl-r1-write-check-", dir=folder))
    except OSError as exc:
        return [f"{key}: cannot write {run_dir}: {folder} takes no new folder ({exc.strerror}); give {named} a "
                "folder you can write"]
    return []


def run_dir_model_problems(run_dir: Path | str, model_path: str) -> list[str]:
    """A run_dir that is the base model's own folder: every stage would write its folders and records into it."""
    if not Path(model_path).is_dir() or Path(run_dir).resolve() != Path(model_path).resolve():
        return []
    return [f"run_dir: {run_dir} is the folder of model_name_or_path {model_path}; the stages would write into the "
            "model's folder; give run_dir a folder of its own (e.g. runs/NAME)"]


def checkpoint_problems(model_path: str, path: Path) -> list[str]:
    """A local `model_name_or_path` must be a model folder (its config.json), not a file, an empty folder or a
    LoRA adapter alone, which transformers would refuse at the first load, after the base evaluation."""
    key = f"model: key 'model_name_or_path': {model_path!r}"
    if path.is_file():
        return [f"{key} is a file; give the folder that holds the model's config.json and weights"]
    if (path / "config.json").is_file():
        return []
    if (path / "adapter_config.json").is_file():
        try:
            base = json.loads((path / "adapter_config.json").read_text()).get("base_model_name_or_path")
        except (OSError, ValueError):
            base = None
        return [f"{key} holds a LoRA adapter only (adapter_config.json, no config.json); set model_name_or_path to "
                f"its base model{f' ({base})' if base else ''}, or merge the adapter into it first "
                "(peft's merge_and_unload, then save_pretrained) and give that folder"]
    return [f"{key} is a folder without config.json, so not a model checkpoint; give the folder that "
            "save_pretrained wrote (config.json, weights, tokenizer), or a Hub id 'org/name'"]


def model_context(model_path: str) -> tuple[int, str] | None:
    """(context length, where it was read) of a model: `max_position_embeddings` in its local config.json, or in
    the known config of a recipe model (trl_r1.rehearsal.models, offline); None when neither says."""
    from ..rehearsal.models import MODELS

    known = {name.lower(): spec for name, spec in MODELS.items()}
    config_file = Path(model_path).expanduser() / "config.json"
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text())
        except ValueError:
            return None
        source = str(config_file)
    elif model_path.lower() in known:
        config, source = known[model_path.lower()].config, f"{known[model_path.lower()].name}'s config"
    else:
        return None
    limit = config.get("max_position_embeddings", (config.get("text_config") or {}).get("max_position_embeddings"))
    return (limit, source) if isinstance(limit, int) else None


def context_problems(recipe: Recipe, stages: list[StagePlan], context: tuple[int, str]) -> list[str]:
    """A length setting above the model's context (`model_context`) fails or silently degrades the run (131072
    on a 32k model): one error per stage and key."""
    limit, source = context
    items = [(plan.name, plan.config) for plan in stages]
    if recipe.evaluation is not None:
        items.append(("evaluation", recipe.evaluation))
    problems = []
    for where, config in items:
        for key in ("max_length", "max_completion_length", "max_new_tokens", "vllm_max_model_length"):
            value = getattr(config, key, None)
            if isinstance(value, int) and value > limit:
                problems.append(f"{where}: key {key!r}: {value} is above the model's context of {limit} tokens "
                                f"(max_position_embeddings in {source}); set it to at most {limit}")
    return problems


def missing_template_problems(model_path: str, datasets: dict[str, Any], chat_stages: list[str]) -> list[str]:
    """A tokenizer without a chat template cannot render conversational data: one error naming every stage that
    has some (`datasets`: each stage's loaded dataset, read at its first row; `chat_stages`: the stages that
    train on chat turns and have no dataset of their own loaded, e.g. SFT on rejection-sampled messages)."""
    from trl.data_utils import is_conversational

    needing = [where for where, dataset in datasets.items()
               if len(dataset) and is_conversational(dataset[0])] + [s for s in chat_stages if s not in datasets]
    if not needing:
        return []
    return [f"model: the tokenizer of {model_path} has no chat template, and {', '.join(needing)} render "
            "conversational data (messages / prompt turns) with one; use a model whose tokenizer has a chat "
            "template (an -Instruct model), or add one to its tokenizer_config.json"]


# --------------------------------------------------------------------------------------------- backends


def install_hint(extra: str) -> str:
    """How to install an optional dependency: its pinned requirement from trl-r1's own metadata."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        pinned = [r.split(";")[0].strip() for r in requires("trl-r1") or [] if f'extra == "{extra}"' in r]
    except PackageNotFoundError:
        pinned = []
    spec = pinned[0] if pinned else extra
    return f"pip install '{spec}' (or `pip install -e '.[{extra}]'` in the trl-r1 clone)"


def cpu_stage_notes(stages: list[StagePlan], card: tuple[str, float]) -> list[str]:
    """A note for the trainer stages a recipe keeps on the CPU (`use_cpu: true`) while the plan is for a card: the
    estimates and the memory model then speak of a GPU that the run will not use."""
    on_cpu = [plan.name for plan in stages if plan.model_args is not None and plan.config is not None
              and getattr(plan.config, "use_cpu", False)]
    if not on_cpu:
        return []
    return [f"{', '.join(on_cpu)}: use_cpu: true trains on the CPU, not on the {card[0]} planned for; remove "
            "`use_cpu` (in `training:` for every stage) to use the card"]


def card_precision_problems(stages: list[StagePlan], card: tuple[str, float]) -> list[str]:
    """Each trainer stage set to a precision the card lacks (`bf16` on a T4 or V100, `tf32` before Ampere), naming
    the key and the fix: transformers refuses them only when the run starts on that card."""
    row = card_named(card[0])
    if row is None:
        return []
    problems = []
    for plan in stages:
        config = plan.config
        if plan.model_args is None or config is None or getattr(config, "use_cpu", False):
            continue
        if getattr(config, "bf16", False) and not row.bf16:
            problems.append(f"{plan.name}: bf16: true, but the {row.name} has no bf16; set `bf16: false, fp16: true` "
                            "(in `training:` for every stage)")
        if getattr(config, "tf32", None) and not row.tf32:
            problems.append(f"{plan.name}: tf32: true, but the {row.name} has no tf32 (Ampere or newer); set "
                            "`tf32: false`")
    return problems


def backend_problems(stages: list[StagePlan], rewards: dict[str, list[Any]]) -> list[str]:
    """One problem per missing backend (bitsandbytes, the code sandbox; vLLM is `generation_backend_problems`'),
    naming every stage (and key) that needs it, with the install command.

    `rewards` maps a stage (or "evaluation") to its reward entries."""
    from ..rewards import get_reward_funcs
    from ..rewards.base import declared

    problems = []
    quantised = [p.name for p in stages if p.load_in_4bit]
    if quantised and importlib.util.find_spec("bitsandbytes") is None:
        problems.append(f"{', '.join(quantised)}: load_in_4bit: true needs bitsandbytes, which is not installed; "
                        "install it with pip install bitsandbytes, or set load_in_4bit: false")
    sandboxed = [where for where, entries in rewards.items()
                 if any(declared(f, "needs_sandbox") for f in get_reward_funcs(entries))]
    if sandboxed:
        from ..verifiers.code.sandbox import isolation_problem

        problem = isolation_problem()
        if problem is not None:
            problems.append(f"{', '.join(sandboxed)}: the code reward runs programs in a bubblewrap sandbox, which "
                            f"does not work here: {problem}. Install it with scripts/install.sh (Debian/Ubuntu: "
                            "apt-get install bubblewrap libseccomp2), or pass the reward allow_unsafe: true for "
                            "trusted code only")
    return problems


def value_problems(recipe: Recipe, stages: list[StagePlan]) -> list[str]:
    """Numbers TRL and transformers accept and then train wrongly with, or crash on at the first batch: a
    learning rate at or below 0, a batch of 0, `max_steps: 0` (transformers reads any max_steps <= 0 as "train
    num_train_epochs epochs"), a sampling temperature of 0 for RL (every completion of a group alike, so every
    advantage 0), a negative KL beta, LoRA rank 0, lengths below 1. One line per key, with the fix. A learning
    rate of 0 is allowed (a stage that must change no weight, as tests use); the plan notes it."""
    problems = []
    for plan in stages:
        config, where = plan.config, plan.name
        if config is None:
            continue

        def at_least(key: str, low: float, fix: str, strict: bool = False) -> None:
            value = getattr(config, key, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                    value <= low if strict else value < low):
                problems.append(f"{where}: key {key!r}: {value} {fix}")

        if plan.model_args is not None:  # a trainer stage
            at_least("learning_rate", 0, "must be 0 or above (R1 recipes use 1e-6 for RL, 1e-5 to 2e-5 for SFT)")
            at_least("per_device_train_batch_size", 1, "must be at least 1")
            at_least("gradient_accumulation_steps", 1, "must be at least 1")
            max_steps = getattr(config, "max_steps", -1)
            if max_steps == 0 or max_steps < -1:
                problems.append(f"{where}: key 'max_steps': {max_steps} would train num_train_epochs epochs, not "
                                "stop (transformers reads max_steps <= 0 as 'by epochs'); set a positive number of "
                                "steps, or leave it out to train by num_train_epochs")
            elif max_steps == -1:
                at_least("num_train_epochs", 0, "trains nothing; set it above 0 (or set max_steps)", strict=True)
        at_least("max_completion_length", 1, "must be at least 1 token")
        at_least("max_length", 1, "must be at least 1 token")
        at_least("beta", 0, "must be 0 (no KL penalty) or above")
        if plan.name == "rl":
            at_least("temperature", 0, "makes every completion of a prompt the same, so every advantage is 0 and "
                     "nothing is learned; sample with a temperature above 0 (R1: 0.6 to 1.0)", strict=True)
        problems += sampling_problems(where, config)
    problems = same_text_once(problems, {plan.name for plan in stages})  # a shared key's mistake, once
    problems += lora_value_problems(recipe.model)
    return problems


def sampling_problems(where: str, config: SectionConfig) -> list[str]:
    """RL values TRL takes and then fails on mid-run or trains nothing with: top_p outside (0, 1] (vLLM and
    generate reject it at the first rollout), a negative clip epsilon (the ratio clip inverts), num_iterations
    below 1 (no optimisation pass per batch), a reward weight that is not a finite number (NaN or inf poisons
    every advantage)."""
    problems = []
    top_p = getattr(config, "top_p", None)
    if isinstance(top_p, (int, float)) and not 0 < top_p <= 1:
        problems.append(f"{where}: key 'top_p': {top_p} is outside (0, 1]; 1.0 samples from the whole distribution")
    for key in ("epsilon", "epsilon_high"):
        value = getattr(config, key, None)
        if isinstance(value, (int, float)) and value < 0:
            problems.append(f"{where}: key {key!r}: {value} must be 0 or above (the PPO clip range; TRL: 0.2)")
    iterations = getattr(config, "num_iterations", None)
    if isinstance(iterations, int) and iterations < 1:
        problems.append(f"{where}: key 'num_iterations': {iterations} must be at least 1 (optimisation passes per "
                        "generation batch; TRL: 1)")
    weights = getattr(config, "reward_weights", None)
    if isinstance(weights, list) and not all(isinstance(w, (int, float)) and math.isfinite(w) for w in weights):
        problems.append(f"{where}: key 'reward_weights': {weights} must all be finite numbers")
    return problems


def lora_value_problems(model: R1ModelConfig) -> list[str]:
    """LoRA values peft accepts and then trains wrongly with: rank below 1, a dropout outside [0, 1) (1 or more
    zeroes every adapter input), alpha at or below 0 (the adapter's scale alpha / r is 0 or flips its sign)."""
    if not model.use_peft:
        return []
    problems = []
    if isinstance(model.lora_r, int) and model.lora_r < 1:
        problems.append(f"model: key 'lora_r': {model.lora_r} must be at least 1 (QLoRA uses 16 to 64)")
    dropout = getattr(model, "lora_dropout", None)
    if isinstance(dropout, (int, float)) and not 0 <= dropout < 1:
        problems.append(f"model: key 'lora_dropout': {dropout} must be in [0, 1) (QLoRA: 0.05)")
    alpha = getattr(model, "lora_alpha", None)
    if isinstance(alpha, (int, float)) and alpha <= 0:
        problems.append(f"model: key 'lora_alpha': {alpha} must be above 0 (the adapter scale is alpha / r; "
                        "common: 2 * lora_r)")
    return problems


TRACKERS = ("wandb", "tensorboard", "mlflow", "comet_ml", "trackio", "clearml", "dvclive", "swanlab")


def tracker_problems(stages: list[StagePlan]) -> list[str]:
    """A `report_to` tracker whose package is not installed: transformers raises at trainer init, after the base
    evaluation; one line naming the stages and the install command."""
    missing: dict[str, list[str]] = {}
    for plan in stages:
        wanted = getattr(plan.config, "report_to", None) or []
        for tracker in [wanted] if isinstance(wanted, str) else wanted:
            if tracker in TRACKERS and importlib.util.find_spec(tracker) is None:
                missing.setdefault(tracker, []).append(plan.name)
    return [f"{', '.join(names)}: key 'report_to': {tracker} is not installed; pip install {tracker}, or set "
            "training.report_to: none" for tracker, names in missing.items()]


def precision_problems(stages: list[StagePlan]) -> list[str]:
    """On a machine without a GPU: one problem naming every trainer stage set to train in bf16 or fp16 (TRL
    defaults `bf16` to true), with the fix, instead of transformers' error once per stage when the run starts."""
    wanting = [p for p in stages if p.model_args is not None and not getattr(p.config, "use_cpu", False)
               and (getattr(p.config, "bf16", False) or getattr(p.config, "fp16", False))]
    if not wanting:
        return []
    flag = "fp16" if any(getattr(p.config, "fp16", False) for p in wanting) else "bf16"
    return [f"{', '.join(p.name for p in wanting)}: {flag} training needs a GPU and this machine has none; to train "
            f"here set training.use_cpu: true and training.{flag}: false, rehearse the recipe on the CPU with "
            "--smoke, or plan for a GPU with --dry-run --card NAME_OR_GB (e.g. --card 24)"]


def resolve_generation(config: SectionConfig | EvaluationConfig, model_args: R1ModelConfig, model: R1ModelConfig, *, four_bit: bool,
                       elsewhere: bool) -> tuple[str, str]:
    """(backend, why) a generating section (rl, rejection sampling, evaluation) will use: vLLM where it asks for it
    (`use_vllm`, `backend: vllm|auto`) and vLLM can serve it, else transformers; openai for an endpoint. An RL
    stage is judged by the trainer's own `vllm_generation_choice` (server mode and merged pushes on a 4-bit base
    included), a sampler by `vllm_backend_choice`. `elsewhere`: for another card, this machine's lacks left out."""
    from trl import get_peft_config, get_quantization_config

    from ..data.generation import vllm_backend_choice
    from ..trainers.trl_compat import vllm_generation_choice

    wants = getattr(config, "use_vllm", False) or getattr(config, "backend", None) in ("vllm", "auto")
    if not wants or getattr(config, "base_url", None):
        return ("openai" if wants else getattr(config, "backend", "transformers")), "as the recipe says"
    if hasattr(config, "use_vllm"):
        lora = get_peft_config(model_args) if model_args.use_peft else None
        choice, why = vllm_generation_choice(model.model_name_or_path or "", config, lora,
                                             get_quantization_config(model_args), this_machine=not elsewhere)
        return ("transformers" if choice == "transformers" else "vllm",
                why or ("vLLM serves the base with the LoRA adapter unmerged" if choice == "adapter"
                        else f"vLLM, TRL's {config.vllm_mode} mode"))
    return vllm_backend_choice(model.model_name_or_path, load_in_4bit=four_bit,
                               load_in_8bit=bool(model_args.load_in_8bit),
                               bnb_4bit_quant_type=model_args.bnb_4bit_quant_type,
                               use_bnb_nested_quant=model_args.use_bnb_nested_quant, this_machine=not elsewhere)


def resolve_stage(plan: StagePlan, recipe: Recipe, *, elsewhere: bool) -> StagePlan:
    """Fill in what `plan` will do (`StagePlan.generation`, `load_in_4bit`, `evaluation_4bit`), once, for the card
    planned for (`elsewhere`) or this machine; returns `plan`. Its batch waits for the data (`size_generation`)."""
    plan.load_in_4bit = bool(plan.model_args.load_in_4bit) if plan.model_args is not None else bool(  # a sampler's own
        plan.kind == "rejection_sampling" and plan.section.get("load_in_4bit", recipe.model.load_in_4bit))
    model_args = plan.model_args or recipe.model
    # a LoRA stage is evaluated as its adapter on the base it trained on (`StageRecord.generator`), 4-bit as trained
    plan.evaluation_4bit = bool(model_args.use_peft and model_args.load_in_4bit)
    if hasattr(plan.config, "use_vllm") or plan.kind == "rejection_sampling":
        four_bit = plan.load_in_4bit if plan.kind == "rejection_sampling" else plan.evaluation_4bit
        plan.generation, plan.generation_why = resolve_generation(plan.config, model_args, recipe.model,
                                                                  four_bit=four_bit, elsewhere=elsewhere)
    return plan


def size_generation(run: Run) -> None:
    """Each transformers generation pass's prompts per `generate` call, decided once the data is scanned: a
    sampler's (`StagePlan.generation_batch`) and the held-out evaluation's (`Recipe.evaluation_batch`)."""
    recipe, shape = run.recipe, model_shape(run.base_model_path) if run.card is not None else None
    for plan in recipe.stages:
        if plan.kind == "rejection_sampling" and plan.config is not None:
            plan.generation_batch, plan.generation_batch_why = generation_batch(
                plan.config, plan.generation, run.card, shape, load_in_4bit=plan.load_in_4bit,
                lora_r=recipe.model.lora_r if recipe.model.use_peft else None,
                prompt_tokens=prompt_tokens(recipe, plan, run.longest_prompts))
    if recipe.evaluation is not None:  # sized for the merged copy it decodes from: the same for every stage's model
        recipe.evaluation_batch = generation_batch(recipe.evaluation, recipe.evaluation_generation[0], run.card, shape,
                                                   load_in_4bit=False, lora_r=None,
                                                   prompt_tokens=prompt_tokens(recipe, None, run.longest_prompts))


def prompt_tokens(recipe: Recipe, plan: StagePlan | None, longest_prompts: dict[str, int]) -> int:
    """The prompt length a generation pass (`plan` None: the evaluation) is sized for: the data's longest prompt
    where it was scanned (a sampler without data of its own: the prompts of the stage it takes them from), else
    `PROMPT_TOKENS`."""
    if plan is None:
        return longest_prompts.get("evaluation") or PROMPT_TOKENS
    source = plan.name if getattr(plan.config, "dataset_name", None) else STAGE_REGISTRY[plan.name].rewards_from
    return longest_prompts.get(source) or PROMPT_TOKENS


def generation_batch(config: RejectionSamplingConfig | EvaluationConfig, backend: str | None,
                     card: tuple[str, float] | None, shape: ModelShape | None, *, load_in_4bit: bool,
                     lora_r: int | None, prompt_tokens: int) -> tuple[int, str]:
    """(prompts per `generate` call, why) of a generation pass: with transformers on a card, the largest batch the
    memory model fits (`memory.generation_batch_size`, each prompt's `num_samples` sequences of `prompt_tokens` +
    `max_new_tokens`, decoded from the merged copy); else the configured `batch_size`."""
    if backend != "transformers" or card is None or shape is None:
        why = "vLLM schedules its own batches" if backend == "vllm" else \
            "no card to size it for" if card is None else "the model's size is not known here"
        return config.batch_size, f"the configured batch_size: {why}"
    settings = memory.GenerationSettings(
        batch_size=config.batch_size, num_samples=config.num_samples, max_new_tokens=config.max_new_tokens,
        prompt_length=prompt_tokens, load_in_4bit=load_in_4bit, lora_r=lora_r, fast=True)
    fitted = memory.generation_batch_size(shape, settings, card[1])
    if fitted < 1:
        return config.batch_size, f"the configured batch_size: the memory model fits no batch on {card_text(card)}"
    return fitted, (f"{fitted} prompts x {config.num_samples} samples of <= {prompt_tokens} + {config.max_new_tokens} "
                    f"tokens fit in {memory.USABLE_FRACTION:.0%} of the {card_text(card)}, by the memory model")


def resolve_plan(recipe: Recipe, *, elsewhere: bool) -> Recipe:
    """Every decision the run takes before its data is read, made once for the card planned for (`elsewhere`) or
    this machine: each stage's (`resolve_stage`) and the evaluation's backend (`Recipe.evaluation_generation`);
    returns `recipe`. The batches follow from the data (`size_generation`, in the preflight)."""
    for plan in recipe.stages:
        resolve_stage(plan, recipe, elsewhere=elsewhere)
    model = recipe.model
    recipe.evaluation_generation = None if recipe.evaluation is None else resolve_generation(
        recipe.evaluation, model, model, four_bit=bool(model.load_in_4bit and model.use_peft), elsewhere=elsewhere)
    return recipe


def generation_backend_problems(recipe: Recipe, stages: list[StagePlan], notes: list[str], *,
                                elsewhere: bool = False) -> list[str]:
    """For each generating stage (rl, rejection sampling, evaluation), the backend it will use and why (a note
    in the plan, from `resolve_stage`), and a problem where it asks for vLLM, vLLM cannot serve it and its
    `vllm_fallback` is not `transformers`: the run stops before any model loads, naming the key. With `elsewhere`
    (`--card` on another machine) the recipe is checked as on that card and what this machine lacks is a note,
    vLLM not installed here included (one line naming every section that asks for it)."""
    from ..data.generation import is_vllm_available, vllm_unsupported_reason

    model, problems, lacks_here, uninstalled, installed = recipe.model, [], {}, [], is_vllm_available()
    generating = [(p.name, p.config, p.generation, p.generation_why, p.evaluation_4bit, "use_vllm: true")
                  for p in stages if hasattr(p.config, "use_vllm")]
    generating += [(p.name, p.config, p.generation, p.generation_why, p.load_in_4bit, "backend: vllm")
                   for p in stages if p.kind == "rejection_sampling"]
    if recipe.evaluation is not None:
        four_bit = bool(model.load_in_4bit and model.use_peft)
        generating.append(("evaluation", recipe.evaluation, *recipe.evaluation_generation, four_bit, "backend: vllm"))
    for where, config, backend, why, four_bit, asking in generating:
        wants = getattr(config, "use_vllm", False) or getattr(config, "backend", None) in ("vllm", "auto")
        if not wants or getattr(config, "base_url", None):
            notes.append(f"generation: {where}: {backend} (as the recipe says)")
            continue
        here = elsewhere and backend == "vllm" and vllm_unsupported_reason(model.model_name_or_path, four_bit)
        if here and installed:  # vLLM missing here altogether: the `uninstalled` line says so once
            lacks_here.setdefault(here, []).append(where)
        notes.append(f"generation: {where}: {backend} ({why})")
        explicit = getattr(config, "backend", "vllm") == "vllm"  # `auto` falls back by design
        refuses = explicit and config.vllm_fallback != "transformers"
        if refuses and not installed:
            uninstalled.append(f"{where} ({asking})")  # one problem for all, below
        if refuses and backend != "vllm" and (elsewhere or installed):
            problems.append(f"{where} ({asking}): vLLM cannot generate {'on that card' if elsewhere else 'here'}: "
                            f"{why}. Fix that, or set vllm_fallback: transformers in {where} to generate with "
                            "transformers (much slower)")
    notes += [f"this machine, not the GPU planned for: {', '.join(wheres)}: {reason}"
              for reason, wheres in lacks_here.items()]
    if uninstalled:
        missing = (f"{', '.join(uninstalled)}: vLLM is not installed; install it with {install_hint('vllm')}, or "
                   "generate with transformers (use_vllm: false / backend: transformers), or set vllm_fallback: "
                   "transformers to fall back where vLLM cannot serve")
        if elsewhere:
            notes.append(f"this machine, not the GPU planned for: {missing}")
        else:
            problems.append(missing)
    return problems


# --------------------------------------------------------------------------------------------- memory


def stage_peak(plan: StagePlan, recipe: Recipe, shape: ModelShape, card_gb: float, *, vllm: bool,
               longest_prompt: int | None = None) -> tuple[float, str] | None:
    """(estimated peak bytes, what was estimated) of one stage on a `card_gb` card, None where the memory model
    has no formula for it (full fine-tuning). An rl stage without vLLM counts the fast path as its trainer picks
    it (`rl_step_peak`)."""
    config = plan.config
    if plan.kind in ("sft", "grpo", "ppo"):
        model_args = plan.model_args
        if not model_args.use_peft:
            return None
        settings = memory.GRPOSettings(
            lora_r=model_args.lora_r, load_in_4bit=bool(model_args.load_in_4bit),
            gradient_checkpointing=bool(config.gradient_checkpointing),
            per_device_train_batch_size=config.per_device_train_batch_size)
        if plan.kind == "sft":
            settings = dataclasses.replace(settings, max_prompt_length=0,
                                           max_completion_length=config.max_length or 1024)
            return memory.estimate_sft_peak(shape, settings).peak, "SFT step"
        colocate = vllm and getattr(config, "vllm_mode", "colocate") == "colocate"
        steps = getattr(config, "steps_per_generation", None) or config.gradient_accumulation_steps
        settings = dataclasses.replace(  # the data's longest prompt where it was scanned: what TRL trains on
            settings, max_prompt_length=longest_prompt or PROMPT_TOKENS, max_completion_length=config.max_completion_length,
            gradient_accumulation_steps=steps, use_vllm=colocate,
            vllm_gpu_memory_utilization=getattr(config, "vllm_gpu_memory_utilization", 0.3),
            vllm_enable_sleep_mode=bool(getattr(config, "vllm_enable_sleep_mode", False)))
        return rl_step_peak(config, settings, shape, card_gb, longest_prompt, vllm=vllm)
    return generation_peak(config, shape, card_gb, batch=plan.generation_batch, load_in_4bit=plan.load_in_4bit,
                           adapter=recipe.model.use_peft and recipe.model.adapter_handoff == "continue", vllm=vllm,
                           prompt_tokens=longest_prompt or PROMPT_TOKENS)


#: the share of an rl stage's prompts the fast path may cut (from the left, counted in a WARNING at run time)
#: before the dry run refuses the recipe; below it the plan notes the count
FAST_PROMPT_CUT_LIMIT = 0.05


def rl_step_peak(config: TrainingArguments, settings: GRPOSettings, shape: ModelShape, card_gb: float,
                 longest_prompt: int | None, *, vllm: bool) -> tuple[float, str]:
    """An rl step's peak with the generation its trainer runs: the fast path (`fast_generation: on`, or `auto`
    where `memory.fast_generation_fits`, the rule the trainer applies at run time) holds the merged copy and a
    static cache at the prompt budget from the data (`fast_prompt_budget`: the key, or the longest prompt rounded
    up) through the step, else plain."""
    setting = getattr(config, "fast_generation", "off")
    if setting != "off" and not vllm:
        fast = dataclasses.replace(settings, fast_generation=True, fast_generation_prompt_length=fast_prompt_budget(
            config.fast_generation_max_prompt_length, longest_prompt))
        if setting == "on" or memory.fast_generation_fits(shape, fast, card_gb)[0]:
            settings = fast
    return memory.estimate_grpo_peak(shape, settings, card_gb=card_gb).peak, "RL step"


def fast_prompt_problems(plan: StagePlan, lengths: PromptScan, *, refuse: bool) -> tuple[list[str], list[str]]:
    """(problems, notes) of an rl stage's prompts against `fast_generation_max_prompt_length`: the fast path cuts a
    longer prompt from the left at run time (its end kept, counted in a WARNING). When the fast path will run
    (`refuse`: `on`, or `auto` on a card) and more than `FAST_PROMPT_CUT_LIMIT` of the prompts would be cut, the
    dry run refuses; fewer, or a path that may not run, are a note with the count."""
    where, config = plan.name, plan.config
    if getattr(config, "fast_generation", "off") == "off" or plan.generation == "vllm" or not lengths.rows:
        return [], []
    key = config.fast_generation_max_prompt_length
    cut = lengths.over(key)
    if not cut:
        budget = (f"{where}: fast generation's prompt budget {fast_prompt_budget(key, lengths.longest)} tokens "
                  f"(fast_generation_max_prompt_length {key}; the longest prompt has {lengths.longest})")
        return [], [budget] if refuse else []
    line = (f"{where}: {cut} of {lengths.rows} prompts ({cut / lengths.rows:.1%}) are longer than "
            f"fast_generation_max_prompt_length {key} (the longest has {lengths.longest} tokens): the fast path cuts "
            "them from the left, their start lost")
    if refuse and cut > FAST_PROMPT_CUT_LIMIT * lengths.rows:
        return [f"{line}; more than {FAST_PROMPT_CUT_LIMIT:.0%} of them: raise fast_generation_max_prompt_length "
                f"to {fast_prompt_budget(lengths.longest, lengths.longest)}, drop the long prompts, or set "
                "fast_generation: off"], []
    return [], [f"{line} (counted in a WARNING at run time){'' if refuse else ' when the fast path runs'}"]


def generation_peak(config: RejectionSamplingConfig | EvaluationConfig, shape: ModelShape, card_gb: float, *,
                    load_in_4bit: bool, adapter: bool, vllm: bool, batch: int | None = None,
                    prompt_tokens: int = PROMPT_TOKENS) -> tuple[float, str]:
    """A generation pass (rejection sampling, evaluation): vLLM's budget, or transformers' generate call of
    `batch` prompts (default: the section's `batch_size`) of `prompt_tokens` (`prompt_tokens`: the data's longest)."""
    if vllm:
        share = config.vllm_gpu_memory_utilization or 0.9  # vLLM's default share
        return share * card_gb * 1e9, f"vLLM's budget ({share} of the card)"
    settings = memory.GenerationSettings(batch_size=batch or config.batch_size, num_samples=config.num_samples,
                                         max_new_tokens=config.max_new_tokens, prompt_length=prompt_tokens,
                                         load_in_4bit=load_in_4bit, lora_r=16 if adapter else None)
    return memory.estimate_generation_peak(shape, settings).peak, "transformers generation"


def planned_peak(recipe: Recipe, plan: StagePlan | None, shape: ModelShape, card_gb: float,
                 longest_prompts: dict[str, int]) -> tuple[float, str] | None:
    """`stage_peak` of a stage (`plan` None: the evaluation) with the backend its plan decided; what the plan
    prints and the preflight checks."""
    if plan is None:
        return generation_peak(recipe.evaluation, shape, card_gb, load_in_4bit=False, adapter=False,
                               vllm=recipe.evaluation_generation[0] == "vllm",
                               batch=recipe.evaluation_batch[0] if recipe.evaluation_batch else None,  # once sized
                               prompt_tokens=prompt_tokens(recipe, None, longest_prompts))
    longest = longest_prompts.get(plan.name) if plan.model_args else prompt_tokens(recipe, plan, longest_prompts)
    return stage_peak(plan, recipe, shape, card_gb, vllm=plan.generation == "vllm", longest_prompt=longest)


def memory_problems(recipe: Recipe, stages: list[StagePlan], shape: ModelShape, card: tuple[str, float], *,
                    longest_prompts: dict[str, int] | None = None) -> list[str]:
    """Each stage whose estimated peak exceeds the usable share of the card (memory.USABLE_FRACTION);
    `longest_prompts`: each stage's longest prompt in tokens, where the data was scanned."""
    name, card_gb = card
    usable = memory.USABLE_FRACTION * card_gb * 1e9
    problems = []
    items = [(p.name, p) for p in stages] + ([("evaluation", None)] if recipe.evaluation is not None else [])
    for where, plan in items:
        peak = planned_peak(recipe, plan, shape, card_gb, longest_prompts or {})
        if peak is not None and peak[0] > usable:
            hint = ""
            if plan is not None and plan.kind in ("grpo", "ppo"):
                fitting = memory.fits(shape, int(card_gb), memory.GRPOSettings(
                    lora_r=plan.model_args.lora_r, load_in_4bit=bool(plan.model_args.load_in_4bit)))
                if fitting is not None:
                    hint = (f"; it fits with max_completion_length {fitting[0].max_completion_length} and "
                            f"per_device_train_batch_size {fitting[0].per_device_train_batch_size}")
            problems.append(f"{where}: the memory model puts its peak ({peak[1]}) at {peak[0] / 1e9:.1f} GB, over "
                            f"{memory.USABLE_FRACTION:.0%} of this {name} ({card_gb:.0f} GB){hint}; see "
                            "docs/troubleshooting.md (out of memory)")
            continue
        config = recipe.evaluation if plan is None else plan.config
        backend = recipe.evaluation_generation[0] if plan is None else plan.generation
        if backend == "vllm" and getattr(config, "vllm_mode", "colocate") == "colocate":
            problems += vllm_cache_problems(where, config, shape, card, plan.load_in_4bit if plan else False)
    return problems


def vllm_cache_problems(where: str, config: SectionConfig | EvaluationConfig, shape: ModelShape, card: tuple[str, float],
                        load_in_4bit: bool) -> list[str]:
    """vLLM refuses to start unless its share of the card holds the KV cache of one `vllm_max_model_length`
    sequence (default: the model's whole context) after its weights."""
    share = getattr(config, "vllm_gpu_memory_utilization", None) or 0.9  # TRL's default is set (0.3); vLLM's 0.9
    needed = getattr(config, "vllm_max_model_length", None) or shape.max_position_embeddings
    tokens = memory.vllm_kv_tokens(shape, card[1], share, load_in_4bit)
    if tokens >= needed:
        return []
    return [f"{where}: vLLM's share of this {card[0]} (vllm_gpu_memory_utilization {share} of {card[1]:.0f} GB) "
            f"holds the KV cache of {tokens} tokens after its weights, fewer than one sequence of "
            f"vllm_max_model_length {needed}; vLLM would not start: raise vllm_gpu_memory_utilization or lower "
            "vllm_max_model_length"]


__all__ = ["backend_problems", "card_memory_gb", "column_key_problems", "context_problems", "conversation_problems",
           "dataset_kwargs_problems", "fast_prompt_problems", "generation_backend_problems", "long_prompt_problems",
           "lora_target_problems", "lora_value_problems", "memory_problems", "missing_template_problems",
           "missing_value_problems", "model_context", "model_path_problems", "precision_problems",
           "resolve_generation", "resolve_plan", "resolve_stage", "rows_asked", "size_generation", "run_dir_model_problems", "run_dir_problems",
           "sampling_problems", "short_max_length_problems", "split_key", "tracker_problems", "unique",
           "value_problems"]
