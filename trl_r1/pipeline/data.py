"""A stage's dataset from a recipe (`trl_r1.data.loading.load_dataset_spec`), with the column names TRL expects,
and its schema as published (what the preflight checks the recipe's column keys against)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.loading import load_dataset_spec

if TYPE_CHECKING:
    from datasets import Dataset

    from .recipe import DataArguments, EvaluationConfig

PEEK_ROWS = 8  # rows a dry run reads of a streamed Hub dataset: enough for its columns


@dataclass
class DatasetSchema:
    """A dataset's columns as published (before renaming) and its number of rows."""

    columns: list[str]
    num_rows: int | None  # None: a streamed Hub dataset whose card gives no size


def load_stage_dataset(name: str, *, split: str, config: str | None = None, kwargs: dict[str, Any] | None = None,
                       max_samples: int | None = None, rename: dict[str, str] | None = None,
                       streaming: bool = False) -> tuple[Any, DatasetSchema]:
    """(dataset, schema) of a stage's `dataset_name`, its columns renamed as `rename` says (`standardize_columns`).

    With `streaming` (a dry run), a Hub id is streamed and only its first `PEEK_ROWS` rows are read; a builder, a
    local file or a saved folder loads its real rows either way.
    """
    import datasets

    dataset = load_dataset_spec(name, split=split, config=config, kwargs=kwargs, max_samples=max_samples,
                                streaming=streaming)
    if isinstance(dataset, datasets.IterableDataset):
        rows = list(itertools.islice(dataset, PEEK_ROWS))
        splits = dataset.info.splits if dataset.info is not None else None
        total = splits[split].num_examples if splits and split in splits else None
        if total is not None and max_samples is not None:
            total = min(total, max_samples)
        features = dataset.features
        columns = list(features) if features else list(rows[0]) if rows else []
        dataset = (datasets.Dataset.from_list(rows, features=features) if rows
                   else datasets.Dataset.from_dict({c: [] for c in columns}))
        schema = DatasetSchema(columns, total)
    else:
        schema = DatasetSchema(list(dataset.column_names), len(dataset))
    return (standardize_columns(dataset, **rename) if rename else dataset), schema


class StageDatasets:
    """A run's datasets by stage (or "evaluation"), each loaded once per process (`load_stage_dataset`), with their
    schemas as published; `streaming` (a dry run): a Hub dataset's first rows."""

    def __init__(self, *, streaming: bool):
        self.streaming = streaming
        self.loaded: dict[str, Dataset] = {}
        self.schemas: dict[str, DatasetSchema] = {}

    def of(self, key: str, args: DataArguments | EvaluationConfig, split_attribute: str = "dataset_train_split") -> Dataset:
        """The dataset a section's arguments (a `DataArguments`-like object) point at, standard column names."""
        return self.load(key, args.dataset_name, split=getattr(args, split_attribute), config=args.dataset_config,
                         kwargs=args.dataset_kwargs, max_samples=getattr(args, "max_samples", None),
                         rename={"prompt_column": args.prompt_column, "solution_column": args.solution_column})

    def load(self, key: str, name: str, **spec: Any) -> Dataset:
        if key not in self.loaded:
            self.loaded[key], self.schemas[key] = load_stage_dataset(name, streaming=self.streaming, **spec)
        return self.loaded[key]


def standardize_columns(dataset, *, prompt_column: str = "prompt", solution_column: str = "solution"):
    """Name the prompt and gold-answer columns as TRL and the rewards expect (`prompt`, `solution`).

    A text prompt column becomes a conversational one-turn `prompt`, so the model's chat template applies.

    >>> from datasets import Dataset
    >>> ds = standardize_columns(Dataset.from_list([{"problem": "1+1?", "answer": "2", "solution": "long"}]),
    ...                          prompt_column="problem", solution_column="answer")
    >>> ds[0]["prompt"], ds[0]["solution"], sorted(ds.column_names)
    ([{'role': 'user', 'content': '1+1?'}], '2', ['prompt', 'solution'])
    """
    if solution_column != "solution" and solution_column in dataset.column_names:
        if "solution" in dataset.column_names:
            dataset = dataset.remove_columns("solution")
        dataset = dataset.rename_column(solution_column, "solution")
    if prompt_column != "prompt" and prompt_column in dataset.column_names:
        if "prompt" in dataset.column_names:
            dataset = dataset.remove_columns("prompt")
        dataset = dataset.map(lambda row: {"prompt": [{"role": "user", "content": row[prompt_column]}]},
                              remove_columns=[prompt_column])
    return dataset


__all__ = ["DatasetSchema", "StageDatasets", "load_dataset_spec", "load_stage_dataset", "standardize_columns"]
