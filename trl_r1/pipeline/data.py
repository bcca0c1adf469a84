"""A stage's dataset from a recipe (`trl_r1.data.loading.load_dataset_spec`), with the column names TRL expects."""

from __future__ import annotations

from typing import Any

from ..data.loading import load_dataset_spec


def load_stage_dataset(args: Any, split_attribute: str = "dataset_train_split"):
    """The dataset a stage's arguments (a `DataArguments`-like object) point at, with standard column names."""
    dataset = load_dataset_spec(args.dataset_name, split=getattr(args, split_attribute), config=args.dataset_config,
                                kwargs=args.dataset_kwargs, max_samples=getattr(args, "max_samples", None))
    return standardize_columns(dataset, prompt_column=args.prompt_column, solution_column=args.solution_column)


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


__all__ = ["load_dataset_spec", "load_stage_dataset", "standardize_columns"]
