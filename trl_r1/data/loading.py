"""Loading a dataset by name, the one way every command does it: a Python builder, a local file or folder, or the Hub.

Recipes (`trl_r1.pipeline`) and the dataset builders (`trl-r1 rejection-sample|distill`) both read a
`dataset_name` through `load_dataset_spec`, so the same name works in both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..registry import resolve_import_path


class EmptyDatasetError(ValueError):
    """A dataset file or saved folder with no rows (`datasets` fails on those with unrelated errors)."""


_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv", ".txt": "text"}


def load_dataset_spec(name: str, *, split: str = "train", config: str | None = None,
                      kwargs: dict[str, Any] | None = None, max_samples: int | None = None,
                      streaming: bool = False):
    """One dataset split from a recipe's `dataset_name`.

    `name` is a Python builder ``module:function`` (called with `split` when it takes one, and `kwargs`), a local
    file (by extension), a folder written by ``save_to_disk``, or anything ``datasets.load_dataset`` accepts.
    With `streaming`, that last kind is streamed (an ``IterableDataset``: the preflight reads its first rows
    without downloading it); the others load as usual.

    >>> load_dataset_spec("trl_r1.toy.arithmetic:arithmetic_dataset", split="test", max_samples=5).num_rows
    5
    """
    import datasets

    kwargs = dict(kwargs or {})
    if names_builder(name):
        dataset = _call_builder(name, split, kwargs)
    elif Path(name).is_file():
        builder = _FILE_BUILDERS.get(Path(name).suffix)
        if builder is None:
            raise ValueError(f"cannot tell the format of {name!r}; use one of {sorted(_FILE_BUILDERS)}")
        _refuse_empty(Path(name))
        dataset = datasets.load_dataset(builder, data_files=name, split="train", **kwargs)
    elif _is_saved_dataset(Path(name)):
        _refuse_empty(Path(name) / split if (Path(name) / "dataset_dict.json").is_file() else Path(name))
        dataset = datasets.load_from_disk(name)
        if isinstance(dataset, datasets.DatasetDict):
            dataset = dataset[split]
    else:
        from ..rehearsal.fixtures import mirror  # TRL_R1_DATA_DIR: a local mirror of the Hub repo, same loader

        name, kwargs = mirror(name, kwargs)
        if streaming:  # `datasets` cannot stream a slice ("train[:-100]"); its base split has the same columns
            split = split.partition("[")[0]
        dataset = datasets.load_dataset(name, config, split=split, streaming=streaming, **kwargs)
        if streaming:
            return dataset.take(max_samples) if max_samples is not None else dataset
    if max_samples is not None:
        dataset = dataset.select(range(min(max_samples, len(dataset))))
    return dataset


def names_builder(name: str) -> bool:
    """Whether a `dataset_name` is a Python builder ``module:function`` (not a file, folder or URL)."""
    return ":" in name and not Path(name).exists() and "://" not in name


def _refuse_empty(path: Path) -> None:
    """Raise EmptyDatasetError for a file, or a split saved by ``save_to_disk``, that holds no rows."""
    if path.is_dir():
        state = path / "state.json"
        empty = state.is_file() and json.loads(state.read_text()).get("_data_files") == []
    elif path.suffix == ".parquet" and path.stat().st_size:
        import pyarrow.parquet as pq

        empty = pq.read_metadata(path).num_rows == 0
    else:
        empty = path.stat().st_size == 0
    if empty:
        raise EmptyDatasetError(f"{path} has no rows")


def _is_saved_dataset(path: Path) -> bool:
    return (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file()


def _call_builder(target: str, split: str, kwargs: dict[str, Any]):
    import inspect

    try:
        builder = resolve_import_path(target)
    except ImportError as exc:
        raise ValueError(f"cannot import dataset builder {target!r}: {exc}") from exc
    if "split" in inspect.signature(builder).parameters:
        kwargs.setdefault("split", split)
    return builder(**kwargs)
