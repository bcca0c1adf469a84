"""The plan a run prints first and `--dry-run` prints after the preflight: each stage, what happens to it, where
it writes, the model as that stage loads it, its settings in full (command-line overrides marked), its cost, its
time and its memory; then the total time, the final model's and the report's paths.

The cost of a stage: prompts, samples, generated tokens and trained tokens. The token counts are upper bounds
(every sample at its maximum length: `max_completion_length`, `max_new_tokens`, `max_length`), and a dataset's
size is what the preflight saw (a streamed Hub dataset's card may not give it: then `max_samples`, else unknown).

Time: those token counts over the speed model's measured rates (`trl_r1.trainers.speed.RATES`: tokens per second
of generation and of training, by device, model size, weights, adapter and batch, each with its source), as a range (the measured
spread; a projection widens it by `PROJECTION_SPREAD` each way) and its geometric middle. "measured" where a row
matches the stage (device, model size, weights, adapter, batch); "projected" otherwise, scaled from the closest
row (`stage_rate`). A batched generate call lasts as long as its longest sample, so counting every sample at its
maximum length is the usual case for long reasoning, and an upper end for short answers; CPU rates count the
same bound over the measured wall time. A rate measured on another card is scaled by the cards' datasheets
(`trl_r1.trainers.speed`: decoding by memory bandwidth, training by tensor compute). vLLM is not measured here:
a vLLM stage on a GPU is timed at a published vLLM rate (`published` in `rates.jsonl`, its source named), always
"projected"; on the CPU, at the transformers rate (an upper end). Memory: the memory model (`trl_r1.trainers.memory`, through the preflight's `planned_peak`) for the
card planned for.
"""

from __future__ import annotations

import inspect
import math
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..toy.tiny import build_tiny_model
from ..trainers.memory import USABLE_FRACTION, ModelShape, model_shape
from ..trainers.speed import card_text, count_text, stage_rate
from .fingerprint import changed_keys, next_previous, read_record
from .preflight import PROMPT_TOKENS, Run, planned_peak
from .recipe import STAGE_REGISTRY

if TYPE_CHECKING:
    from .recipe import R1ModelConfig, SectionConfig, StagePlan

WIDTH = 116  # the plan's line width; settings wrap, they are never cut

@dataclass
class StageCost:
    """What one stage costs (None: not known before it runs). Token counts are upper bounds."""

    prompts: int | None = None
    samples: int | None = None  # generated samples (RL rollouts, rejection sampling, evaluation) or trained rows
    generated_tokens: int | None = None
    trained_tokens: int | None = None
    basis: str = ""  # how the numbers follow from the settings
    generation: tuple[str, str, bool] | None = None  # (backend, weights, adapter) of its generation
    generation_batch: int = 1  # sequences per generate call
    training: tuple[str, str, bool] | None = None  # (sft | grpo, weights, adapter) of its training
    prompt_tokens: int = 0  # tokens per trained sample beyond `trained_tokens`' (RL: the prompt), for the time
    device: str | None = None  # where it runs: "CPU", or None for the card planned for
    notes: list[str] = field(default_factory=list)  # what the plan should point out about it


