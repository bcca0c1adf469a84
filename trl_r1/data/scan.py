"""Whole-file checks of a prompt dataset, streaming: every prompt's length in tokens against a budget, and how far
an evaluation set overlaps the training data.

The rows come in batches (a `datasets.Dataset` through `.iter`, memory-mapped; a JSONL / CSV / parquet file or a
folder of them through `iter_file_batches`, a batch at a time), are tokenized in batches by the fast tokenizer and
counted, with a tqdm bar; nothing is held but the counts, so time grows linearly with rows and memory does not.
The builders skip a prompt over their own budget at generation time (`max_prompt_tokens` of rejection sampling).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


SCAN_BATCH = 1000  # rows per tokenizer call
FILE_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


def iter_file_batches(path: str | Path, batch_size: int = SCAN_BATCH) -> Iterator[list[dict[str, Any]]]:
    """The rows of a JSONL, CSV or parquet file (or of every such file in a folder, sorted), `batch_size` at a
    time, without reading the whole file into memory."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.suffix in FILE_SUFFIXES) if path.is_dir() else [path]
    for file in files:
        batch: list[dict[str, Any]] = []
        if file.suffix == ".parquet":
            import pyarrow.parquet as pq

            for record_batch in pq.ParquetFile(file).iter_batches(batch_size=batch_size):
                yield record_batch.to_pylist()
            continue
        with file.open(newline="", encoding="utf-8") as handle:
            rows = csv.DictReader(handle) if file.suffix == ".csv" else (json.loads(line) for line in handle
                                                                          if line.strip())
            for row in rows:
                batch.append(row)
                if len(batch) == batch_size:
                    yield batch
                    batch = []
        if batch:
            yield batch


def iter_dataset_batches(dataset: Any, batch_size: int = SCAN_BATCH) -> Iterator[list[dict[str, Any]]]:
    """A `datasets.Dataset`'s rows, `batch_size` at a time (arrow slices, never the whole table in Python)."""
    for batch in dataset.iter(batch_size=batch_size):
        yield [dict(zip(batch, values)) for values in zip(*batch.values())]


def column_values(dataset: Any, column: str, desc: str) -> Iterator[Any]:
    """One column of a `datasets.Dataset`, value by value, read a batch at a time with a progress bar (rows)."""
    from tqdm.auto import tqdm

    with tqdm(total=len(dataset), desc=desc, unit=" rows") as bar:
        for batch in dataset.iter(batch_size=SCAN_BATCH):
            yield from batch[column]
            bar.update(len(batch[column]))


def prompt_lengths(prompts: list[Any], tokenizer: PreTrainedTokenizerBase) -> list[int | None]:
    """Each prompt's length in tokens as the trainers render it (a string as is; a conversation through the chat
    template with the generation prompt), tokenized as one batch; None for one that cannot be rendered."""
    texts: list[str | None] = []
    for prompt in prompts:
        if isinstance(prompt, str):
            texts.append(prompt)
        elif isinstance(prompt, list) and tokenizer.chat_template is not None:
            texts.append(tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True))
        else:
            texts.append(None)
    present = [text for text in texts if text is not None]
    counts = iter(len(ids) for ids in tokenizer(present, add_special_tokens=False)["input_ids"]) if present else iter(())
    return [next(counts) if text is not None else None for text in texts]


def dataset_prompt_lengths(dataset: Any, tokenizer: PreTrainedTokenizerBase,
                           desc: str = "prompt lengths") -> list[int | None]:
    """Each row's prompt length in tokens (`prompt_lengths`; None where it cannot be rendered) of a
    `datasets.Dataset`, tokenized in batches with a progress bar: one tokenizing pass, one number a row, for every
    check that needs the lengths (a trainer's over-budget skip and its fast-path prompt budget)."""
    from tqdm.auto import tqdm

    lengths: list[int | None] = []
    with tqdm(total=len(dataset), desc=desc, unit=" rows") as bar:
        for batch in iter_dataset_batches(dataset):
            lengths += prompt_lengths([row.get("prompt") for row in batch], tokenizer)
            bar.update(len(batch))
    return lengths


@dataclass
class PromptScan:
    """What a whole-file scan found."""

    rows: int = 0
    over_budget: int = 0
    first_over: tuple[int, int] | None = None  # (row, tokens) of the first prompt over the budget
    longest: int = 0
    lengths: Counter[int] = field(default_factory=Counter)  # prompts per length in tokens (one entry a length)

    def over(self, tokens: int) -> int:
        """How many prompts are longer than `tokens` (any budget, after the scan)."""
        return sum(count for length, count in self.lengths.items() if length > tokens)


