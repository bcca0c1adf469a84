"""What decides that a stage is done, resumes or is redone: its record (`StageRecord`, `<stage>/stage.json`), its
fingerprint over the typed settings that change what it computes, and where a redone stage's old outputs go.
A key written down at the value the stage holds without it (what the recipe filled in for it, `StagePlan.filled`,
else its config's default, where the `training:` section does not set it) is left out: `seed: 42` or `beta: 0.0` written into a finished run redoes nothing.

The settings are read back from the stage's parsed configs (the TRL / transformers dataclasses the recipe built),
so `5e-5` and `5.0e-5` are one learning rate. Keys that only log, save, report or evaluate are left out in every
section, and so is the batch's shape: `per_device_train_batch_size` x `gradient_accumulation_steps` count as their
product (the effective batch per process; transformers' resume skips `global_step` x that many samples, so a
checkpoint stays meaningful when the shape changes and the product does not), and `rejection_sampling.batch_size`
(how many prompts generate at once) not at all. A redone stage's old outputs are kept, numbered
(`<stage>.previous`, `<stage>.previous.2`, ...), never deleted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..config import R1ModelConfig


class StagePlan(Protocol):
    """What a fingerprint reads of `recipe.StagePlan` (a protocol: the recipe imports this module)."""

    name: str
    kind: str
    args: Any
    config: Any
    model_args: R1ModelConfig | None
    section: dict[str, Any]
    filled: dict[str, Any]  # what the pipeline gives a key the recipe leaves out
    fingerprint: str
    settings: dict[str, Any]
    output_dir: Path

logger = logging.getLogger("trl_r1.pipeline")

# keys that change what a run logs, saves, reports or evaluates, never what it trains: editing them redoes no stage
BOOKKEEPING_KEYS = frozenset({
    "logging_steps", "logging_first_step", "logging_strategy", "logging_dir", "logging_nan_inf_filter", "report_to",
    "run_name", "disable_tqdm", "log_level", "log_level_replica", "log_completions", "num_completions_to_print",
    "save_steps", "save_strategy", "save_total_limit", "save_only_model", "push_to_hub", "hub_model_id",
    "hub_strategy", "hub_token", "hub_private_repo", "dataloader_num_workers", "dataloader_persistent_workers",
    "dataloader_prefetch_factor", "wandb_log_unique_prompts", "project", "trackio_space_id",
    "eval_strategy", "eval_steps", "eval_delay", "eval_on_start", "do_eval", "per_device_eval_batch_size",
    "eval_accumulation_steps", "eval_do_concat_batches", "eval_use_gather_object", "batch_eval_metrics",
    "include_for_metrics", "prediction_loss_only", "log_completions_hub_repo", "log_unique_prompts",
    "logging_nan_inf_filter", "print_stats",
})
BATCH_SHAPE_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps")
EFFECTIVE_BATCH = "effective_batch (per_device_train_batch_size x gradient_accumulation_steps)"
SHAPE_ONLY_KEYS = {"rejection_sampling": frozenset({"batch_size"})}  # by stage kind: how many at once, not what


def typed_value(key: str, raw: Any, *parsed: Any) -> Any:
    """The value of `key` as the first parsed config that has it holds it (TRL's types), else the raw value; as
    JSON would write it (enums as their value)."""
    for obj in parsed:
        if obj is not None and hasattr(obj, key):
            raw = getattr(obj, key)
            break
    return json.loads(json.dumps(raw, default=str))


_NO_DEFAULT = object()


def class_default(key: str, *parsed: Any) -> Any:
    """The value the first parsed config that has `key` holds when it is not given (its dataclass field's default,
    as JSON would write it); a sentinel equal to nothing where no dataclass field has it or it has no default.

    >>> from transformers import TrainingArguments
    >>> class_default("learning_rate", TrainingArguments("o")), class_default("nope", TrainingArguments("o")) == 1
    (5e-05, False)
    """
    for obj in parsed:
        fields = {f.name: f for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else {}
        if key in fields:
            field_ = fields[key]
            if field_.default is not dataclasses.MISSING:
                return json.loads(json.dumps(field_.default, default=str))
            if field_.default_factory is not dataclasses.MISSING:
                return json.loads(json.dumps(field_.default_factory(), default=str))
            return _NO_DEFAULT
    return _NO_DEFAULT


def stage_settings(plan: StagePlan, model_section: dict[str, Any], training: dict[str, Any],
                   model_args: R1ModelConfig | None = None) -> dict[str, dict[str, Any]]:
    """`{section: {key: typed value}}` of what changes the stage's result.

    >>> from pathlib import Path
    >>> from trl_r1.pipeline.recipe import StagePlan
    >>> from transformers import TrainingArguments
    >>> config = TrainingArguments("o", learning_rate=1e-4, per_device_train_batch_size=2,
    ...                            gradient_accumulation_steps=4, use_cpu=True)
    >>> plan = StagePlan("cold_start", "sft", None, config, None, Path("o"), section={
    ...     "learning_rate": "1e-4", "per_device_train_batch_size": 2, "gradient_accumulation_steps": 4,
    ...     "logging_steps": 1, "weight_decay": 0.0})  # weight_decay 0.0: the default, written down
    >>> stage_settings(plan, {}, {})["cold_start"]
    {'learning_rate': 0.0001, 'effective_batch (per_device_train_batch_size x gradient_accumulation_steps)': 8}
    """
    parsed = (plan.config, plan.args, plan.model_args)
    left_out = BOOKKEEPING_KEYS | SHAPE_ONLY_KEYS.get(plan.kind, frozenset())

    def typed(section: dict[str, Any], *objs: Any, inherited: dict[str, Any] | None = None,
              filled: dict[str, Any] = plan.filled) -> dict[str, Any]:
        kept = {key: typed_value(key, value, *objs) for key, value in section.items()
                if key not in left_out and key not in BATCH_SHAPE_KEYS}
        kept = {key: value for key, value in kept.items()  # a default written down changes nothing
                if key in (inherited or {}) or value != (filled[key] if key in filled else class_default(key, *objs))}
        if any(key in section for key in BATCH_SHAPE_KEYS) and plan.config is not None:
            kept[EFFECTIVE_BATCH] = (getattr(plan.config, BATCH_SHAPE_KEYS[0], 1)
                                     * getattr(plan.config, BATCH_SHAPE_KEYS[1], 1))
        return kept

    shared = {key: value for key, value in training.items() if key not in plan.section}  # a key the stage sets is its own
    return {"model": typed(model_section, model_args, plan.model_args, filled={}),
            "training": typed(shared, *parsed),
            plan.name: typed(plan.section, *parsed, inherited={**model_section, **training})}


def fingerprint_stages(stages: list[StagePlan], model_section: dict[str, Any], training: dict[str, Any],
                       model_args: R1ModelConfig | None = None) -> None:
    """Chain fingerprints: a stage is stale when what it computes changed (its section, the model, the shared
    `training:` defaults, typed, less bookkeeping and batch shape) or an earlier stage did. The evaluation
    settings are not in it: a change there re-runs the evaluations, never a training stage.

    >>> from pathlib import Path
    >>> from trl_r1.pipeline.recipe import StagePlan
    >>> plans = [StagePlan("cold_start", "sft", None, None, None, Path("r/cold_start"), section={"max_steps": 5})]
    >>> fingerprint_stages(plans, {}, {"learning_rate": 1e-4}); first = plans[0].fingerprint
    >>> fingerprint_stages(plans, {}, {"learning_rate": 1e-4, "logging_steps": 5}); plans[0].fingerprint == first
    True
    >>> fingerprint_stages(plans, {}, {"learning_rate": 2e-4}); plans[0].fingerprint == first
    False
    """
    previous = None
    for plan in stages:
        settings = stage_settings(plan, model_section, training, model_args)
        if previous is None:
            previous = digest({"model": settings["model"], "training": settings["training"]})
        # the shared sections enter through each stage: typed by that stage's own configs
        plan.fingerprint = previous = digest({"previous": previous, "name": plan.name, "settings": settings})
        plan.settings = settings


def changed_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """'section.key old -> new' for each key whose value differs between two `{section: {key: value}}` mappings.

    >>> changed_keys({"model": {"lora_r": 16}, "rl": {"beta": 0.0}}, {"model": {"lora_r": 32}, "rl": {}})
    ['model.lora_r 16 -> 32', 'rl.beta 0.0 -> (unset)']
    """
    def shown(section: dict[str, Any], key: str) -> str:
        return json.dumps(section[key], default=str)[:40] if key in section else "(unset)"

    changes, unset = [], object()
    for name in dict.fromkeys([*old, *new]):
        before, after = old.get(name) or {}, new.get(name) or {}
        for key in dict.fromkeys([*before, *after]):
            if before.get(key, unset) != after.get(key, unset):
                changes.append(f"{name}.{key} {shown(before, key)} -> {shown(after, key)}")
    return changes


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def next_previous(output_dir: Path) -> Path:
    """Where a redone stage's outputs go: `<stage>.previous`, else the first free `<stage>.previous.N` (N >= 2),
    so that no earlier run is overwritten."""
    first = output_dir.with_name(output_dir.name + ".previous")
    number, candidate = 2, first
    while candidate.exists():
        candidate = first.with_name(f"{first.name}.{number}")
        number += 1
    return candidate


def keep_previous(output_dir: Path, stage: str) -> Path:
    """Move a redone stage's outputs to `next_previous` and say where (the newest earlier run has the highest
    number); returns that folder."""
    previous = next_previous(output_dir)
    output_dir.rename(previous)
    logger.warning("%s: configuration changed; the previous run's outputs were moved to %s (the newest of the "
                   "earlier runs; delete the .previous folders yourself when you no longer need them)", stage, previous)
    return previous


__all__ = ["BOOKKEEPING_KEYS", "ModelHandle", "StageRecord", "changed_keys", "digest", "fingerprint_stages",
           "keep_previous", "next_previous", "prepare_stage_dir", "read_record", "stage_settings", "stage_status",
           "typed_value", "write_record"]


RECORD_FILE = "stage.json"  # a stage's record (`StageRecord`), written last when the stage finishes


def unreadable_record(stage_dir: Path) -> str | None:
    """Why the stage's record cannot be read (a kill during a copy, a full disk), or None when it reads or is
    absent. Such a stage is redone as changed, so its files are kept aside (`keep_previous`), never mixed in."""
    path = stage_dir / RECORD_FILE
    try:
        json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def record_notes(stages: list[StagePlan], done: set[str]) -> list[str]:
    """Plan notes from the stages' folders: a record that cannot be read (the stage runs again, its files moved to
    `.previous`), and a finished stage whose local data file was modified after the stage finished (kept, as its
    settings did not change, though it trained on the file's old rows)."""
    notes = []
    for plan in stages:
        record = plan.output_dir / RECORD_FILE
        why = unreadable_record(plan.output_dir)
        if why is not None:
            notes.append(f"{plan.name}: {record} cannot be read ({why[:80]}): the stage runs again and the files in "
                         f"its folder move to {next_previous(plan.output_dir)}")
            continue
        source = data_file(plan)
        if (plan.name in done and source is not None and source.stat().st_mtime > record.stat().st_mtime
                and file_changed(source, _recorded_stamp(record))):
            notes.append(f"{plan.name}: {source} was modified after this stage finished: the stage is kept, trained "
                         f"on the file's earlier rows; run with --from-stage {plan.name} to train on the new ones")
    return notes


@dataclass
class ModelHandle:
    """A model to start from: a full model directory, optionally with a LoRA adapter trained on top of it."""

    model_path: str
    adapter_path: str | None = None


@dataclass
class StageRecord:
    """What `stage.json` holds."""

    name: str
    fingerprint: str
    status: str = "running"  # running | done
    outputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    evaluation: dict[str, Any] | None = None
    seconds: float = 0.0
    settings: dict[str, Any] | None = None  # the recipe keys its fingerprint covers: a redo names what changed
    evaluation_settings: dict[str, Any] | None = None  # what `evaluation` was measured with: a change re-evaluates

    @property
    def handle(self) -> ModelHandle | None:
        if "model_path" not in self.outputs:
            return None
        return ModelHandle(self.outputs["model_path"], self.outputs.get("adapter_path"))

    @property
    def generator(self) -> ModelHandle | None:
        """What generates as this stage's model (its evaluation, rejection sampling from it): a LoRA stage's
        adapter on the base it trained on, whatever the hand-off; the merged copy only starts the next training."""
        if "adapter" in self.outputs and "adapter_base" in self.outputs:
            return ModelHandle(self.outputs["adapter_base"], self.outputs["adapter"])
        return self.handle


def read_record(stage_dir: Path) -> StageRecord | None:
    """The stage's record, or None if it never started (or the file is unreadable: the stage is redone)."""
    try:
        return StageRecord(**json.loads((stage_dir / RECORD_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_record(stage_dir: Path, record: StageRecord) -> None:
    stage_dir.mkdir(parents=True, exist_ok=True)
    tmp = stage_dir / (RECORD_FILE + ".tmp")
    tmp.write_text(json.dumps(asdict(record), indent=2, default=str))
    tmp.replace(stage_dir / RECORD_FILE)  # atomic: an interrupted write never leaves a half file


def stage_status(plan: StagePlan, forced: bool = False) -> str:
    """`done` (skip), `resume` (interrupted, same config), `stale` (config changed: redo) or `new`."""
    record = read_record(plan.output_dir)
    if record is None:
        return "stale" if unreadable_record(plan.output_dir) else "new"  # an unreadable record: keep its files aside
    if record.fingerprint != plan.fingerprint or forced:
        return "stale"
    return "done" if record.status == "done" else "resume"


def prepare_stage_dir(plan: StagePlan, status: str) -> None:
    """Move a stale stage's outputs aside (to `<stage>.previous`, numbered when taken: `fingerprint.keep_previous`) so that nothing of the old run is mixed in,
    then mark the stage running. The main process alone calls it (moving directories is not shared work).
    """
    if status == "stale" and plan.output_dir.exists():
        keep_previous(plan.output_dir, plan.name)
    if status != "resume":
        write_record(plan.output_dir, StageRecord(plan.name, plan.fingerprint, settings=plan.settings))


def data_file(plan: StagePlan) -> Path | None:
    """The local data file a stage trains on, if it names one."""
    source = Path(str(getattr(plan.args, "dataset_name", None) or getattr(plan.config, "dataset_name", "") or ""))
    return source if str(source) not in ("", ".") and source.is_file() else None


def file_stamp(path: Path) -> dict[str, Any]:
    """What a finished stage records of its data file: size, modification time and content digest."""
    with open(path, "rb") as f:
        sha256 = hashlib.file_digest(f, "sha256").hexdigest()
    stat = path.stat()
    return {"path": str(path), "size": stat.st_size, "mtime": stat.st_mtime, "sha256": sha256}


def file_changed(path: Path, stamp: dict[str, Any] | None) -> bool:
    """Whether `path` differs from its recorded `stamp` in content: the same mtime, or another size, decides
    without reading it; only a new mtime at the same size is hashed (a `cp -p` or `touch` leaves equal content).
    Without a stamp (an older record), a newer file counts as changed.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "rows.jsonl"
    >>> _ = path.write_text('{"prompt": "1 + 1"}'); stamp = file_stamp(path)
    >>> import os; os.utime(path, (stamp["mtime"] + 60, stamp["mtime"] + 60))  # touch
    >>> file_changed(path, stamp)
    False
    >>> _ = path.write_text('{"prompt": "1 + 2"}'); file_changed(path, stamp)
    True
    """
    if not stamp:
        return True
    stat = path.stat()
    if stat.st_size != stamp.get("size"):
        return True
    return stat.st_mtime != stamp.get("mtime") and file_stamp(path)["sha256"] != stamp.get("sha256")


def _recorded_stamp(record_file: Path) -> dict[str, Any] | None:
    try:
        return json.loads(record_file.read_text()).get("metrics", {}).get("data_file")
    except (OSError, ValueError, AttributeError):
        return None
