"""Rejection sampling (DeepSeek-R1 §2.3.3): sample k answers per prompt, keep the verified, readable ones.

`rejection_sample(config)` generates `num_samples` completions per prompt with the generation layer, scores them
with trl-r1's reward functions (the same code path as training), applies R1's filters and writes:

* `sft.jsonl`: accepted rows in TRL's conversational format, `{"messages": [...prompt, {"role": "assistant",
  "content": "<think>...</think>\\n<answer>...</answer>"}], **source columns}`, ready for `SFTTrainer`;
* `prompt_stats.jsonl`: every prompt row with its pass rate, so `0 < pass_rate < 1` picks RL prompts;
* `stats.json`: generated/accepted counts and each filter's rejection count; `run.json`: config + model.

Results are appended to `records.jsonl` one line per prompt after each batch, so an interrupted run restarts where
it stopped with no duplicates and nothing written lost. The distillation builder reuses this engine.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..completion import Completion, prompt_to_text
from ..config import counted
from ..verifiers.format import Trace
from . import filters as F
from .filters import R1Filters
from .generation import (
    BACKENDS,
    VLLM_FALLBACKS,
    Generator,
    OpenAIGenerator,
    SamplingParams,
    check_sampling,
    is_prompt,
    load_generator,
    resolve_backend,
    vllm_engine_kwargs,
    vllm_fallback_field,
)
from .hub import export_for_hub, push_problem, push_to_hub
from .layout import PROMPT_STATS, RECORDS, RUN, SFT, STATS
from .loading import load_dataset_spec

logger = logging.getLogger("trl_r1.data")

BATCH_PROMPT_TOKENS = 512  # the prompt length batch_size is sized for (as the memory model assumes)

# settings that may change between an interrupted run and its restart (they do not change what is kept)
_RESUMABLE_CHANGES = {"output_dir", "batch_size", "max_prompts", "backend", "vllm_fallback", "base_url",
                      "request_timeout_s", "max_retries", "hub_dataset_id", "hub_private", "export_only", "license",
                      "server_timeout_s",
                      "vllm_gpu_memory_utilization",
                      "vllm_max_model_length"}


@dataclass
class RejectionSamplingConfig:
    """Rejection sampling settings (also the `rejection_sampling:` section of recipes and `trl-r1 rejection-sample`)."""

    model_name_or_path: str = field(metadata={"help": "Model to sample from: a local path or Hub id (the RL "
                                              "checkpoint), or the model name served at `base_url`."})
    output_dir: str = field(metadata={"help": "Where records, the SFT dataset and statistics are written; an "
                                      "interrupted run restarts from what is there."})
    dataset_name: str | None = field(default=None, metadata={
        "help": "Prompt dataset, named as in recipes: a Python builder 'module:function', a local "
                "json/jsonl/parquet/csv/txt file, a `save_to_disk` folder, or a Hub id. "
                "Other columns (gold answers, tests) are passed to the rewards and kept in the output."})
    dataset_split: str = field(default="train", metadata={"help": "Split of `dataset_name` to use."})
    adapter_path: str | None = field(default=None, metadata={"help": "PEFT adapter applied on top of "
                                                             "`model_name_or_path` (e.g. a GRPO LoRA checkpoint)."})
    load_in_4bit: bool = field(default=False, metadata={"help": "Load the base model in 4-bit NF4 (QLoRA)."})
    prompt_column: str = field(default="prompt", metadata={
        "help": "Column with the prompts: plain strings (used as is) or lists of messages (chat template applied "
                "like TRL's trainers)."})
    solution_column: str = field(default="solution", metadata={
        "help": "Column with the gold answers, passed to the rewards as `solution` (as in grpo and evaluate)."})
    num_samples: int = field(default=8, metadata={"help": "Samples per prompt (k). R1 samples 'multiple responses' "
                                                  "per prompt without saying how many."})
    max_new_tokens: int = field(default=1024, metadata={"help": "Maximum tokens per sample; truncated samples have "
                                                        "no answer and are rejected as malformed."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (R1's RL rollouts use 1.0; 0 "
                                                      "means greedy)."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling threshold."})
    batch_size: int = field(default=8, metadata={
        "help": "Prompts per generation call (all their k samples are generated together); with the openai "
                "backend, the number of concurrent requests. Results are saved after each batch."})
    rewards: list[Any] = field(default_factory=lambda: ["math", "format"], metadata={
        "help": "Rewards that must all pass (score >= min_reward), by trl_r1.rewards registry name, dotted path or "
                "{name: ..., options} mapping. None from a reward means it does not apply to the sample (e.g. the code "
                "reward on a math row), so mixed datasets work; a sample that no correctness reward (any but format and "
                "language) could score is rejected as unverified."})
    min_reward: float = field(default=1.0, metadata={
        "help": "Per-reward acceptance threshold: 1.0 keeps only fully correct samples (R1 keeps 'only the correct "
                "ones'); lower it for partial-credit rewards such as the code pass fraction."})
    think_prefilled: bool | None = field(default=None, metadata={
        "help": "Whether the chat template prefills <think> so completions start inside the reasoning. None detects "
                "it from the rendered prompt (local models) or from a leading </think> (served models)."})
    min_language_consistency: float | None = field(default=0.95, metadata={
        "help": "R1 filter 'mixed languages': reject reasoning whose share of target-language words is below this "
                "(R1's language-consistency measure). None disables."})
    target_lang: str | None = field(default=None, metadata={
        "help": "Target language code for the language filter; None infers it from each prompt."})
    max_paragraph_chars: int | None = field(default=2000, metadata={
        "help": "R1 filter 'long paragraphs': reject reasoning with a blank-line-separated paragraph longer than "
                "this many characters. None disables."})
    reject_code_in_reasoning: bool = field(default=True, metadata={
        "help": "R1 filter 'code blocks': reject fenced code blocks in the reasoning, except for code tasks (rows "
                "scored by the code reward)."})
    dedup_threshold: float | None = field(default=0.9, metadata={
        "help": "Reject a sample whose text is at least this similar (normalised Indel similarity, 0-1) to one "
                "already kept for the same prompt. None disables."})
    max_per_prompt: int | None = field(default=4, metadata={"help": "Keep at most this many samples per prompt "
                                                            "(m). None keeps all that pass."})
    backend: str = field(default="auto", metadata={
        "help": "Generation backend: auto (openai if base_url, else vllm when installed, else transformers), "
                "transformers, vllm or openai.", "choices": list(BACKENDS)})
    vllm_fallback: str = vllm_fallback_field("backend: vllm")
    base_url: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible endpoint for the openai backend, e.g. http://localhost:8000/v1 (`vllm serve`, "
                "SGLang, TGI); the key comes from OPENAI_API_KEY."})
    request_timeout_s: float = field(default=600.0, metadata={"help": "openai backend: seconds per request."})
    server_timeout_s: float = field(default=900.0, metadata={
        "help": "openai backend: seconds to wait for the server to answer GET /models before the first request "
                "(a `vllm serve` still loading its model; 0: no wait). One progress line every 30 s."})
    vllm_gpu_memory_utilization: float | None = field(default=None, metadata={
        "help": "vllm backend: share of the GPU the engine takes for its weights and KV cache (None: vLLM's 0.9)."})
    vllm_max_model_length: int | None = field(default=None, metadata={
        "help": "vllm backend: the longest prompt + completion it serves (None: the model's whole context, whose "
                "KV cache must fit in the budget or the engine does not start); e.g. 512 + max_new_tokens."})
    max_retries: int = field(default=5, metadata={
        "help": "openai backend: retries (exponential backoff) of a timed-out, 429 or 5xx request before the run "
                "stops (restart it to resume)."})
    seed: int = field(default=0, metadata={"help": "Sampling seed; batch b uses seed + its first prompt index."})
    max_prompts: int | None = field(default=None, metadata={"help": "Use only the first N prompts (None: all)."})
    max_prompt_tokens: int | None = field(default=4096, metadata={
        "help": "Prompt budget in tokens (after the chat template): a longer prompt is skipped, not cut (a cut problem "
                "is another problem), named in one WARNING line and counted in stats.json `prompts_too_long`. A "
                "generate call holds at most the tokens of batch_size prompts of 512 tokens (each with num_samples "
                "x max_new_tokens), so a batch with long prompts is split rather than run out of memory. Local "
                "models (transformers, vllm); a server refuses what it cannot serve. None: no budget."})
    hub_dataset_id: str | None = field(default=None, metadata={
        "help": "Push the finished dataset with a dataset card to this Hub dataset repo (needs a token)."})
    hub_private: bool = field(default=False, metadata={"help": "Create the Hub dataset repo as private."})
    export_only: bool = field(default=False, metadata={
        "help": "Write the upload (dataset card + parquet) to <output_dir>/hub and push nothing (as `trl-r1 publish "
                "--export-only`); upload it later with `hf upload --repo-type dataset ID <output_dir>/hub`."})
    license: str | None = field(default=None, metadata={
        "help": "The dataset card's license (a Hub license id). None: the source model's, e.g. llama3.2 for "
                "Llama-3.2, qwen-research for Qwen2.5-3B, else apache-2.0 (trl_r1.data.hub.model_license)."})

    kind = "rejection_sampling"

    def __post_init__(self):
        for key in ("num_samples", "batch_size", "max_prompts", "max_prompt_tokens"):  # 0 would sample nothing
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1, got {getattr(self, key)}")
        check_sampling(self.temperature, self.top_p)
        if self.dedup_threshold is not None and not 0 <= self.dedup_threshold <= 1:
            raise ValueError(f"dedup_threshold must be in [0, 1] (a similarity; None disables), got "
                             f"{self.dedup_threshold}")
        if self.min_reward > 1:  # every registry reward scores in [0, 1]: nothing would be kept
            raise ValueError(f"min_reward must be <= 1 (rewards score from 0 to 1, 1.0 keeps fully correct "
                             f"samples), got {self.min_reward}")
        if self.vllm_fallback not in VLLM_FALLBACKS:
            raise ValueError(f"vllm_fallback must be one of {VLLM_FALLBACKS}, got {self.vllm_fallback!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; choose one of {BACKENDS}")

    @property
    def sampling_params(self) -> SamplingParams:
        return SamplingParams(self.num_samples, self.max_new_tokens, self.temperature, self.top_p)

    @property
    def filters(self) -> R1Filters:
        return R1Filters(self.min_language_consistency, self.max_paragraph_chars, self.reject_code_in_reasoning,
                         self.dedup_threshold, self.max_per_prompt)


@dataclass
class RejectionSamplingResult:
    """What a build produced (also on disk under `output_dir`)."""

    dataset: Any  # datasets.Dataset of accepted SFT rows (conversational "messages")
    prompt_stats: Any  # datasets.Dataset: every prompt row + num_generated, num_passed, pass_rate, num_accepted
    stats: dict[str, Any]  # totals and each filter's rejection count
    output_dir: str


def rejection_sample(config: RejectionSamplingConfig, dataset: Any = None) -> RejectionSamplingResult:
    """Sample, verify and filter; resumes a run interrupted in `config.output_dir`. `dataset` overrides
    `config.dataset_name`."""
    return build_sft_dataset(config, dataset)


def build_sft_dataset(config: RejectionSamplingConfig, dataset: Any = None,
                      generator: Generator | None = None) -> RejectionSamplingResult:
    """The engine shared by rejection sampling and distillation (see the module docstring)."""
    _check_push(config)  # before anything is generated: a push that cannot happen fails now, not after hours
    prompts = _prompt_dataset(config, dataset)
    rewards = _rewards(config)  # before the model loads: a misspelt reward fails at once
    _check_reward_columns(rewards, prompts.column_names)
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    store = RecordStore(out / RECORDS)
    done = {r["index"] for r in store.load()}
    _check_or_write_run(out / RUN, config, len(prompts), started=bool(done))
    todo = [i for i in range(len(prompts)) if i not in done]
    if todo:
        own = _generator(config) if generator is None else None  # closed here; a caller's generator is the caller's
        try:
            _sample_and_record(config, prompts, todo, generator or own, rewards, store, done_before=len(done))
        finally:
            if own is not None:
                own.close()
    result = _finalize(config, prompts, store.load())
    if config.export_only:
        export = export_for_hub(config.output_dir, repo_id=config.hub_dataset_id, license=config.license)
        logger.info("%s: the upload is ready in %s (--export-only: nothing pushed)", config.kind, export)
    elif config.hub_dataset_id:
        push_to_hub(config.output_dir, config.hub_dataset_id, private=config.hub_private, license=config.license)
    return result


def _check_reward_columns(rewards: list[Callable], columns: list[str]) -> None:
    """A reward that cannot score any row (no gold column for `math`) would leave every sample unverified after
    all the generation: a ConfigError naming the columns now (`solution_column` maps another gold column)."""
    from ..config import ConfigError
    from ..rewards.base import column_problems

    problems = [f"rewards: {problem}" for reward in rewards for problem in column_problems(reward, columns)]
    if problems:
        raise ConfigError(problems)


def _check_push(config: RejectionSamplingConfig) -> None:
    """A ConfigError naming `hub_dataset_id` when the push it asks for cannot happen here (hub.push_problem)."""
    from ..config import ConfigError

    problem = push_problem() if config.hub_dataset_id and not config.export_only else None
    if problem:
        raise ConfigError([f"hub_dataset_id: cannot push to {config.hub_dataset_id!r}: {problem}; nothing was "
                           "generated. Set export_only (--export-only) to build the upload in <output_dir>/hub "
                           "without pushing, or leave hub_dataset_id out"])


def _generator(config: RejectionSamplingConfig) -> Generator:
    """The configured model's generator; a ConfigError naming the key when it cannot be loaded."""
    from ..config import ConfigError

    try:
        generator = load_generator(
            config.backend, config.model_name_or_path, adapter_path=config.adapter_path,
            load_in_4bit=config.load_in_4bit, base_url=config.base_url, seed=config.seed,
            max_concurrency=config.batch_size, timeout_s=config.request_timeout_s, max_retries=config.max_retries,
            vllm_kwargs=vllm_engine_kwargs(config.vllm_gpu_memory_utilization, config.vllm_max_model_length),
            vllm_fallback=config.vllm_fallback)
    except (OSError, ValueError, ImportError) as exc:  # no such model / adapter, no base_url, vLLM missing
        raise ConfigError([f"model_name_or_path: cannot load {config.model_name_or_path!r} (backend "
                           f"{config.backend!r}): {type(exc).__name__}: {str(exc)[:500]}"]) from exc
    if isinstance(generator, OpenAIGenerator) and config.server_timeout_s > 0:
        try:
            generator.wait_until_ready(config.server_timeout_s)
        except RuntimeError as exc:  # the server never came up, or answers elsewhere
            generator.close()
            raise ConfigError([f"base_url: {exc}"]) from exc
    return generator


