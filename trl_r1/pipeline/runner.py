"""The R1 pipeline: preflight checks, the resolved plan, each stage in order (skipping finished ones), report.

cold-start SFT -> GRPO/PPO -> rejection sampling from the RL checkpoint -> SFT on the accepted samples.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from .recipe import STAGES, Recipe, RecipeError, StagePlan, _digest
from .stages import (
    ModelHandle,
    StageRecord,
    final_sft_dataset,
    prepare_stage_dir,
    read_record,
    run_rejection_sampling_stage,
    run_training_stage,
    stage_status,
    write_record,
)
from .templates import TemplateReport, adapt_rewards, inspect_chat_template, template_problems

logger = logging.getLogger("trl_r1.pipeline")

BASE_MODEL_DIR, BASE_EVALUATION = "base_model", "base_evaluation.json"
SFT_COLUMNS = (("messages",), ("text",), ("prompt", "completion"))
DEFAULT_EVAL_REWARDS = ["format", "math"]


class Pipeline:
    """One run of a recipe. `run()` does the work; `plan_lines()` is what `--dry-run` prints."""

    def __init__(self, recipe: Recipe, *, from_stage: str | None = None, echo: Callable[[str], None] = print):
        if from_stage is not None and recipe.stage(from_stage) is None:
            names = [s.name for s in recipe.stages]
            raise RecipeError([f"--from-stage {from_stage!r} is not a stage of this recipe; stages: {names}"])
        self.recipe, self.echo = recipe, echo
        forced_from = [s.name for s in recipe.stages].index(from_stage) if from_stage else len(recipe.stages)
        self.status = {plan.name: stage_status(plan, forced=i >= forced_from) for i, plan in enumerate(recipe.stages)}
        self.template: TemplateReport | None = None
        self._datasets: dict[str, Any] = {}

    # ----------------------------------------------------------------------------------------- plan and checks

    @property
    def base_model_path(self) -> str:
        model = self.recipe.model
        return str(self.recipe.run_dir / BASE_MODEL_DIR) if model.tiny is not None else model.model_name_or_path

    def plan_lines(self) -> list[str]:
        """The resolved plan: each stage, what will happen to it, where it writes, and its main settings."""
        model = self.recipe.model
        mode = ("QLoRA 4-bit NF4" if model.load_in_4bit else "LoRA" if model.use_peft else "full fine-tuning")
        built = " (tiny, built locally)" if model.tiny is not None else ""
        lines = [f"run_dir: {self.recipe.run_dir}",
                 f"model:   {self.base_model_path}{built}  [{mode}, adapter_handoff={model.adapter_handoff}]"]
        for i, plan in enumerate(self.recipe.stages, 1):
            action = {"done": "skip (done)", "resume": "resume", "stale": "redo", "new": "run"}[self.status[plan.name]]
            lines.append(f"{i}. {plan.name:<19}{plan.kind:<19}{action:<12}-> {plan.output_dir}")
            lines.append(f"     {_settings(plan)}")
        if self.recipe.evaluation:
            ev = self.recipe.evaluation
            lines.append(f"evaluation: {ev.dataset_name} [{ev.dataset_split}] after {ev.stages}, {ev.num_prompts} "
                         f"prompts x {ev.num_samples} samples at T={ev.temperature}")
        return lines

    def preflight(self) -> None:
        """Checks that need the tokenizer or the data (chat template, dataset columns); raises RecipeError."""
        problems: list[str] = []
        self.template = self._inspect_template()
        if self.template is not None:
            sft_stages = [s.name for s in self.recipe.stages if s.kind == "sft" and self.status[s.name] != "done"]
            problems += template_problems(self.template, sft_stages=sft_stages)
        for plan in self.recipe.stages:
            if self.status[plan.name] != "done":
                problems += self._check_stage_data(plan)
        if self.recipe.evaluation is not None:
            problems += self._check_columns("evaluation", "evaluation", ("prompt",), self._eval_rewards())
        if problems:
            raise RecipeError(problems)

    def _inspect_template(self) -> TemplateReport | None:
        from transformers import AutoTokenizer

        if self.recipe.model.tiny is not None:
            self._build_tiny_model()
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.base_model_path)
        except (OSError, ValueError) as exc:
            logger.warning("cannot load the tokenizer of %s to check its chat template: %s", self.base_model_path, exc)
            return None
        if tokenizer.chat_template is None:
            return None
        return inspect_chat_template(tokenizer)

    def _check_stage_data(self, plan: StagePlan) -> list[str]:
        if plan.kind == "sft":
            if plan.args.dataset_name is None:
                return []
            columns = self._columns(plan.name, plan)
            if columns is not None and not any(set(c) <= set(columns) for c in SFT_COLUMNS):
                needs = "'messages', 'text', or 'prompt' + 'completion'"
                return [f"{plan.name}: dataset {plan.args.dataset_name!r} has columns {columns}; SFT needs {needs}"]
            return []
        if plan.kind == "rejection_sampling":
            if plan.config.dataset_name is None:
                return []
            return self._check_columns(plan.name, plan.name, (plan.config.prompt_column,),
                                       plan.section.get("rewards", self._rl_rewards() or plan.config.rewards))
        return self._check_columns(plan.name, plan.name, ("prompt",), plan.args.rewards)

    def _check_columns(self, where: str, key: str, needed: tuple[str, ...], rewards: list[Any]) -> list[str]:
        from ..rewards import get_reward_funcs
        from ..rewards.base import declared

        columns = self._columns(key, self.recipe.evaluation if key == "evaluation" else self.recipe.stage(key))
        if columns is None:
            return []
        problems = [f"{where}: the dataset has no {c!r} column (columns: {columns})" for c in needed if c not in columns]
        for func in get_reward_funcs(rewards):
            for column in declared(func, "required_columns"):
                if column not in columns:
                    problems.append(f"{where}: reward {func.__name__!r} needs a {column!r} column; the dataset "
                                    f"has {columns}")
            references = declared(func, "reference_columns")
            if references and not set(references) & set(columns):
                problems.append(f"{where}: reward {func.__name__!r} reads its reference from one of the columns "
                                f"{list(references)}; the dataset has {columns} (map one with solution_column)")
        return problems

    def _columns(self, key: str, owner: Any) -> list[str] | None:
        try:
            return list(self.dataset(key, owner).column_names)
        except Exception as exc:  # a dataset that cannot be loaded is reported, not a crash
            raise RecipeError([f"{key}: cannot load the dataset: {type(exc).__name__}: {exc}"]) from exc

    def dataset(self, key: str, owner: Any = None):
        """A stage's (or the evaluation's) dataset, loaded once."""
        from .data import load_dataset_spec, load_stage_dataset

        if key not in self._datasets:
            if key == "evaluation":
                self._datasets[key] = load_stage_dataset(self.recipe.evaluation, split_attribute="dataset_split")
            elif key == "rejection_sampling":
                cfg, args = owner.config, owner.args
                if cfg.dataset_name is None:
                    return self.dataset("rl", self.recipe.stage("rl"))
                self._datasets[key] = load_dataset_spec(cfg.dataset_name, split=cfg.dataset_split,
                                                        config=args.dataset_config, kwargs=args.dataset_kwargs)
            else:
                self._datasets[key] = load_stage_dataset(owner.args)
        return self._datasets[key]

    # ----------------------------------------------------------------------------------------- running

    def run(self) -> dict[str, Any]:
        """Run every stage that is not done, evaluate, and write the report. Returns the report."""
        from .report import terminal_summary, write_report

        self.recipe.run_dir.mkdir(parents=True, exist_ok=True)
        self.preflight()
        for line in self.plan_lines():
            self.echo(line)
        handles: dict[str, ModelHandle] = {"base": ModelHandle(self.base_model_path)}
        base_evaluation = self._base_evaluation()
        for plan in self.recipe.stages:
            status = self.status[plan.name]
            if status == "done":
                self.echo(f"[{plan.name}] done earlier, skipped")
                handle = read_record(plan.output_dir).handle
                if handle is not None:
                    handles[plan.name] = handle
                continue
            prepare_stage_dir(plan, status)
            if status != "resume":
                write_record(plan.output_dir, StageRecord(plan.name, plan.fingerprint))
            self.echo(f"[{plan.name}] {'resuming' if status == 'resume' else 'running'}")
            record = self._run_stage(plan, handles)
            if record.handle is not None:
                handles[plan.name] = record.handle
                record.evaluation = self._evaluate(plan.name, record.handle)
            write_record(plan.output_dir, record)
            self.echo(f"[{plan.name}] done in {record.seconds:.0f}s")
        report = write_report(self.recipe.run_dir, [s.name for s in self.recipe.stages], base_evaluation)
        self.echo(terminal_summary(report))
        self.echo(f"report: {self.recipe.run_dir / 'report.md'}")
        return report

    def _run_stage(self, plan: StagePlan, handles: dict[str, ModelHandle]) -> StageRecord:
        if plan.kind == "rejection_sampling":
            start = handles.get("rl") or handles.get("cold_start") or handles["base"]
            return run_rejection_sampling_stage(
                plan, start, self.recipe.model, self.dataset(plan.name, plan),
                rewards=self._rl_rewards(), think_prefilled=bool(self.template and self.template.prefills_think))
        if plan.kind == "sft":
            if plan.name == "final_sft":
                start = handles[plan.args.init_from] if plan.args.init_from != "base" else handles["base"]
                rs = read_record(self.recipe.stage("rejection_sampling").output_dir) \
                    if self.recipe.stage("rejection_sampling") else None
                data = final_sft_dataset(plan, rs.outputs.get("dataset_path") if rs else None)
            else:
                start, data = handles["base"], self.dataset(plan.name, plan)
            return run_training_stage(plan, start, data)
        from ..rewards import get_reward_funcs

        start = handles.get("cold_start") or handles["base"]
        rewards = get_reward_funcs(self._adapted(plan.args.rewards))
        return run_training_stage(plan, start, self.dataset(plan.name, plan), reward_funcs=rewards)

    def _rl_rewards(self) -> list[Any] | None:
        rl = self.recipe.stage("rl")
        return self._adapted(rl.args.rewards) if rl is not None else None

    def _adapted(self, rewards: list[Any]) -> list[Any]:
        return adapt_rewards(rewards, self.template) if self.template is not None else list(rewards)

    def _eval_rewards(self) -> list[Any]:
        return self._adapted(self.recipe.evaluation.rewards or self._rl_rewards() or DEFAULT_EVAL_REWARDS)

    def _evaluate(self, stage: str, handle: ModelHandle) -> dict[str, float] | None:
        from .evaluate import evaluate_model

        ev = self.recipe.evaluation
        if ev is None or stage not in ev.stages:
            return None
        self.echo(f"[{stage}] evaluating on held-out prompts")
        return evaluate_model(handle.model_path, self.dataset("evaluation"), ev, self._eval_rewards(),
                              adapter_path=handle.adapter_path,
                              load_in_4bit=bool(self.recipe.model.load_in_4bit and handle.adapter_path))

    def _base_evaluation(self) -> dict[str, float] | None:
        """The untrained model's held-out scores (cached in the run directory, keyed by the settings)."""
        ev = self.recipe.evaluation
        if ev is None or "base" not in ev.stages:
            return None
        path = self.recipe.run_dir / BASE_EVALUATION
        key = _digest({"model": self.base_model_path, "evaluation": str(ev)})
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
        from ..testing import build_tiny_model

        build_tiny_model(self.recipe.run_dir / BASE_MODEL_DIR, **self.recipe.model.tiny)


def _settings(plan: StagePlan) -> str:
    """The settings worth seeing in a plan line: what the user set in the section, shortened."""
    shown = {k: v for k, v in plan.section.items() if k not in ("dataset_kwargs",)}
    text = ", ".join(f"{k}={v}" for k, v in shown.items())
    return text if len(text) <= 150 else text[:147] + "..."


__all__ = ["STAGES", "Pipeline"]
