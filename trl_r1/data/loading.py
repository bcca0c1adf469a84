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


class LocalDataError(ValueError):
    """A local dataset that cannot be read as asked: a missing file, text that is not UTF-8, a split it lacks.
    The message names the file (and line) and the fix."""


class SplitError(LocalDataError):
    """A local file or saved dataset asked for a split (or slice) it does not have."""


_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv", ".txt": "text"}
_TEXT_SUFFIXES = {".json", ".jsonl", ".csv", ".txt"}
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")  # `datasets` decompresses these itself: x.jsonl.gz is JSONL
_PATH_PREFIXES = ("/", "./", "../", "~", ".\\", "..\\")


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
    elif Path(name).expanduser().is_file():
        path = Path(name).expanduser()
        builder = _FILE_BUILDERS.get(Path(path.stem).suffix if path.suffix in _COMPRESSED_SUFFIXES else path.suffix)
        if builder is None:
            raise ValueError(f"cannot tell the format of {name!r}; use one of {sorted(_FILE_BUILDERS)} (or one of "
                             f"them compressed: {', '.join(_COMPRESSED_SUFFIXES)})")
        if split.partition("[")[0].strip() != "train":
            raise SplitError(f"split {split!r}: {name} is one file, which `datasets` reads as a single split named "
                             "'train'; use 'train' or a slice of it ('train[:100]', 'train[-100:]'), or keep the "
                             "held-out rows in a file of their own (or a folder with train.jsonl and test.jsonl) "
                             "and name that")
        _refuse_empty(path)
        if path.suffix in _TEXT_SUFFIXES:
            _check_text_file(path)
        try:
            dataset = datasets.load_dataset(builder, data_files=str(path), split=split, **kwargs)
        except Exception as exc:  # pyarrow's errors name a byte position (or nothing): name the line instead
            if isinstance(exc, ValueError) and "corresponds to no data" in str(exc):
                raise EmptyDatasetError(f"split {split!r} selects no rows of {name}") from None
            _refuse_bad_json_line(path)
            raise
    elif _is_saved_dataset(Path(name)):
        split_name = split.partition("[")[0].strip()
        dict_file = Path(name) / "dataset_dict.json"
        if dict_file.is_file():
            splits = json.loads(dict_file.read_text()).get("splits", [])
            if split_name not in splits:
                raise SplitError(f"split {split!r}: the dataset saved in {name} has the splits {splits}; use one "
                                 "of them (or a slice of one, 'train[:100]')")
        _refuse_empty(Path(name) / split_name if dict_file.is_file() else Path(name))
        dataset = datasets.load_from_disk(name)
        if isinstance(dataset, datasets.DatasetDict):
            dataset = dataset[split_name]
        elif split_name not in ("train", str(dataset.split)):
            raise SplitError(f"split {split!r}: {name} holds one saved split ({str(dataset.split or 'train')!r}); "
                             "use it, or a slice of it ('train[:100]')")
        dataset = _sliced(dataset, split)
    elif Path(name).expanduser().is_dir():  # a folder of data files (train.jsonl, test.jsonl), absolute or not
        dataset = datasets.load_dataset(str(Path(name).expanduser()), config, split=split, **kwargs)
    elif looks_like_path(name):
        raise LocalDataError(_missing_path_message(name))
    else:
        from ..rehearsal.fixtures import mirror  # TRL_R1_DATA_DIR: a local mirror of the Hub repo, same loader

        name, kwargs = mirror(name, kwargs)
        if "/" not in name and _hub_offline() and not Path(name).exists():
            # offline, `datasets` would serve a bare name from its cache: a stale copy of a folder of that name
            # read elsewhere, not data that is here
            raise LocalDataError(_missing_path_message(name) + " (the Hub is offline, so it is not looked up there)")
        if streaming:  # `datasets` cannot stream a slice ("train[:-100]"); its base split has the same columns
            split = split.partition("[")[0]
        dataset = datasets.load_dataset(name, config, split=split, streaming=streaming, **kwargs)
        if streaming:
            return dataset.take(max_samples) if max_samples is not None else dataset
    if max_samples is not None:
        dataset = dataset.select(range(min(max_samples, len(dataset))))
    return dataset