def _rewards(config: RejectionSamplingConfig) -> list[Callable]:
    """The configured rewards; a ConfigError naming the key when one cannot be resolved."""
    from ..config import ConfigError
    from ..rewards import get_reward_funcs
    from ..rewards.aliases import reward_entries

    try:
        return get_reward_funcs(reward_entries(config.rewards))  # `--rewards math,format` as evaluate reads it
    except (ValueError, TypeError, ImportError) as exc:
        raise ConfigError([f"rewards: {exc}"]) from exc


def _sample_and_record(config: RejectionSamplingConfig, prompts: Any, todo: list[int], generator: Generator,
                       rewards: list[Callable], store: RecordStore, done_before: int) -> None:
    from tqdm.auto import tqdm

    params = config.sampling_params
    generated = accepted = skipped_long = 0
    # tokens one transformers `generate` call may hold (vLLM pages its KV cache and batches internally: no limit)
    padded = generator.describe().get("backend") == "transformers"
    call_tokens = config.batch_size * (BATCH_PROMPT_TOKENS + config.max_new_tokens) if padded else sys.maxsize
    start = time.perf_counter()
    bar = tqdm(total=done_before + len(todo), initial=done_before, unit="prompt", desc=config.kind, dynamic_ncols=True)
    for b in range(0, len(todo), config.batch_size):
        indices = todo[b:b + config.batch_size]
        rows = [prompts[i] for i in indices]
        # a malformed prompt gets no samples (and says so in its record) instead of stopping the run
        usable = [j for j, r in enumerate(rows) if is_prompt(r[config.prompt_column])]
        if len(usable) < len(rows):
            logger.warning("prompts %s are not text or chat messages: skipped",
                           [indices[j] for j in range(len(rows)) if j not in usable])
        lengths = prompt_lengths(generator, [rows[j][config.prompt_column] for j in usable])
        length_of = dict(zip(usable, lengths))
        too_long = [j for j in usable if config.max_prompt_tokens and length_of[j] > config.max_prompt_tokens]
        if too_long and not skipped_long:
            logger.warning("prompt %d has %d tokens, over max_prompt_tokens=%d: skipped, not cut (a cut problem is "
                           "another problem); every such prompt is counted in stats.json prompts_too_long. Raise "
                           "max_prompt_tokens to keep them", indices[too_long[0]], length_of[too_long[0]],
                           config.max_prompt_tokens)
        skipped_long += len(too_long)
        usable = [j for j in usable if j not in too_long]
        completions: list[list[Completion]] = [[] for _ in rows]
        for chunk in token_budget_chunks(usable, [length_of.get(j, 0) for j in usable], call_tokens,
                                         config.max_new_tokens):
            first = 0 if chunk[0] == usable[0] else chunk[0]  # one call per batch: the batch's seed, as ever
            groups = generator.generate([rows[j][config.prompt_column] for j in chunk], params,
                                        seed=config.seed + indices[first])
            for j, group in zip(chunk, groups):
                completions[j] = group
        records = judge_batch(config, rows, completions, rewards)
        for j, (index, record) in enumerate(zip(indices, records)):
            record["index"] = index
            if j in too_long:
                record["prompt_too_long"] = True
        store.append(records)
        generated += sum(r["num_generated"] for r in records)
        accepted += sum(r["num_accepted"] for r in records)
        bar.update(len(indices))
        bar.set_postfix(samples_per_s=f"{generated / (time.perf_counter() - start):.2f}",
                        accept=f"{accepted / max(generated, 1):.1%}")
    bar.close()


