"""Ctrl-C (SIGINT) during a run: one line instead of a traceback, naming the stage it stopped in and what the same
command does next (resume from that stage's last checkpoint, or start the stage over where none was saved)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .checkpoints import last_complete_checkpoint
from .stages import StageError, read_record

if TYPE_CHECKING:
    from .recipe import Recipe


class RunInterrupted(StageError):
    """The user stopped the run (exit 130, as a shell reports SIGINT)."""


def interrupted_line(recipe: Recipe) -> str:
    """Where the run stopped: the first stage not recorded done, and its last checkpoint."""
    for plan in recipe.stages:
        record = read_record(plan.output_dir)
        if record is not None and record.status == "done":
            continue
        checkpoint = last_complete_checkpoint(plan.output_dir)
        if checkpoint is None:
            return (f"interrupted (Ctrl-C) in stage {plan.name}, before it saved a checkpoint; run the same command "
                    "again to start that stage over (the stages before it are kept)")
        return (f"interrupted (Ctrl-C) in stage {plan.name}; run the same command again to resume from "
                f"{checkpoint}")
    return "interrupted (Ctrl-C) after the last stage; run the same command again to finish the evaluation and report"
