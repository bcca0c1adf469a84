"""The plan a run prints first and `--dry-run` prints after the preflight: each stage, what happens to it, where
it writes, the model as that stage loads it, its settings in full (command-line overrides marked), and its cost.

The cost of a stage: prompts, samples, generated tokens and trained tokens. The token counts are upper bounds
(every sample at its maximum length: `max_completion_length`, `max_new_tokens`, `max_length`), and a dataset's
size is what the preflight saw (a streamed Hub dataset's card may not give it: then `max_samples`, else
unknown). Generation time comes from `THROUGHPUT`, the generation rates measured on a GPU: "measured" where a
row matches the card, model, backend and weights, "projected" otherwise (scaled from the nearest row, see
`generation_rate`). No training throughput has been measured, so training time is not estimated.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any

from .preflight import PROMPT_TOKENS, loads_4bit, uses_vllm

WIDTH = 116  # the plan's line width; settings wrap, they are never cut


@dataclass(frozen=True)
class Throughput:
    """One measured generation rate: tokens generated per second, summed over the batch."""

    card: str
    model: str
    backend: str  # transformers | vllm
    weights: str  # bf16 | nf4
    adapter: bool  # an unmerged LoRA adapter on top
    batch: int  # sequences generated together
    tokens_per_s: float
    source: str


_ISSUE_21 = ("issue 21: measured on an NVIDIA H200, real Qwen2.5-1.5B shape, transformers generate, batch 32, "
             "256 new tokens, sampling")
# The measured rates the plan uses. One place, as data: benchmarks/gpu.py's results are rows of this table.
THROUGHPUT: list[Throughput] = [
    Throughput("H200", "Qwen/Qwen2.5-1.5B-Instruct", "transformers", "bf16", False, 32, 548.0, _ISSUE_21),
    Throughput("H200", "Qwen/Qwen2.5-1.5B-Instruct", "transformers", "bf16", True, 32, 368.0, _ISSUE_21),
    Throughput("H200", "Qwen/Qwen2.5-1.5B-Instruct", "transformers", "nf4", True, 32, 329.0, _ISSUE_21),
]


def generation_rate(card: str | None, model: str, backend: str, weights: str, adapter: bool,
                    num_params: Any = None) -> tuple[float, str] | None:
    """(tokens/s, how it was obtained) for generating with `model` on `card`.

    "measured": a `THROUGHPUT` row with this card (by name), model, backend, weights and adapter. Otherwise
    "projected" from the row with the same weights and adapter: scaled by the models' parameter counts (a
    decoding step reads every weight once) for another model, and, for vLLM, the transformers rate taken as a
    floor (vLLM generates faster, so the time is an upper bound). None without such a row, or for another model
    whose size `num_params(model)` does not know.

    >>> generation_rate("NVIDIA H200", "Qwen/Qwen2.5-1.5B-Instruct", "transformers", "nf4", True)[0]
    329.0
    >>> generation_rate(None, "Qwen/Qwen2.5-1.5B-Instruct", "transformers", "nf4", True)[1].startswith("projected")
    True
    """
    rows = [r for r in THROUGHPUT if r.weights == weights and r.adapter == adapter]
    for row in rows:
        if (card and row.card.lower() in card.lower() and row.model.lower() == model.lower()
                and row.backend == backend):
            return row.tokens_per_s, f"measured: {row.source}"
    same_backend = [r for r in rows if r.backend == backend] or [r for r in rows if r.backend == "transformers"]
    if not same_backend:
        return None
    row, rate, how = same_backend[0], same_backend[0].tokens_per_s, []
    if row.card.lower() not in (card or "").lower():
        how.append(f"{row.card}'s rate, not measured on {card or 'this card'}")
    if row.model.lower() != model.lower():
        mine, theirs = (num_params(model), num_params(row.model)) if num_params else (None, None)
        if not (mine and theirs):
            return None  # another model of unknown size: nothing to project from
        rate *= theirs / mine
        how.append(f"scaled from {row.model} by parameter count")
    if backend != row.backend:
        how.append(f"the {row.backend} rate as a floor for {backend}: the time is an upper bound")
    return rate, f"projected ({'; '.join(how)}) from {row.source}"


@dataclass
class StageCost:
    """What one stage costs (None: not known before it runs). Token counts are upper bounds."""

    prompts: int | None = None
    samples: int | None = None  # generated samples (RL rollouts, rejection sampling, evaluation) or trained rows
    generated_tokens: int | None = None
    trained_tokens: int | None = None
    basis: str = ""  # how the numbers follow from the settings
    generation: tuple[str, str, bool] | None = None  # (backend, weights, adapter) of its generation


def _n(value: float | None) -> str:
    if value is None:
        return "unknown"
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= 10 * size if suffix == "k" else value >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{int(value):,}"


def _times(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a * b


def dataset_rows(pipeline: Any, name: str, plan: Any | None) -> int | None:
    """A stage's dataset size as the preflight saw it, else its `max_samples`."""
    schema = pipeline.schemas.get(name)
    if schema is not None and schema.num_rows is not None:
        return schema.num_rows
    return getattr(plan.args, "max_samples", None) if plan is not None and plan.args is not None else None