def prompt_lengths(generator: Generator, prompts: list[Any]) -> list[int]:
    """Each prompt's length in tokens as the generator renders it (its chat template), or 0 each for a generator
    without a local tokenizer (a server: it refuses what it cannot serve)."""
    tokenizer = getattr(generator, "tokenizer", None)
    if tokenizer is None:
        return [0] * len(prompts)
    from .generation import render_prompt

    return [len(tokenizer(render_prompt(p, tokenizer), add_special_tokens=False)["input_ids"]) for p in prompts]


def token_budget_chunks(items: list[int], lengths: list[int], budget: int, max_new_tokens: int) -> list[list[int]]:
    """`items` in order, split so that each chunk's padded size (its size x (its longest prompt + max_new_tokens))
    stays within `budget` tokens; one item per chunk at least.

    >>> token_budget_chunks([0, 1, 2, 3], [10, 10, 500, 10], budget=4 * (100 + 10), max_new_tokens=10)
    [[0, 1], [2], [3]]
    """
    chunks: list[list[int]] = []
    longest = 0
    for item, length in zip(items, lengths):
        longest_with = max(longest, length)
        if chunks and chunks[-1] and (len(chunks[-1]) + 1) * (longest_with + max_new_tokens) <= budget:
            chunks[-1].append(item)
            longest = longest_with
        else:
            chunks.append([item])
            longest = length
    return chunks