def scan_prompts(batches: Iterable[list[dict[str, Any]]], tokenizer: PreTrainedTokenizerBase, budget: int, *,
                 total: int | None = None, column: str = "prompt", desc: str = "checking prompts") -> PromptScan:
    """Every prompt's length against `budget` tokens, with a progress bar (rows)."""
    from tqdm.auto import tqdm

    scan = PromptScan()
    with tqdm(total=total, desc=desc, unit=" rows") as bar:
        for batch in batches:
            for offset, tokens in enumerate(prompt_lengths([row.get(column) for row in batch], tokenizer)):
                if tokens is None:
                    continue
                scan.longest = max(scan.longest, tokens)
                scan.lengths[tokens] += 1
                if tokens > budget:
                    scan.over_budget += 1
                    scan.first_over = scan.first_over or (scan.rows + offset, tokens)
            scan.rows += len(batch)
            bar.update(len(batch))
    return scan


def prompt_budget(config: Any, context: tuple[int, str] | None) -> tuple[int, str] | None:
    """(tokens a prompt may take, why) for a generating stage: the smallest of the model's context and vLLM's
    `vllm_max_model_length` (when it generates with vLLM), less the completion's `max_completion_length` /
    `max_new_tokens`. TRL never cuts a prompt: a longer one fails in vLLM or leaves no room to answer."""
    completion = getattr(config, "max_completion_length", None) or getattr(config, "max_new_tokens", None)
    if completion is None:
        return None
    limits = [(context[0], f"the model context {context[0]} ({context[1]})")] if context else []
    vllm_length = getattr(config, "vllm_max_model_length", None)
    if vllm_length and getattr(config, "use_vllm", True):
        limits.append((vllm_length, f"vllm_max_model_length {vllm_length}"))
    if not limits:
        return None
    limit, why = min(limits)
    return limit - completion, f"{why} less {completion} completion tokens"


def dataset_scan(where: str, dataset: Any, tokenizer: PreTrainedTokenizerBase, budget: int) -> PromptScan | None:
    """A whole dataset's prompt lengths against `budget` (None without a 'prompt' column)."""
    if "prompt" not in dataset.column_names:
        return None
    return scan_prompts(iter_dataset_batches(dataset), tokenizer, budget, total=len(dataset),
                        desc=f"{where}: prompt lengths")


def budget_problems(where: str, dataset: Any, tokenizer: PreTrainedTokenizerBase,
                    budget: tuple[int, str] | None, scan: PromptScan | None = None) -> list[str]:
    """One line for the prompts of a whole dataset over the stage's budget: how many, the first, the rule (`scan`:
    the dataset's scan against that budget, when already done)."""
    if budget is None or "prompt" not in dataset.column_names:
        return []
    scan = scan or dataset_scan(where, dataset, tokenizer, budget[0])
    if not scan.over_budget:
        return []
    row, tokens = scan.first_over
    return [f"{where}: column 'prompt': {scan.over_budget} of {scan.rows} prompts are longer than the {budget[0]} "
            f"tokens a prompt may take ({budget[1]}; first: row {row}, {tokens} tokens; TRL does not cut them); "
            "drop or shorten them, or raise the limit"]


def normalized(prompt: Any) -> str:
    """A prompt's text for comparing sets: a conversation's user turns; case and spacing folded."""
    if isinstance(prompt, list):
        prompt = " ".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict) and m.get("role") == "user")
    return " ".join(str(prompt).lower().split())


def prompt_overlap(held_out: Any, training: Any, column: str = "prompt") -> tuple[int, int]:
    """(held-out prompts also in the training data, held-out prompts), both datasets read in batches.

    >>> from datasets import Dataset
    >>> prompt_overlap(Dataset.from_dict({"prompt": ["1+1?", "2+2?"]}), Dataset.from_dict({"prompt": [" 1+1? "]}))
    (1, 2)
    """
    seen = {normalized(row[column]) for batch in iter_dataset_batches(training) for row in batch}
    shared = total = 0
    for batch in iter_dataset_batches(held_out):
        for row in batch:
            total += 1
            shared += normalized(row[column]) in seen
    return shared, total