def training_cost(plan: Any, pipeline: Any, rows: int | None, basis: str) -> StageCost:
    """SFT: the rows trained on (`max_steps` x batch, or epochs x rows), each at most `max_length` tokens."""
    c = plan.config
    batch = c.per_device_train_batch_size * c.gradient_accumulation_steps * pipeline.ranks.num_processes
    if c.max_steps and c.max_steps > 0:
        samples, how = c.max_steps * batch, f"{c.max_steps} steps x {batch} sequences"
    else:
        epochs = c.num_train_epochs
        samples = None if rows is None else math.ceil(epochs * rows)
        how = f"{epochs:g} epoch(s) x {_n(rows)} rows{basis}"
    return StageCost(samples=samples, trained_tokens=_times(samples, c.max_length),
                     basis=f"{how}, <= max_length {c.max_length} tokens each")


def rl_cost(plan: Any, pipeline: Any) -> StageCost:
    """RL: `max_steps` x completions per step (per device x accumulation x processes), generated once every
    `num_iterations` steps, `num_generations` per prompt, each <= `max_completion_length` tokens."""
    c = plan.config
    per_step = c.per_device_train_batch_size * c.gradient_accumulation_steps * pipeline.ranks.num_processes
    generations = getattr(c, "num_generations", None) or 1
    iterations = getattr(c, "num_iterations", 1) or 1
    rows = dataset_rows(pipeline, plan.name, plan)
    if c.max_steps and c.max_steps > 0:
        steps = c.max_steps
    else:
        steps = None if rows is None else math.ceil(c.num_train_epochs * rows * generations * iterations / per_step)
    trained = _times(steps, per_step)
    samples = None if trained is None else trained // iterations
    length = c.max_completion_length
    model_args = plan.model_args
    return StageCost(
        prompts=None if samples is None else samples // generations, samples=samples,
        generated_tokens=_times(samples, length), trained_tokens=_times(trained, length),
        basis=(f"{steps if steps is not None else 'unknown'} steps x {per_step} completions, {generations} per "
               f"prompt, <= max_completion_length {length} tokens each (trained: the completion tokens)"),
        generation=("vllm" if getattr(c, "use_vllm", False) else "transformers",
                    "nf4" if model_args.load_in_4bit else "bf16", bool(model_args.use_peft)))


def sampling_cost(pipeline: Any, prompts: int | None, num_samples: int, max_new_tokens: int, how: str,
                  generation: tuple[str, str, bool]) -> StageCost:
    samples = _times(prompts, num_samples)
    return StageCost(prompts=prompts, samples=samples, generated_tokens=_times(samples, max_new_tokens),
                     trained_tokens=0, basis=f"{how} x {num_samples} samples, <= max_new_tokens {max_new_tokens} "
                     "tokens each", generation=generation)