def judge_batch(config: RejectionSamplingConfig, rows: list[dict[str, Any]], completions: list[list[Completion]],
                rewards: list[Callable[..., list[float | None]]]) -> list[dict[str, Any]]:
    """Score and filter one batch; returns one record per prompt (statistics + accepted SFT rows)."""
    from ..rewards.base import declared

    filters = config.filters
    # 1. split reasoning from answer (a truncated or tag-less completion cannot become a <think> SFT target)
    traces: list[list[Trace | None]] = []
    verdicts: list[list[str | None]] = []
    for group in completions:
        traces.append([])
        verdicts.append([])
        for c in group:
            try:
                if config.think_prefilled is not None:
                    c = replace(c, think_prefilled=config.think_prefilled)
                traces[-1].append(c.trace())
                verdicts[-1].append(None)
            except ValueError:
                traces[-1].append(None)
                verdicts[-1].append(F.MALFORMED)
    # 2. rewards, called like TRL calls them, on every well-formed sample of the batch at once
    flat = [(p, s) for p, group in enumerate(traces) for s, t in enumerate(group) if t is not None]
    code_task = {key: False for key in flat}
    verified = {key: False for key in flat}  # scored by at least one correctness reward
    checks_correctness = [declared(r, "role") == "correctness" for r in rewards]
    if flat:
        columns = {c: [rows[p][c] for p, _ in flat] for c in rows[0] if c != config.prompt_column}
        kwargs = dict(prompts=[rows[p][config.prompt_column] for p, _ in flat],
                      completions=[[{"role": "assistant", "reasoning_content": traces[p][s].reasoning,
                                     "content": traces[p][s].answer}] for p, s in flat],
                      completion_ids=None, **columns)
        for reward, correctness in zip(rewards, checks_correctness):
            name = getattr(reward, "__name__", type(reward).__name__)
            scores = reward(**kwargs)
            if len(scores) != len(flat):
                raise ValueError(f"reward {name} returned {len(scores)} scores for {len(flat)} completions")
            for key, score in zip(flat, scores):
                if declared(reward, "code_in_reasoning_ok") and score is not None:
                    code_task[key] = True  # a row the code reward scores is a code task: code may be reasoning
                if score is None:  # this reward does not apply to this sample
                    continue
                verified[key] |= correctness
                p, s = key
                if verdicts[p][s] is None and score < config.min_reward:
                    verdicts[p][s] = f"{F.INCORRECT}:{name}"
        if any(checks_correctness):
            for p, s in flat:
                if verdicts[p][s] is None and not verified[(p, s)]:
                    verdicts[p][s] = F.UNVERIFIED
    records = []
    for p, row in enumerate(rows):
        group, verdict = traces[p], verdicts[p]
        passed = [s for s, v in enumerate(verdict) if v is None]
        # 3. readability filters on each correct sample, then near-duplicates and the per-prompt cap
        for s in passed:
            verdict[s] = filters.rejection(group[s], prompt=prompt_to_text(row[config.prompt_column]),
                                           code_task=code_task[(p, s)], target_lang=config.target_lang)
        readable = [s for s in passed if verdict[s] is None]
        for s, v in zip(readable, filters.select([group[s] for s in readable])):
            verdict[s] = v
        rejections: dict[str, int] = {}
        for v in verdict:
            if v is not None:
                rejections[v] = rejections.get(v, 0) + 1
        kept = [s for s, v in enumerate(verdict) if v is None]
        records.append({
            "num_generated": len(group), "num_passed": len(passed),
            "pass_rate": len(passed) / len(group) if group else 0.0, "num_accepted": len(kept),
            "num_truncated": sum(c.finish_reason == "length" for c in completions[p]),
            "num_tokens": sum(c.num_tokens or 0 for c in completions[p]),
            "rejections": rejections,
            "rows": [sft_row(row, config.prompt_column, group[s]) for s in kept],
        })
    return records


