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

import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..rehearsal.pretrained import resolve_model_name
from .data import StageDatasets
from .evaluate import HeldOutEvaluation
from .preflight import card_memory_gb, plan_problems, resolve_plan
from .ranks import Ranks
from .recipe import Recipe, RecipeError, StagePlan
from .fingerprint import (ModelHandle, StageRecord, data_file, file_stamp, prepare_stage_dir, read_record, stage_status,
                          write_record)
from .stages import STAGE_REGISTRY, Stage
from ..trainers.chat_templates import TemplateReport, adapt_rewards

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

logger = logging.getLogger("trl_r1.pipeline")

BASE_MODEL_DIR = "base_model"
TINY_SETTINGS = "trl_r1_tiny.json"  # in BASE_MODEL_DIR: the `model.tiny` settings it was built with
DETECT_CARD = "detect"  # Pipeline(card=...): the GPU torch.cuda sees here


class Pipeline:
    """One run of a recipe: the loop over its stages. `run()` does the work; `plan_lines()` is what `--dry-run`
    prints; `preflight()` checks the whole plan first (`preflight.plan_problems`)."""

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
        self.recipe, self.elsewhere = recipe, elsewhere
        self.card: tuple[str, float] | None = card_memory_gb() if card == DETECT_CARD else card  # what it sizes for
        resolve_plan(recipe, elsewhere=elsewhere and card is not None)  # once, on every rank
        self.ranks = ranks or Ranks()
        self.echo = echo if self.ranks.is_main else (lambda _: None)
        forced_from = [s.name for s in recipe.stages].index(from_stage) if from_stage else len(recipe.stages)
        self.from_stage, self.forced = from_stage, {plan.name for plan in recipe.stages[forced_from:]}
        self.status: dict[str, str] = self.ranks.on_main(lambda: {
            plan.name: stage_status(plan, forced=plan.name in self.forced) for plan in recipe.stages})
        self.handles: dict[str, ModelHandle] = {"base": ModelHandle(self.base_model_path)}
        self.generators: dict[str, ModelHandle] = dict(self.handles)  # see `StageRecord.generator`
        self.evaluation = HeldOutEvaluation(
            recipe, self.base_model_path, adapted=self.adapted, echo=self.echo,
            prompts=lambda: self.data.of("evaluation", recipe.evaluation, split_attribute="dataset_split"))
        self.dry_run, self.overridden = dry_run, set(overridden)
        self.detects_card = card == DETECT_CARD  # this machine's own hardware: its lacks are errors
        self.model_built_by_run = model_built_by_run
        # what the preflight saw (`preflight.plan_problems`), for the plan and the stages
        self.data = StageDatasets(streaming=dry_run)  # each dataset, loaded once per process, and its schema
        self.notes: list[str] = []  # what the preflight could not check here, and why
        self.longest_prompts: dict[str, int] = {}  # each stage's longest prompt in tokens, from the whole-file scan
        self.evaluation_seen = 0  # evaluation prompts also in a stage's training data
        self.template: TemplateReport | None = None
        self.tokenizer: PreTrainedTokenizerBase | None = None  # the base model's tokenizer, once the preflight loaded it
        self.context: tuple[int, str] | None = None  # the model's context (tokens, where it was read)

    @property
    def base_model_path(self) -> str:
        model = self.recipe.model
        if model.tiny is not None:
            return str(self.recipe.run_dir / BASE_MODEL_DIR)
        return resolve_model_name(model.model_name_or_path)  # a named offline model: its converted checkpoint

    @property
    def prefills_think(self) -> bool:
        return bool(self.template and self.template.prefills_think)

    def pending(self) -> list[StagePlan]:
        return [plan for plan in self.recipe.stages if self.status[plan.name] != "done"]

    def plan_lines(self) -> list[str]:
        """The resolved plan (`trl_r1.pipeline.plan`), each stage's cost (`Stage.cost`) included."""
        from .plan import plan_lines

        return plan_lines(self)

    def preflight(self) -> TemplateReport | None:
        """Every check before any work (`preflight.plan_problems`); raises RecipeError listing every problem, returns
        (and keeps) the chat-template report. Builds the tiny model first when the recipe asks for it (a dry run
        builds nothing)."""
        if self.recipe.model.tiny is not None and not self.dry_run:
            self._build_tiny_model()
        problems = plan_problems(self)
        if problems:
            raise RecipeError(problems)
        return self.template

    # ----------------------------------------------------------------------------------------- what stages ask

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
        base_evaluation = self.ranks.on_main(self.evaluation.base)
        for plan in self.recipe.stages:
            stage, status = STAGE_REGISTRY[plan.name], self.status[plan.name]
            if status == "done":
                self.echo(f"[{plan.name}] done earlier, skipped")
                record = self.ranks.on_main(lambda: self.evaluation.rescored(plan, read_record(plan.output_dir)))
            else:
                self.ranks.on_main(lambda: prepare_stage_dir(plan, status))
                self.echo(f"[{plan.name}] {'resuming' if status == 'resume' else 'running'}")
                result = stage.run(plan, self) if stage.data_parallel else None  # training: every rank
                record = self.ranks.on_main(lambda: self._finish(
                    stage, plan, result if stage.data_parallel else stage.run(plan, self)))
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

    def _finish(self, stage: Stage, plan: StagePlan, result: Any) -> StageRecord:
        """Main process: the stage's record (hand-off, metrics), its held-out evaluation, written to stage.json."""
        began = time.perf_counter()
        record = stage.record(plan, self, result)
        handed_on = time.perf_counter()
        if record.generator is not None:
            self.evaluation.score(plan, record)
        record.settings = plan.settings
        if (source := data_file(plan)) is not None:  # a later edit of the file is noted, a touch is not
            record.metrics["data_file"] = file_stamp(source)
        # what the other ranks waited for (merging, evaluation), next to the stage's own `seconds`
        record.metrics["main_process_seconds"] = {"record": round(handed_on - began, 3),
                                                  "evaluation": round(time.perf_counter() - handed_on, 3)}
        write_record(plan.output_dir, record)
        return record

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