def held_out_split(name: str | None) -> str:
    """The split an evaluation reads when none is set: 'test', or 'train' for a single local file (a file of
    held-out rows is one split, which `datasets` names 'train'). A split set explicitly is honoured as is."""
    return "train" if name and Path(name).expanduser().is_file() else "test"


def looks_like_path(name: str) -> bool:
    """Whether a `dataset_name` (or model name) was meant as a local path: it starts like one ('/', './',
    '../', '~') or ends in a data file's extension. Such a name is never sent to the Hub as an id."""
    return name.startswith(_PATH_PREFIXES) or Path(name).suffix.lower() in _FILE_BUILDERS


def _hub_offline() -> bool:
    """HF_HUB_OFFLINE / HF_DATASETS_OFFLINE, read now (the libraries read them once, at import)."""
    import os

    return any(os.environ.get(key, "").upper() in ("1", "ON", "YES", "TRUE")
               for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _missing_path_message(name: str) -> str:
    """'no such file' for a local path, from where it is looked up, with the closest names in its folder."""
    import difflib

    path = Path(name).expanduser()
    folder = path.parent if str(path.parent) else Path(".")
    relative = "" if path.is_absolute() else f" (paths are relative to {Path.cwd()})"
    if not folder.is_dir():
        return f"{name} does not exist, nor does its folder {folder}{relative}; check the path"
    close = difflib.get_close_matches(path.name, [p.name for p in folder.iterdir()], n=1, cutoff=0.6)
    return f"{name} does not exist" + (f"; did you mean {str(folder / close[0])!r}?" if close else relative)


def _sliced(dataset, split: str):
    """The rows a split's slice selects ('train[:100]', 'test[-10%:]'), as `datasets` reads slices of a split."""
    import datasets

    if "[" not in split:
        return dataset
    try:
        (instruction,) = datasets.ReadInstruction.from_spec(split).to_absolute({split.partition("[")[0].strip():
                                                                                 len(dataset)})
    except (ValueError, AssertionError) as exc:
        raise SplitError(f"split {split!r}: not one split slice ('train[:100]', 'train[-10%:]'): {exc}") from exc
    return dataset.select(range(instruction.from_, instruction.to))


def _check_text_file(path: Path) -> None:
    """Refuse a text data file that is not UTF-8 (pyarrow reads it, and the first row read then fails with a bare
    UnicodeDecodeError) or that holds blank lines only (`datasets` fails on it with an unrelated error)."""
    content = False
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise LocalDataError(
                    f"{path}, line {number}: not UTF-8 text (byte 0x{line[exc.start]:02x} at column {exc.start + 1}); "
                    f"save the file as UTF-8, e.g. iconv -f latin1 -t utf-8 {path} > utf8{path.suffix}") from None
            content = content or bool(line.strip())
    if not content:
        raise EmptyDatasetError(f"{path} has blank lines only, no rows")


def _refuse_bad_json_line(path: Path) -> None:
    """Name the first line of a .jsonl file that is no JSON object (pyarrow's error gives a byte position in some
    block, neither the file nor the line); nothing when every line parses."""
    if path.suffix != ".jsonl":
        return
    with path.open(encoding="utf-8-sig") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                problem = f"not valid JSON ({getattr(exc, 'msg', exc)})"
            else:
                if isinstance(row, dict):
                    continue
                problem = f"a JSON {type(row).__name__}, not an object"
            raise LocalDataError(f"{path}, line {number}: {problem}; each line of a .jsonl file is one JSON object "
                                 "{...}: fix or remove that line") from None


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