def sft_row(row: dict[str, Any], prompt_column: str, trace: Trace) -> dict[str, Any]:
    """An accepted sample as a TRL conversational row; the other source columns are kept.

    >>> sft_row({"prompt": "2+3?", "answer": "5"}, "prompt", Trace("2+3=5", "<answer>5</answer>"))
    {'messages': [{'role': 'user', 'content': '2+3?'}, {'role': 'assistant', 'content': '<think>2+3=5</think>\\n<answer>5</answer>'}], 'answer': '5'}
    """
    prompt = row[prompt_column]
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    messages.append({"role": "assistant", "content": trace.content})
    return {"messages": messages, **{k: v for k, v in row.items() if k not in (prompt_column, "messages")}}


class RecordStore:
    """Append-only JSONL of per-prompt records, flushed and fsynced after each batch.

    A line cut short by a kill is dropped on load (and truncated away), so a restart redoes that batch only.
    """

    def __init__(self, path: Path):
        self.path = path

    def load(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        records, good = [], 0
        with open(self.path, "rb") as f:
            for line in f:
                try:
                    if not line.endswith(b"\n"):
                        raise ValueError("incomplete line")
                    records.append(json.loads(line))
                except ValueError:
                    logger.warning("%s: dropping an incomplete record at byte %d (interrupted write)", self.path, good)
                    break
                good += len(line)
        if good < self.path.stat().st_size:
            with open(self.path, "r+b") as f:
                f.truncate(good)
        return records

    def append(self, records: list[dict[str, Any]]) -> None:
        data = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def _prompt_dataset(config: RejectionSamplingConfig, dataset: Any) -> Any:
    """The prompts to sample from; a ConfigError naming the key when they cannot be had (before any model loads)."""
    from ..config import ConfigError

    if dataset is None:
        if not config.dataset_name:
            raise ConfigError(["dataset_name: required (or pass a dataset)"])
        try:
            dataset = load_dataset_spec(config.dataset_name, split=config.dataset_split)
        except Exception as exc:  # a missing file, an unknown Hub id, a broken builder: all the setting's fault
            raise ConfigError([f"dataset_name: cannot load {config.dataset_name!r} (split "
                               f"{config.dataset_split!r}): {type(exc).__name__}: {exc}"]) from exc
    if config.prompt_column not in dataset.column_names:
        raise ConfigError([f"prompt_column: {config.prompt_column!r} is not a column of the dataset "
                           f"(columns: {dataset.column_names})"])
    if config.solution_column != "solution":  # the rewards read the gold answer from `solution`
        if config.solution_column not in dataset.column_names:
            raise ConfigError([f"solution_column: {config.solution_column!r} is not a column of the dataset "
                               f"(columns: {dataset.column_names})"])
        if "solution" in dataset.column_names:
            raise ConfigError([f"solution_column: {config.solution_column!r} would replace the dataset's own "
                               "'solution' column; rename one of them"])
        dataset = dataset.rename_column(config.solution_column, "solution")
    if config.max_prompts is not None:
        dataset = dataset.select(range(min(config.max_prompts, len(dataset))))
    return dataset


def _run_metadata(config: RejectionSamplingConfig, num_prompts: int) -> dict[str, Any]:
    from .. import __version__

    backend = resolve_backend(config.backend, config.base_url, config.model_name_or_path, config.load_in_4bit)
    model = {"backend": backend, "model": config.model_name_or_path, "adapter": config.adapter_path,
             "load_in_4bit": config.load_in_4bit}
    return {"kind": config.kind, "trl_r1_version": __version__, "model": model, "num_prompts": num_prompts,
            "generation": config.sampling_params.to_dict(), "config": asdict(config)}


def _check_or_write_run(path: Path, config: RejectionSamplingConfig, num_prompts: int, *, started: bool) -> None:
    """Record the run's settings; on a restart of a run that recorded samples, refuse settings that would mix two
    different builds (a run that failed before its first sample, e.g. on a misspelt model, may change anything)."""
    from ..config import ConfigError

    metadata = _run_metadata(config, num_prompts)
    if started and path.exists():
        previous = json.loads(path.read_text())["config"]
        changed = sorted(k for k, v in metadata["config"].items()
                         if k not in _RESUMABLE_CHANGES and previous.get(k, v) != v)
        if changed:
            raise ConfigError([f"output_dir: {path.parent} holds a run with different settings "
                               f"({', '.join(changed)}); resume with the same settings or use another output_dir"])
    path.write_text(json.dumps(metadata, indent=2, default=str))


def _finalize(config: RejectionSamplingConfig, prompts: Any, records: list[dict[str, Any]]) -> RejectionSamplingResult:
    """Write sft.jsonl, prompt_stats.jsonl and stats.json from the records (in prompt order) and load them."""
    import datasets

    out = Path(config.output_dir)
    by_index = {r["index"]: r for r in records if r["index"] < len(prompts)}
    ordered = [by_index[i] for i in sorted(by_index)]
    rows = [row for r in ordered for row in r["rows"]]
    stat_keys = ("num_generated", "num_passed", "pass_rate", "num_accepted", "num_truncated")
    prompt_stats = prompts.select([r["index"] for r in ordered])
    for key in stat_keys:
        prompt_stats = prompt_stats.add_column(key, [r[key] for r in ordered])
    stats = summarize(config, ordered)
    sft = datasets.Dataset.from_list(rows) if rows else datasets.Dataset.from_dict({"messages": []})
    _write_jsonl(out / SFT, rows)
    prompt_stats.to_json(str(out / PROMPT_STATS), lines=True, force_ascii=False)
    (out / STATS).write_text(json.dumps(stats, indent=2))
    logger.info("%s: %d/%s accepted from %s -> %s", config.kind, stats["accepted"],
                counted(stats["generated"], "sample"), counted(stats["num_prompts"], "prompt"), out / SFT)
    if stats["prompts_too_long"]:
        logger.warning("%s: %s longer than max_prompt_tokens=%s tokens %s skipped (no samples)", config.kind,
                       counted(stats["prompts_too_long"], "prompt"), config.max_prompt_tokens,
                       "was" if stats["prompts_too_long"] == 1 else "were")
    return RejectionSamplingResult(sft, prompt_stats, stats, str(out))


def summarize(config: RejectionSamplingConfig, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the records, with every enabled filter's rejection count (zeros included), in filter order, then
    any other rejection reason that occurred (so generated == accepted + the sum of the rejections)."""
    generated = sum(r["num_generated"] for r in records)
    accepted = sum(r["num_accepted"] for r in records)
    counts: dict[str, int] = {}
    for r in records:
        for name, n in r["rejections"].items():
            counts[name] = counts.get(name, 0) + n
    f = config.filters
    order = [F.MALFORMED] + sorted(k for k in counts if ":" in k) + [
        name for name, on in [(F.MIXED_LANGUAGE, f.min_language_consistency is not None),
                              (F.LONG_PARAGRAPH, f.max_paragraph_chars is not None),
                              (F.CODE_IN_REASONING, f.reject_code_in_reasoning),
                              (F.NEAR_DUPLICATE, f.dedup_threshold is not None),
                              (F.OVER_LIMIT, f.max_per_prompt is not None)] if on]
    order += sorted(k for k in counts if k not in order)  # any other reason (unverified, ...) is counted too
    pass_rates = [r["pass_rate"] for r in records]
    return {
        "num_prompts": len(records), "generated": generated, "accepted": accepted,
        "acceptance_rate": accepted / generated if generated else 0.0,
        "passed": sum(r["num_passed"] for r in records),
        "truncated": sum(r["num_truncated"] for r in records),
        "generated_tokens": sum(r["num_tokens"] for r in records),
        "prompts_with_accepted": sum(r["num_accepted"] > 0 for r in records),
        "prompts_without_samples": sum(r["num_generated"] == 0 for r in records),
        "prompts_too_long": sum(bool(r.get("prompt_too_long")) for r in records),
        "prompts_all_passed": sum(p == 1.0 for p in pass_rates),
        "prompts_none_passed": sum(p == 0.0 for p in pass_rates),
        "rejections": {name: counts.get(name, 0) for name in order},
    }


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
    tmp.replace(path)


def run_cli(config_class: type, argv: list[str] | None, prog: str) -> int:
    """Parse a builder's config from `--config x.yaml [--flag value]` (trl_r1.config, the recipes' dialect),
    build the dataset, print its statistics. A bad config exits 2 with every problem named."""
    from ..config import ConfigError, parse_command_line

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        argv = sys.argv[1:] if argv is None else argv  # `--export-only` or `--export_only`, as TRL's parser takes
        argv = ["--" + token[2:].partition("=")[0].replace("-", "_") + token.partition("=")[1]
                + token.partition("=")[2] if token.startswith("--") else token for token in argv]
        config = parse_command_line(config_class, argv, prog)
        result = build_sft_dataset(config)
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.stats, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """`trl-r1 rejection-sample --config x.yaml [--flag value]`."""
    return run_cli(RejectionSamplingConfig, argv, "trl-r1 rejection-sample")