def final_sft_cost(plan: Any, pipeline: Any, sampled: StageCost | None, max_per_prompt: int | None) -> StageCost:
    """An SFT on the accepted samples (at most `max_per_prompt` of each prompt's), plus its own dataset."""
    accepted = None
    if sampled is not None and sampled.prompts:
        accepted = sampled.prompts * min(sampled.samples // sampled.prompts, max_per_prompt or sampled.samples)
    own = dataset_rows(pipeline, plan.name, plan) if plan.args.dataset_name else 0
    rows = None if accepted is None or own is None else accepted + own
    mixed = " + mix_datasets" if plan.args.mix_datasets else ""
    return training_cost(plan, pipeline, rows, f" (<= the accepted samples{mixed})")


def rejection_sampling_cost(plan: Any, pipeline: Any, prompt_rows: int | None) -> StageCost:
    """`max_prompts` (or every prompt) x `num_samples`, each <= `max_new_tokens`."""
    c, recipe = plan.config, pipeline.recipe
    prompts = prompt_rows if c.max_prompts is None else c.max_prompts if prompt_rows is None else \
        min(prompt_rows, c.max_prompts)
    how = f"{_n(prompts)} prompts ({'max_prompts ' + str(c.max_prompts) if c.max_prompts else 'every prompt'})"
    adapter = bool(recipe.model.use_peft) and recipe.model.adapter_handoff == "continue"
    vllm = uses_vllm(plan, vllm_installed=pipeline.vllm_installed, cuda=pipeline.card is not None)
    return sampling_cost(pipeline, prompts, c.num_samples, c.max_new_tokens, how,
                         ("vllm" if vllm else "transformers", "nf4" if loads_4bit(plan, recipe) else "bf16", adapter))


def evaluation_cost(pipeline: Any) -> StageCost:
    ev, recipe = pipeline.recipe.evaluation, pipeline.recipe
    rows = dataset_rows(pipeline, "evaluation", None)
    prompts = ev.num_prompts if rows is None else min(rows, ev.num_prompts or rows)
    passes = len([s for s in ev.stages if s == "base" or recipe.stage(s) is not None])
    vllm = ev.backend == "vllm" or (ev.backend == "auto" and pipeline.vllm_installed and pipeline.card is not None)
    return sampling_cost(pipeline, _times(prompts, passes), ev.num_samples, ev.max_new_tokens,
                         f"{passes} evaluations x {_n(prompts)} prompts", ("vllm" if vllm else "transformers", "bf16",
                                                                            False))


def time_line(cost: StageCost, pipeline: Any) -> str:
    if cost.generation is None or not cost.generated_tokens:
        return "time:     training not estimated (no training throughput measured yet)"
    from .preflight import model_shape

    def params(model: str) -> int | None:
        shape = model_shape(model)
        return shape.num_params if shape is not None else None

    card = pipeline.card[0] if pipeline.card else None
    rate = generation_rate(card, pipeline.base_model_path, *cost.generation, num_params=params)
    if rate is None:
        return "time:     generation not estimated (no measured rate for this model, nor its size to scale one)"
    seconds = cost.generated_tokens / rate[0]
    took = (f"{seconds / 3600:,.1f} h" if seconds >= 360 else f"{seconds / 60:.1f} min" if seconds >= 60
            else f"{seconds:.0f} s")
    training = " (+ training, not estimated)" if cost.trained_tokens else ""
    return f"time:     generation <= {took}{training} at {rate[0]:.0f} tokens/s, {rate[1]}"


def model_line(plan: Any, pipeline: Any) -> str | None:
    """How this stage loads the model (a stage may override the recipe's model keys)."""
    model, recipe = plan.model_args, pipeline.recipe
    if model is None:
        if plan.kind != "rejection_sampling":
            return None
        dtype = "bf16" if recipe.model.dtype == "bfloat16" else recipe.model.dtype
        return f"loads:    {'4-bit NF4' if loads_4bit(plan, recipe) else dtype} weights for sampling"
    dtype = model.dtype or "auto"
    if model.load_in_4bit:
        mode = f"QLoRA: 4-bit NF4 base ({dtype} compute) + LoRA r={model.lora_r}"
    elif model.use_peft:
        mode = f"LoRA r={model.lora_r} on the {dtype} base"
    else:
        mode = f"full fine-tuning in {dtype}"
    return f"loads:    {mode}, adapter_handoff={model.adapter_handoff}"


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


def cost_lines(cost: StageCost | None, pipeline: Any) -> list[str]:
    if cost is None:
        return []
    parts = []
    if cost.prompts is not None or cost.generation is not None:
        parts.append(f"prompts {_n(cost.prompts)}")
    parts.append(f"samples {_n(cost.samples)}")
    if cost.generation is not None:
        parts.append(f"generated <= {_n(cost.generated_tokens)} tokens")
    if cost.trained_tokens != 0:
        parts.append(f"trained <= {_n(cost.trained_tokens)} tokens")
    lines = [f"     cost:     {', '.join(parts)}"]
    lines += textwrap.wrap(f"({cost.basis})", WIDTH, initial_indent=" " * 15, subsequent_indent=" " * 15)
    lines += textwrap.wrap(time_line(cost, pipeline), WIDTH, initial_indent=" " * 5, subsequent_indent=" " * 15)
    return lines


def plan_lines(pipeline: Any, costs: dict[str, StageCost]) -> list[str]:
    """The plan of a pipeline (`Pipeline.plan_lines`) with each stage's cost (`Stage.cost`): after the preflight,
    whose schemas give the datasets' sizes."""
    recipe = pipeline.recipe
    model = recipe.model
    built = " (tiny, built locally)" if model.tiny is not None else ""
    card = (f"{pipeline.card[0]} ({pipeline.card[1]:.0f} GB)" if pipeline.card
            else "no GPU here (costs below; memory not checked)")
    lines = [f"run_dir: {recipe.run_dir}", f"model:   {pipeline.base_model_path}{built}", f"card:    {card}"]
    if pipeline.ranks.distributed:
        lines.append(f"ranks:   {pipeline.ranks.num_processes} (training data-parallel, the rest on the main process)")
    shared = recipe.shared
    for section in ("model", "training"):
        lines += settings_lines(f"{section}:", shared.get(section, {}), section, pipeline.overridden)
    for i, plan in enumerate(recipe.stages, 1):
        action = {"done": "skip (done)", "resume": "resume", "stale": "redo", "new": "run"}[pipeline.status[plan.name]]
        lines.append(f"{i}. {plan.name:<19}{plan.kind:<19}{action:<12}-> {plan.output_dir}")
        lines += [f"     {note}" for note in pipeline.stage_notes(plan)]
        described = model_line(plan, pipeline)
        if described:
            lines.append(f"     {described}")
        lines += settings_lines("settings:", plan.section, plan.name, pipeline.overridden)
        lines += cost_lines(costs.get(plan.name), pipeline)
    ev = recipe.evaluation
    if ev is not None:
        lines.append(f"evaluation: {ev.dataset_name} [{ev.dataset_split}] after {ev.stages}, {ev.num_prompts} "
                     f"prompts x {ev.num_samples} samples at T={ev.temperature}")
        lines += settings_lines("settings:", shared.get("evaluation", {}), "evaluation", pipeline.overridden)
        lines += cost_lines(evaluation_cost(pipeline), pipeline)
    lines.append(f"token counts are upper bounds: every sample at its maximum length; prompt tokens (<= {PROMPT_TOKENS} "
                 "assumed) are not counted")
    lines += [f"note: {note}" for note in pipeline.notes]
    return lines


__all__ = ["THROUGHPUT", "StageCost", "Throughput", "dataset_rows", "final_sft_cost", "generation_rate", "plan_lines",
           "rejection_sampling_cost", "rl_cost", "training_cost"]
