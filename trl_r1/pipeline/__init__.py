"""The R1 pipeline: recipes (`recipe`), stages as objects (`stages`), the runner loop (`runner`) and its report.

`run_recipe` is the Python entry point; the command line (`trl-r1 run`, `trl-r1 sft|grpo|ppo`) is `trl_r1.cli`.
Recipes are described in `trl_r1.pipeline.recipe`; docs/pipeline.md and docs/recipes.md are the user guide.
"""

from __future__ import annotations

from typing import Any

from .recipe import Recipe, RecipeError, load_recipe
from .stages import STAGE_REGISTRY, Stage, StageError

__all__ = ["STAGE_REGISTRY", "Recipe", "RecipeError", "Stage", "StageError", "load_recipe", "run_recipe"]


def run_recipe(recipe: Recipe | str | dict, *, from_stage: str | None = None, dry_run: bool = False,
               overridden: list[str] = (), echo=print, card: tuple[str, float] | None = None,
               model_built_by_run: bool = False, num_processes: int = 1) -> dict[str, Any] | None:
    """Run a recipe; returns the report dict. With `dry_run`, run the whole preflight (building nothing), print
    the plan and raise RecipeError listing the problems found, if any. `overridden`: the keys a command line set
    (`section.key`, or `key`), marked in the plan. `card`: (name, GB) of the GPU to plan for (`--card`), instead
    of this machine's; on a machine without a GPU what it lacks is then a note. `model_built_by_run`: the model
    path is where the run builds the model (`--smoke --dry-run`). `num_processes`: the processes a dry run plans
    for (a run itself is launched in them)."""
    from .preflight import card_memory_gb
    from .runner import DETECT_CARD, Pipeline

    from .interrupt import RunInterrupted, interrupted_line
    from .ranks import Ranks
    from .run_lock import RunDirLock

    if not isinstance(recipe, Recipe):
        recipe = load_recipe(recipe, check_hardware=not dry_run)
    ranks, lock = Ranks(planned=num_processes if dry_run else 1), RunDirLock(recipe.run_dir)
    if not dry_run:  # before the stages' status is read: a second run into this run_dir refuses
        ranks.on_main(lock.acquire)
    try:
        pipeline = Pipeline(recipe, from_stage=from_stage, echo=echo, dry_run=dry_run, overridden=overridden,
                            card=DETECT_CARD if card is None else card,
                            elsewhere=card is not None and card_memory_gb() is None,
                            model_built_by_run=model_built_by_run, ranks=ranks)
        if dry_run:
            try:
                pipeline.preflight()
            finally:  # the plan, with what the preflight saw, also when it found problems
                for line in pipeline.plan_lines():
                    echo(line)
            return None
        try:
            return pipeline.run()
        except KeyboardInterrupt:
            raise RunInterrupted(interrupted_line(recipe)) from None
    finally:
        lock.release()
