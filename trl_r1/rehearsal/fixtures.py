"""Local mirrors of the recipes' Hub datasets, in their published schemas, loaded through `load_dataset`.

Each mirror is a directory laid out like the Hub repository (README.md with the same `configs:` metadata, the
data files under the same paths), so ``datasets.load_dataset(<mirror>/<owner>/<name>, <config>, split=...)``
takes the same code path, configs and split syntax as the Hub id. Point the pipeline at a mirror root with
``TRL_R1_DATA_DIR=<root>``: `trl_r1.pipeline.data.load_dataset_spec` then loads ``<root>/<dataset id>``
instead of the Hub id when that directory exists.

The columns, nesting, dtypes, configs and splits come from each dataset card (`CARDS`); the rows are synthetic:
arithmetic problems whose answer is always 7 and stdin/stdout problems that all ask for a + b (with correct
gold answers and tests), so that one rehearsed answer per task solves every row and rewards score real
successes (and the untrained model's real failures).

>>> import tempfile, datasets
>>> root = write_mirrors(tempfile.mkdtemp(), rows=8)
>>> ds = datasets.load_dataset(f"{root}/open-r1/Mixture-of-Thoughts", "math", split="train")
>>> ds.column_names, ds[0]["messages"][1]["role"]
(['messages', 'num_tokens', 'source'], 'assistant')
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA_DIR_ENV = "TRL_R1_DATA_DIR"

# Where each schema was read (dataset cards' YAML `dataset_info` / `configs`).
CARDS = {
    "open-r1/Mixture-of-Thoughts": "https://huggingface.co/datasets/open-r1/Mixture-of-Thoughts (card YAML: "
    "configs all/code/math/science, data_files <config>/train-*, features messages[{content, role}], "
    "num_tokens int64, source string)",
    "trl-lib/DeepMath-103K": "https://huggingface.co/datasets/trl-lib/DeepMath-103K/commit/72e2aed (card YAML: "
    "config default, splits train data/train-* and test data/test-*, features prompt[{content, role}], "
    "solution string)",
    "HuggingFaceH4/MATH-500": "https://huggingface.co/datasets/HuggingFaceH4/MATH-500 (split test; features "
    "problem, solution, answer, subject string, level int64, unique_id string, as in the copies' cards "
    "macabdul9/MATH-500 and lmms-lab/MATH500; the H4 repo itself ships test.jsonl)",
    "open-r1/verifiable-coding-problems-python": "https://huggingface.co/datasets/open-r1/verifiable-coding-"
    "problems-python/blob/main/README.md (rev b761a24: config default, split train data/train-*, features "
    "source, task_type, in_source_id, problem_statement, gold_standard_solution, problem_id, metadata{...}, "
    "verification_info{language, test_cases[{fn_name, input, output, type}]})",
}

_MESSAGES = [{"content": "string", "role": "string"}]


def _features(spec: dict[str, Any]):
    """`datasets.Features` from a card-like spec: 'string'/'int64', a dict (struct) or a one-item list."""
    from datasets import Features, List, Value

    def convert(value):
        if isinstance(value, str):
            return Value(value)
        if isinstance(value, list):
            return List(convert(value[0]))
        return {k: convert(v) for k, v in value.items()}

    return Features({k: convert(v) for k, v in spec.items()})


def _problems(rows: int, seed: int) -> list[tuple[str, str, str]]:
    """Arithmetic problems (question, reasoning, answer) whose answer is always 7, with varied operands and
    wording: one fixed, correct R1 answer then solves every row (`trl_r1.pipeline.smoke` rehearses it)."""
    rng = random.Random(seed)
    out = []
    for _ in range(rows):
        b = rng.randint(0, 40)
        a, op = rng.choice([(7 - b, "+"), (7 + b, "-")]) if b <= 7 else (7 + b, "-")
        question = rng.choice(["What is ${a} {op} {b}$?", "Compute ${a} {op} {b}$.", "Evaluate ${a} {op} {b}$."])
        out.append((question.format(a=a, op=op, b=b), f"We compute ${a} {op} {b} = 7$.", "7"))
    return out


def mixture_of_thoughts(config: str, rows: int, seed: int = 0) -> list[dict[str, Any]]:
    """open-r1/Mixture-of-Thoughts rows: a user turn and a long-CoT assistant turn (<think> ... </think> answer)."""
    data = []
    for i, (question, reasoning, answer) in enumerate(_problems(rows, seed)):
        if config == "code" or (config == "all" and i % 2):
            user = f"Read two integers a and b from standard input and print a + b. (Case {i}.)"
            reply = ("<think>\nRead both numbers from stdin and add them.\n</think>\n\n```python\n"
                     "a, b = map(int, input().split())\nprint(a + b)\n```")
            source = "open-r1/codeforces-cots"
        else:
            user = f"{question} Please reason step by step, and put your final answer within \\boxed{{}}."
            reply = f"<think>\n{reasoning}\n</think>\n\nThe answer is $\\boxed{{{answer}}}$."
            source = "open-r1/OpenR1-Math-220k"
        data.append({"messages": [{"content": user, "role": "user"}, {"content": reply, "role": "assistant"}],
                     "num_tokens": len((user + reply).split()) * 2, "source": source})
    return data


def deepmath(rows: int, seed: int = 0) -> list[dict[str, Any]]:
    return [{"prompt": [{"content": q, "role": "user"}], "solution": a} for q, _, a in _problems(rows, seed)]


def math500(rows: int, seed: int = 0) -> list[dict[str, Any]]:
    subjects = ["Algebra", "Prealgebra", "Number Theory", "Geometry", "Precalculus"]
    return [{"problem": q, "solution": f"{r} So the answer is $\\boxed{{{a}}}$.", "answer": a,
             "subject": subjects[i % len(subjects)], "level": 1 + i % 5,
             "unique_id": f"test/{subjects[i % len(subjects)].lower().replace(' ', '_')}/{i}.json"}
            for i, (q, r, a) in enumerate(_problems(rows, seed))]


def verifiable_coding(rows: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    data = []
    for i in range(rows):
        tests = [{"fn_name": None, "input": f"{a} {b}\n", "output": f"{a + b}\n", "type": "stdin_stdout"}
                 for a, b in ((rng.randint(0, 99), rng.randint(0, 99)) for _ in range(3))]
        data.append({
            "source": "codeforces", "task_type": "verifiable_code", "in_source_id": f"{1000 + i}_A",
            "problem_statement": f"Read two integers a and b from standard input and print a + b. (Problem {i}.)",
            "gold_standard_solution": "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
            "problem_id": f"vcu_{i}",
            "metadata": {"difficulty": "EASY", "memory_limit": "256 megabytes", "memory_limit_bytes": 268435456,
                         "problem_url": f"https://codeforces.com/problemset/problem/{1000 + i}/A",
                         "time_limit": "1 second"},
            "verification_info": {"language": "python", "test_cases": tests},
        })
    return data


# dataset id -> (card features, {config: {split: path in the repo}}, row builder(config, split, rows))
MIRRORS: dict[str, tuple[dict[str, Any], dict[str, dict[str, str]], Callable[..., list[dict[str, Any]]]]] = {
    "open-r1/Mixture-of-Thoughts": (
        {"messages": _MESSAGES, "num_tokens": "int64", "source": "string"},
        {c: {"train": f"{c}/train-00000-of-00001.parquet"} for c in ("all", "code", "math", "science")},
        lambda config, split, rows: mixture_of_thoughts(config, rows)),
    "trl-lib/DeepMath-103K": (
        {"prompt": _MESSAGES, "solution": "string"},
        {"default": {"train": "data/train-00000-of-00001.parquet", "test": "data/test-00000-of-00001.parquet"}},
        lambda config, split, rows: deepmath(rows, seed=split == "test")),
    "HuggingFaceH4/MATH-500": (
        {"problem": "string", "solution": "string", "answer": "string", "subject": "string", "level": "int64",
         "unique_id": "string"},
        {"default": {"test": "test.jsonl"}},
        lambda config, split, rows: math500(rows)),
    "open-r1/verifiable-coding-problems-python": (
        {"source": "string", "task_type": "string", "in_source_id": "string", "problem_statement": "string",
         "gold_standard_solution": "string", "problem_id": "string",
         "metadata": {"difficulty": "string", "memory_limit": "string", "memory_limit_bytes": "int64",
                      "problem_url": "string", "time_limit": "string"},
         "verification_info": {"language": "string", "test_cases": [
             {"fn_name": "string", "input": "string", "output": "string", "type": "string"}]}},
        {"default": {"train": "data/train-00000-of-00001.parquet"}},
        lambda config, split, rows: verifiable_coding(rows)),
}


def _readme(configs: dict[str, dict[str, str]]) -> str:
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines.append(f"- config_name: {name}")
        lines.append("  data_files:")
        for split, path in splits.items():
            pattern = path if path.endswith(".jsonl") else path.rsplit("-00000-of-", 1)[0] + "-*"
            lines += [f"  - split: {split}", f"    path: {pattern}"]
    lines += ["---", "", "Offline mirror written by trl_r1.rehearsal.fixtures (synthetic rows, published schema).", ""]
    return "\n".join(lines)


def write_mirror(root: str | Path, dataset_id: str, rows: int = 128) -> Path:
    """Write one dataset's mirror under `<root>/<dataset_id>` (every config and split of the card)."""
    from datasets import Dataset

    features, configs, build = MIRRORS[dataset_id]
    repo = Path(root) / dataset_id
    for config, splits in configs.items():
        for split, path in splits.items():
            target = repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            dataset = Dataset.from_list(build(config, split, rows), features=_features(features))
            if path.endswith(".jsonl"):
                with target.open("w") as f:
                    for row in dataset:
                        f.write(json.dumps(row) + "\n")
            else:
                dataset.to_parquet(str(target))
    (repo / "README.md").write_text(_readme(configs))
    return repo