def duplicate_prompt_notes(where: str, dataset: Any, column: str = "prompt") -> list[str]:
    """A note when prompts repeat (compared as `normalized` text, every row read in batches): GRPO already samples
    `num_generations` completions per prompt, so a copied prompt only weighs its question more.

    >>> from datasets import Dataset
    >>> duplicate_prompt_notes("rl", Dataset.from_dict({"prompt": ["1+1?", " 1+1? ", "2+2?"]}))[0][:72]
    'rl: 1 of 3 prompts duplicate an earlier one (2 distinct, first duplicate'
    >>> duplicate_prompt_notes("rl", Dataset.from_dict({"prompt": ["1+1?", "2+2?"]}))
    []
    """
    if column not in dataset.column_names:
        return []
    seen: set[str] = set()
    repeats, first, rows = 0, None, 0
    for batch in iter_dataset_batches(dataset):
        for row in batch:
            text = normalized(row[column])
            if text in seen:
                repeats += 1
                first = rows if first is None else first
            seen.add(text)
            rows += 1
    if not repeats:
        return []
    return [f"{where}: {repeats} of {rows} prompts duplicate an earlier one ({len(seen)} distinct, first duplicate: row "
            f"{first}): each copy trains on the same question again; drop the copies unless that weight is meant"]


def think_tag_notes(where: str, dataset: Any, tag: str = "<think>") -> list[str]:
    """A note when no answer of an SFT dataset (assistant turns of `messages`, or `completion`) holds `tag`: the
    cold start is there to teach the reasoning format the rl stage's format reward scores.

    >>> from datasets import Dataset
    >>> think_tag_notes("cold_start", Dataset.from_dict({"completion": ["2", "4"]}))[0][:49]
    'cold_start: none of its 2 answers holds <think>: '
    >>> think_tag_notes("cold_start", Dataset.from_dict({"completion": ["<think>1+1</think>2", "4"]}))
    []
    """
    column = next((c for c in ("messages", "completion") if c in dataset.column_names), None)
    if column is None:
        return []
    answers = 0
    for batch in iter_dataset_batches(dataset):
        for row in batch:
            value = row[column]
            turns = value if isinstance(value, list) else [{"role": "assistant", "content": value}]
            for turn in turns:
                if isinstance(turn, dict) and turn.get("role") == "assistant":
                    answers += 1
                    if tag in str(turn.get("content", "")):
                        return []
    if not answers:
        return []
    return [f"{where}: none of its {answers} answers holds {tag}: the model learns to answer without the reasoning "
            "format the format reward scores (and a prefilled <think> expects); write the reasoning as "
            "<think>...</think> before the answer"]


__all__ = ["HELD_OUT_OVERLAP", "PromptScan", "budget_problems", "column_values", "dataset_prompt_lengths",
           "dataset_scan",
           "duplicate_prompt_notes", "held_out_problems", "iter_dataset_batches", "iter_file_batches", "normalized",
           "prompt_budget", "prompt_lengths", "prompt_overlap", "scan_prompts",
           "seen_in_training", "think_tag_notes"]


HELD_OUT_OVERLAP = 0.5  # from this share of shared prompts on, the warning says the whole score is not held-out


def seen_in_training(held_out: Any, training_sets: dict[str, Any]) -> int:
    """How many evaluation prompts are also in any of the training sets (compared as `normalized` text).

    >>> from datasets import Dataset
    >>> seen_in_training(Dataset.from_dict({"prompt": ["1+1?", "2+2?", "3+3?"]}),
    ...                  {"rl": Dataset.from_dict({"prompt": ["1+1?"]}), "sft": Dataset.from_dict({"prompt": ["3+3?"]})})
    2
    """
    if "prompt" not in held_out.column_names:
        return 0
    seen = {normalized(row["prompt"]) for dataset in training_sets.values() if "prompt" in dataset.column_names
            for batch in iter_dataset_batches(dataset) for row in batch}
    return sum(normalized(row["prompt"]) in seen for batch in iter_dataset_batches(held_out) for row in batch)


def held_out_problems(held_out: Any, training_sets: dict[str, Any],
                      same_source: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """(problems, warnings): an evaluation set read from a stage's own training file and split (`same_source`)
    measures memory, not generalisation (a problem); prompts shared with other training data are a warning with
    their count, the loud one (`HELD_OUT_OVERLAP` or more) saying the scores are not held-out."""
    problems, warnings = [], []
    if "prompt" not in held_out.column_names:
        return problems, warnings
    for stage, dataset in training_sets.items():
        if "prompt" not in dataset.column_names:
            continue
        shared, total = prompt_overlap(held_out, dataset)
        if not shared:
            continue
        line = (f"evaluation: {shared} of its {total} prompts are also in the {stage} stage's training data: the "
                "scores would not be held-out")
        if stage in same_source:
            problems.append(f"{line}; point evaluation.dataset_name / dataset_split at data the stages do not train "
                            "on (e.g. the test split)")
        else:
            most = shared >= HELD_OUT_OVERLAP * total
            warnings.append(f"{line}{'' if most else ' for those prompts'}; drop them from one of the sets")
    return problems, warnings