def _times(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a * b


def _weights(model_args: R1ModelConfig) -> str:
    return "nf4" if model_args.load_in_4bit else "float32" if model_args.dtype == "float32" else "bf16"


def _device(config: SectionConfig | None, pipeline: Run) -> str | None:
    """"CPU" for a stage that runs there (`use_cpu`, its own or the recipe's `training`), else None (the card)."""
    use_cpu = getattr(config, "use_cpu", None)
    if use_cpu is None:
        use_cpu = bool(pipeline.recipe.shared.get("training", {}).get("use_cpu", False))
    return "CPU" if use_cpu else None


def dataset_rows(pipeline: Run, name: str, plan: StagePlan | None) -> int | None:
    """A stage's dataset size as the preflight saw it, else its `max_samples`."""
    schema = pipeline.data.schemas.get(name)
    if schema is not None and schema.num_rows is not None:
        return schema.num_rows
    return getattr(plan.args, "max_samples", None) if plan is not None and plan.args is not None else None


def training_cost(plan: StagePlan, pipeline: Run, rows: int | None, basis: str) -> StageCost:
    """SFT: the rows trained on (`max_steps` x batch, or epochs x rows), each at most `max_length` tokens."""
    c = plan.config
    batch = c.per_device_train_batch_size * c.gradient_accumulation_steps * pipeline.ranks.training_processes
    if c.max_steps and c.max_steps > 0:
        samples, how = c.max_steps * batch, f"{c.max_steps} steps x {batch} sequences"
    else:
        epochs = c.num_train_epochs
        samples = None if rows is None else math.ceil(epochs * rows)
        how = f"{epochs:g} epoch(s) x {count_text(rows)} rows{basis}"
    return StageCost(samples=samples, trained_tokens=_times(samples, c.max_length),
                     basis=f"{how}, <= max_length {c.max_length} tokens each",
                     training=("sft", _weights(plan.model_args), bool(plan.model_args.use_peft)),
                     device=_device(c, pipeline))


def rl_cost(plan: StagePlan, pipeline: Run) -> StageCost:
    """RL: `max_steps` x completions per step (per device x accumulation x processes), generated once every
    `num_iterations` steps, `num_generations` per prompt, each <= `max_completion_length` tokens. Notes a
    dataset that the steps go through more than once."""
    c = plan.config
    per_step = c.per_device_train_batch_size * c.gradient_accumulation_steps * pipeline.ranks.training_processes
    generations = getattr(c, "num_generations", None) or 1
    iterations = getattr(c, "num_iterations", 1) or 1
    rows = dataset_rows(pipeline, plan.name, plan)
    if c.max_steps and c.max_steps > 0:
        steps = c.max_steps
    else:
        steps = None if rows is None else math.ceil(c.num_train_epochs * rows * generations * iterations / per_step)
    trained = _times(steps, per_step)
    samples = None if trained is None else trained // iterations
    prompts = None if samples is None else samples // generations
    length = c.max_completion_length
    model_args = plan.model_args
    notes = []
    if prompts and rows and prompts >= 2 * rows:
        notes.append(f"{steps} steps sample {prompts:,} prompts from a dataset of {rows:,} rows: {prompts / rows:.0f} "
                     "passes over it; each prompt comes back that often (more rows, or fewer max_steps)")
    accumulated = getattr(c, "steps_per_generation", None) or c.gradient_accumulation_steps
    per_call = c.per_device_train_batch_size * accumulated  # sequences one generate call produces
    return StageCost(
        prompts=prompts, samples=samples,
        generated_tokens=_times(samples, length), trained_tokens=_times(trained, length),
        basis=(f"{steps if steps is not None else 'unknown'} steps x {per_step} completions, {generations} per "
               f"prompt, <= max_completion_length {length} tokens each (trained: the completion tokens)"
               + (f"; each generated batch trained num_iterations={iterations} times" if iterations > 1 else "")),
        generation=(plan.generation or "transformers", _weights(model_args),
                    bool(model_args.use_peft)),
        generation_batch=per_call, training=("grpo", _weights(model_args), bool(model_args.use_peft)),
        prompt_tokens=PROMPT_TOKENS, device=_device(c, pipeline), notes=notes)


def sampling_cost(pipeline: Run, prompts: int | None, num_samples: int, max_new_tokens: int, how: str,
                  generation: tuple[str, str, bool], batch: int, passes: int = 1) -> StageCost:
    """`passes` x `prompts` x `num_samples` samples, each <= `max_new_tokens`, `batch` prompts per call."""
    samples = _times(_times(prompts, passes), num_samples)
    return StageCost(prompts=prompts, samples=samples, generated_tokens=_times(samples, max_new_tokens),
                     trained_tokens=0, basis=f"{how} x {num_samples} samples, <= max_new_tokens {max_new_tokens} "
                     "tokens each", generation=generation, generation_batch=batch * num_samples,
                     device=_device(None, pipeline))


def final_sft_cost(plan: StagePlan, pipeline: Run, sampled: StageCost | None, max_per_prompt: int | None) -> StageCost:
    """An SFT on the accepted samples (at most `max_per_prompt` of each prompt's), plus its own dataset."""
    accepted = None
    if sampled is not None and sampled.prompts:
        accepted = sampled.prompts * min(sampled.samples // sampled.prompts, max_per_prompt or sampled.samples)
    own = dataset_rows(pipeline, plan.name, plan) if plan.args.dataset_name else 0
    rows = None if accepted is None or own is None else accepted + own
    mixed = " + mix_datasets" if plan.args.mix_datasets else ""
    return training_cost(plan, pipeline, rows, f" (<= the accepted samples{mixed})")


def rejection_sampling_cost(plan: StagePlan, pipeline: Run, prompt_rows: int | None) -> StageCost:
    """`max_prompts` (or every prompt) x `num_samples`, each <= `max_new_tokens`."""
    c, recipe = plan.config, pipeline.recipe
    prompts = prompt_rows if c.max_prompts is None else c.max_prompts if prompt_rows is None else \
        min(prompt_rows, c.max_prompts)
    how = f"{count_text(prompts)} prompts ({'max_prompts ' + str(c.max_prompts) if c.max_prompts else 'every prompt'})"
    adapter = bool(recipe.model.use_peft)  # it samples from the stage's adapter on its base, even when merged
    vllm = plan.generation == "vllm"
    weights = "nf4" if plan.load_in_4bit else "float32" if recipe.model.dtype == "float32" else "bf16"
    return sampling_cost(pipeline, prompts, c.num_samples, c.max_new_tokens, how,
                         ("vllm" if vllm else "transformers", weights, adapter), plan.generation_batch or c.batch_size)


def evaluation_cost(pipeline: Run) -> StageCost:
    """Every evaluation pass (`stages`, each a pass over the same prompts) x `num_prompts` x `num_samples`."""
    ev, recipe = pipeline.recipe.evaluation, pipeline.recipe
    rows = dataset_rows(pipeline, "evaluation", None)
    prompts = ev.num_prompts if rows is None else min(rows, ev.num_prompts or rows)
    passes = len([s for s in ev.stages if s == "base" or recipe.stage(s) is not None])
    vllm = recipe.evaluation_generation[0] == "vllm"
    weights = "float32" if recipe.model.dtype == "float32" else "bf16"
    adapter = bool(recipe.model.use_peft) and any(s != "base" for s in ev.stages)  # a trained stage's adapter
    return sampling_cost(pipeline, prompts, ev.num_samples, ev.max_new_tokens,
                         f"{passes} evaluation(s) x {count_text(prompts)} prompts",
                         ("vllm" if vllm else "transformers", weights, adapter),
                         recipe.evaluation_batch[0] if recipe.evaluation_batch else ev.batch_size, passes)


# --------------------------------------------------------------------------------------------- time and memory


def _duration(seconds: float) -> str:
    if seconds >= 36 * 3600:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s" if seconds >= 1 else "under 1 s"


def _span(low: float, mid: float, high: float) -> str:
    if _duration(low) == _duration(high):  # one measurement, at the maximum lengths
        return f"about {_duration(mid)} (a single measurement: no spread; shorter samples take less)"
    return f"about {_duration(mid)} ({_duration(low)} to {_duration(high)})"


@dataclass
class StageTime:
    """A stage's time: (fastest, middle, slowest) seconds, how each part was obtained, and whether the slowest is
    only an upper end (vLLM, timed at the transformers rate)."""

    seconds: tuple[float, float, float]
    parts: list[str]
    measured: bool
    upper_end: bool = False


def model_size(pipeline: Run) -> ModelShape | None:
    """The base model's `ModelShape` (None when unknown): its config.json, or, for a tiny model a dry run has not
    built, the shape its `model.tiny` settings build (vocabulary approximate)."""
    shape = model_shape(pipeline.base_model_path)
    tiny = pipeline.recipe.model.tiny
    if shape is not None or tiny is None:
        return shape
    settings = {k: p.default for k, p in inspect.signature(build_tiny_model).parameters.items()
                if p.default is not inspect.Parameter.empty}
    settings.update(tiny)
    hidden, heads = settings["hidden_size"], settings["num_heads"]
    head_dim = settings["head_dim"] or hidden // heads
    return ModelShape("tiny", hidden, settings["num_layers"], 2 * hidden, heads, max(1, heads // 2), head_dim,
                      settings["vocab_size"], True)


def stage_time(cost: StageCost, pipeline: Run) -> StageTime | str:
    """The time of a stage from its cost and `RATES`, or why there is none."""
    shape = model_size(pipeline)
    if shape is None:
        return f"not estimated: no config.json for {pipeline.base_model_path} at hand (its size sets the rate)"
    device = cost.device or (pipeline.card[0] if pipeline.card else None)
    total, parts, measured, upper = [0.0, 0.0, 0.0], [], True, False
    work = []
    if cost.generation is not None and cost.generated_tokens:
        backend, weights, adapter = cost.generation
        work.append(("generation", "vllm" if backend == "vllm" else "transformers", weights, adapter,
                     cost.generation_batch, cost.generated_tokens, backend == "vllm"))
    if cost.training is not None and cost.trained_tokens:
        kind, weights, adapter = cost.training
        work.append(("training", kind, weights, adapter, 1, cost.trained_tokens, False))
    for what, backend, weights, adapter, batch, tokens, vllm in work:
        rate = stage_rate(what, device, shape.num_params, shape.num_layers, backend, weights, adapter, batch)
        if rate is None:
            return f"not estimated: no {what} rate measured on {device or 'a GPU'}"
        if what == "training" and backend == "grpo" and "the sft rate" in rate.how and cost.samples:
            tokens += cost.samples * cost.prompt_tokens  # SFT's rate counts every token of the sequence
        seconds = rate.seconds(tokens)
        total = [t + s for t, s in zip(total, seconds)]
        fallback = vllm and "the transformers rate for vllm" in rate.how  # no vLLM row for this device kind
        vllm_note = " (no vLLM rate here: timed at the transformers rate, an upper end)" if fallback else ""
        speed = count_text(rate.low) if count_text(rate.low) == count_text(rate.high) else f"{count_text(rate.low)}-{count_text(rate.high)}"
        parts.append(f"{what} {_duration(seconds[1])} at {speed} tokens/s{vllm_note}, {rate.how}")
        measured &= rate.measured
        upper |= fallback
    if not parts:
        return "nothing to time"
    return StageTime(tuple(total), parts, measured, upper)


def time_lines(cost: StageCost, pipeline: Run) -> list[str]:
    timed = stage_time(cost, pipeline)
    if isinstance(timed, str):
        return [f"time:     {timed}"]
    low, mid, high = timed.seconds
    head = (f"up to {_duration(high)}" if timed.upper_end else _span(low, mid, high))
    lines = [f"time:     {head}, {'measured rates' if timed.measured else 'projected'}"]
    return lines + [f"          {part}" for part in timed.parts]


def memory_line(plan: StagePlan | None, cost: StageCost, pipeline: Run) -> str | None:
    """The memory model's peak for a stage (`plan` None: the evaluation) on the card planned for."""
    if (cost.device or "") == "CPU":
        return None
    shape = model_shape(pipeline.base_model_path)
    if shape is None:
        return f"memory:   not projected: no config.json for {pipeline.base_model_path} at hand"
    recipe, card = pipeline.recipe, pipeline.card
    card_gb = card[1] if card else 0.0  # no card: vLLM's share (a fraction of it) left out
    vllm = cost.generation is not None and cost.generation[0] == "vllm"
    peak = planned_peak(recipe, plan, shape, card_gb, pipeline.longest_prompts)
    if peak is None:
        return "memory:   not projected: the memory model covers LoRA and QLoRA stages, not full fine-tuning"
    bytes_, what = peak
    config = recipe.evaluation if plan is None else plan.config
    share = getattr(config, "vllm_gpu_memory_utilization", None)
    if card is None:
        extra = f" + vLLM's share ({share} of the card)" if vllm and share else ""
        return (f"memory:   peak {bytes_ / 1e9:.1f} GB{extra} ({what}), projected by the memory model; no card named: "
                "--card 24 checks it against a 24 GB card")
    verdict = "fits in" if bytes_ <= USABLE_FRACTION * card[1] * 1e9 else "OVER"
    return (f"memory:   peak {bytes_ / 1e9:.1f} GB ({what}), projected by the memory model: {verdict} "
            f"{USABLE_FRACTION:.0%} of the {card_text(card)}")


# --------------------------------------------------------------------------------------------- the plan


def model_line(plan: StagePlan, pipeline: Run) -> str | None:
    """How this stage loads the model (a stage may override the recipe's model keys), 4-bit as its plan decided."""
    model, recipe = plan.model_args, pipeline.recipe
    if model is None:
        if plan.kind != "rejection_sampling":
            return None
        dtype = "bf16" if recipe.model.dtype == "bfloat16" else recipe.model.dtype
        return f"loads:    {'4-bit NF4' if plan.load_in_4bit else dtype} weights for sampling"
    dtype = model.dtype or "auto"
    if plan.load_in_4bit:
        mode = f"QLoRA: 4-bit NF4 base ({dtype} compute) + LoRA r={model.lora_r}"
    elif model.use_peft:
        mode = f"LoRA r={model.lora_r} on the {dtype} base"
    else:
        mode = f"full fine-tuning in {dtype}"
    return f"loads:    {mode}, adapter_handoff={model.adapter_handoff}"


def decided_line(generation: tuple[str | None, str], batch: tuple[int | None, str], seed: int | None) -> str:
    """What the run will do, as the plan decided it once (`preflight.resolve_stage`, `size_generation`): the
    backend a stage or the evaluation generates with and why, its prompts per generate call and why, its seed
    (whether its model loads in 4 bits is the `loads:` line's, `model_line`)."""
    parts = [f"generates with {generation[0]} ({generation[1]})"] if generation[0] else []
    if batch[0] is not None:
        parts.append(f"{batch[0]} prompts per generate call ({batch[1]})")
    if seed is not None:
        parts.append(f"seed {seed}")
    return f"decided:  {'; '.join(parts)}"


def settings_lines(label: str, section: dict[str, Any], name: str, overridden: set[str]) -> list[str]:
    """Every key of a section, wrapped (never cut), the command line's overrides marked `(overridden)`."""
    items = [f"{k}={v}" + (" (overridden)" if f"{name}.{k}" in overridden or k in overridden else "")
             for k, v in section.items()]
    lines: list[str] = []
    for item in items:  # wrapped between items, so that a value and its mark stay on one line
        if lines and len(lines[-1]) + len(item) + 2 <= WIDTH:
            lines[-1] += f", {item}"
        else:
            if lines:
                lines[-1] += ","
            lines.append(f"     {label:<10}{item}" if not lines else " " * 15 + item)
    return lines


def _wrap(line: str) -> list[str]:
    return textwrap.wrap(line, WIDTH, initial_indent=" " * 5, subsequent_indent=" " * 15)


def cost_lines(cost: StageCost | None, pipeline: Run, plan: StagePlan | None) -> list[str]:
    if cost is None:
        return []
    parts = []
    if cost.prompts is not None or cost.generation is not None:
        parts.append(f"prompts {count_text(cost.prompts)}")
    parts.append(f"samples {count_text(cost.samples)}")
    if cost.generation is not None:
        parts.append(f"generated <= {count_text(cost.generated_tokens)} tokens")
    if cost.trained_tokens != 0:
        parts.append(f"trained <= {count_text(cost.trained_tokens)} tokens")
    lines = [f"     cost:     {', '.join(parts)}"]
    lines += textwrap.wrap(f"({cost.basis})", WIDTH, initial_indent=" " * 15, subsequent_indent=" " * 15)
    for line in time_lines(cost, pipeline):
        lines += _wrap(line)
    memory = memory_line(plan, cost, pipeline)
    if memory:
        lines += _wrap(memory)
    for note in cost.notes:
        lines += _wrap(f"note:     {note}")
    return lines


def final_model_line(pipeline: Run) -> str | None:
    """Where the run's model ends up: the last stage that trains one, merged or as an adapter on its base."""
    trained = [p for p in pipeline.recipe.stages if p.model_args is not None]
    if not trained:
        return None
    last = trained[-1]
    if not last.model_args.use_peft:
        return f"final model: {last.output_dir} (full weights)"
    if last.model_args.adapter_handoff == "merge":
        return (f"final model: {last.output_dir / 'merged'} (the LoRA adapter in {last.output_dir}, merged into its "
                "base)")
    return f"final model: the LoRA adapter in {last.output_dir}, on the base it names"


def total_line(costs: list[StageCost], pipeline: Run) -> str:
    """The time of every stage still to run, and of the evaluation."""
    timed = [stage_time(c, pipeline) for c in costs]
    known = [t for t in timed if isinstance(t, StageTime)]
    if not known:
        return "total:   time not estimated"
    low, mid, high = (sum(t.seconds[i] for t in known) for i in range(3))
    measured = all(t.measured for t in known)
    missing = len(timed) - len(known)
    head = _span(low, mid, high)
    tail = (", vLLM generation at the transformers rate (an upper end)" if any(t.upper_end for t in known) else "")
    unknown = f", plus {missing} part(s) not estimated" if missing else ""
    return (f"total:   {head} for what is left to run, {'from measured rates' if measured else 'projected'}{tail}"
            f"{unknown}; loading, merging and saving models not counted")


def stage_notes(plan: StagePlan, pipeline: Run) -> list[str]:
    """What the plan says under a stage besides its action: why a `redo` (the keys that changed, or the earlier
    stage that is redone) and where its old outputs go; that a finished stage is evaluated again."""
    status = pipeline.status[plan.name]
    if status == "stale":
        return [f"redo:     {redo_reason(plan, pipeline)}; its old outputs move to {next_previous(plan.output_dir)}"]
    record = read_record(plan.output_dir) if status == "done" else None
    if record is not None and pipeline.evaluation.outdated(plan, record):
        changed = (changed_keys(record.evaluation_settings, pipeline.evaluation.settings())
                   if record.evaluation_settings else [])
        why = ", ".join(changed) if changed else "not evaluated with these settings"
        return [f"evaluate: again ({why}); the trained model is kept"]
    return []


def redo_reason(plan: StagePlan, pipeline: Run) -> str:
    record = read_record(plan.output_dir)
    if record is not None and record.fingerprint == plan.fingerprint:
        return f"--from-stage {pipeline.from_stage}"
    if record is None or record.settings is None:
        return "its settings changed (its stage.json is unreadable, or does not record which: an older trl-r1)"
    changed = changed_keys(record.settings, plan.settings)
    if changed:
        return "changed: " + ", ".join(changed)
    stages = pipeline.recipe.stages
    earlier = [p.name for p in stages[:stages.index(plan)] if pipeline.status[p.name] != "done"]
    return f"an earlier stage changed ({', '.join(earlier) or 'one no longer in the recipe'})"


def plan_lines(pipeline: Run) -> list[str]:
    """The plan of a run (`Pipeline.plan_lines`) with each stage's cost (`Stage.cost`): after the preflight, whose
    schemas give the datasets' sizes."""
    recipe = pipeline.recipe
    costs: dict[str, StageCost] = {}
    for plan in recipe.stages:
        if plan.config is not None:
            costs[plan.name] = STAGE_REGISTRY[plan.name].cost(plan, pipeline, costs)
    model = recipe.model
    built = " (tiny, built locally)" if model.tiny is not None else ""
    card = (card_text(pipeline.card) if pipeline.card else "no GPU here and none named (--card): memory not checked")
    lines = [f"run_dir: {recipe.run_dir}", f"model:   {pipeline.base_model_path}{built}", f"card:    {card}"]
    if pipeline.ranks.training_processes > 1:
        lines.append(f"ranks:   {pipeline.ranks.training_processes} (training data-parallel, the rest on the main process)")
    shared = recipe.shared
    for section in ("model", "training"):
        lines += settings_lines(f"{section}:", shared.get(section, {}), section, pipeline.overridden)
    to_run = []
    for i, plan in enumerate(recipe.stages, 1):
        status = pipeline.status[plan.name]
        action = {"done": "skip (done)", "resume": "resume", "stale": "redo", "new": "run"}[status]
        lines.append(f"{i}. {plan.name:<19}{plan.kind:<19}{action:<12}-> {plan.output_dir}")
        lines += [f"     {note}" for note in stage_notes(plan, pipeline)]
        described = model_line(plan, pipeline)
        if described:
            lines.append(f"     {described}")
        lines += _wrap(decided_line((plan.generation, plan.generation_why),
                                    (plan.generation_batch, plan.generation_batch_why), plan.seed))
        lines += settings_lines("settings:", plan.section, plan.name, pipeline.overridden)
        cost = costs.get(plan.name)
        lines += cost_lines(cost, pipeline, plan)
        if cost is not None and status != "done":
            to_run.append(cost)
    ev = recipe.evaluation
    if ev is not None:
        stages = [s for s in ev.stages if s == "base" or recipe.stage(s) is not None]
        lines.append(f"evaluation: {ev.dataset_name} [{ev.dataset_split}], {ev.num_prompts} prompts x {ev.num_samples} "
                     f"samples at T={ev.temperature}, after each of {', '.join(stages)}")
        lines += _wrap(decided_line(recipe.evaluation_generation, recipe.evaluation_batch or (None, ""), ev.seed))
        lines += settings_lines("settings:", shared.get("evaluation", {}), "evaluation", pipeline.overridden)
        cost = evaluation_cost(pipeline)
        lines += cost_lines(cost, pipeline, None)
        to_run.append(cost)
    lines.append(f"token counts are upper bounds: every sample at its maximum length; prompt tokens (<= {PROMPT_TOKENS} "
                 "assumed) are not counted")
    lines += textwrap.wrap(total_line(to_run, pipeline), WIDTH, subsequent_indent=" " * 9)
    final = final_model_line(pipeline)
    if final:
        lines += textwrap.wrap(final, WIDTH, subsequent_indent=" " * 13)
    lines.append(f"report:  {recipe.run_dir / 'report.md'}")
    lines += [f"note: {note}" for note in pipeline.notes]
    return lines


__all__ = ["StageCost", "StageTime", "dataset_rows", "final_sft_cost",
           "plan_lines", "rejection_sampling_cost", "rl_cost", "stage_time",
           "training_cost"]