def write_mirrors(root: str | Path, dataset_ids: list[str] | None = None, rows: int = 128) -> Path:
    """Write the mirrors of `dataset_ids` (default: every dataset a shipped recipe names) under `root`.

    A mirror already written there with the same number of rows is kept (`.mirrors.json` records them).
    """
    import shutil

    root = Path(root)
    stamp_file = root / ".mirrors.json"
    try:
        written = json.loads(stamp_file.read_text())
    except (OSError, ValueError):
        written = {}
    for dataset_id in dataset_ids or list(MIRRORS):
        if written.get(dataset_id) != rows:
            write_mirror(root, dataset_id, rows)
            shutil.rmtree(root / ".hf-datasets-cache", ignore_errors=True)  # rows changed: drop cached Arrow
            written[dataset_id] = rows
    root.mkdir(parents=True, exist_ok=True)
    stamp_file.write_text(json.dumps(written, indent=1))
    return root


def mirror(name: str, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`(<TRL_R1_DATA_DIR>/<name>, kwargs + cache_dir)` when that mirror exists, else `(name, kwargs)` unchanged.

    The mirror gets its own `datasets` cache: `load_dataset` keys a local folder's cache by the folder name and
    its file patterns, not by content, so two mirrors of the same dataset would otherwise read each other's rows.
    """
    root = os.environ.get(DATA_DIR_ENV)
    if root and "/" in name and (Path(root) / name).is_dir():
        return str(Path(root) / name), {"cache_dir": str(Path(root) / ".hf-datasets-cache"), **kwargs}
    return name, kwargs


__all__ = ["CARDS", "DATA_DIR_ENV", "MIRRORS", "mirror", "write_mirror", "write_mirrors"]
