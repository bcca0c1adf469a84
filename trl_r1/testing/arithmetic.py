"""A toy verifiable task shipped with the package: small-integer arithmetic with gold answers.

It is what `recipes/tiny/` trains on: small enough that the tiny offline model learns it on CPU in minutes,
and checked by the same rewards as real math (the `solution` column holds the gold answer, which the `math`
reward compares with the completion's ``<answer>`` block). Problems are split by operand pair, so the
``test`` split holds problems never seen in training (held-out accuracy is a real generalisation measure).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
Split = Literal["train", "test", "all"]


@dataclass(frozen=True)
class Problem:
    """One arithmetic problem ``a op b`` and its gold answer."""

    a: int
    op: str
    b: int

    @property
    def answer(self) -> int:
        return OPERATORS[self.op](self.a, self.b)

    @property
    def question(self) -> str:
        return f"What is {self.a} {self.op} {self.b}?"

    def reasoning(self) -> str:
        """A short worked step, the chain of thought the cold-start set teaches."""
        return f"{self.a} {self.op} {self.b} is {self.answer}."

    def completion(self) -> str:
        """The R1-format target: reasoning in ``<think>``, the bare number in ``<answer>``."""
        return f"<think>{self.reasoning()}</think> <answer>{self.answer}</answer>"


def problems(split: Split = "train", *, max_operand: int = 9, operators: str = "+", test_fraction: float = 0.2,
             seed: int = 0) -> list[Problem]:
    """Every problem with operands in ``0..max_operand``, split by operand pair into train and held-out test.

    The split depends only on `seed` and `test_fraction`, so every stage of a run sees the same partition.

    >>> len(problems("all")), len(problems("train")), len(problems("test"))
    (100, 80, 20)
    >>> set(problems("train")).isdisjoint(problems("test"))
    True
    >>> problems("all", max_operand=2, operators="*")[5]
    Problem(a=1, op='*', b=2)
    """
    unknown = set(operators) - set(OPERATORS)
    if unknown:
        raise ValueError(f"unknown operators {sorted(unknown)}; known: {sorted(OPERATORS)}")
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    every = [Problem(a, op, b) for op in operators for a in range(max_operand + 1) for b in range(max_operand + 1)]
    if split == "all":
        return every
    shuffled = every[:]
    random.Random(seed).shuffle(shuffled)
    test = set(shuffled[: round(test_fraction * len(every))])
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    return [p for p in every if (p in test) == (split == "test")]


def arithmetic_dataset(split: Split = "train", *, num_rows: int | None = None, max_operand: int = 9,
                       operators: str = "+", test_fraction: float = 0.2, seed: int = 0):
    """RL / evaluation prompts: a conversational ``prompt`` and the gold ``solution`` (a string).

    `num_rows` repeats or truncates the problems in a seeded shuffled order (None: each problem once).

    >>> ds = arithmetic_dataset("test", num_rows=3)
    >>> ds.column_names, ds[0]["prompt"][0]["role"], ds.num_rows
    (['prompt', 'solution'], 'user', 3)
    """
    from datasets import Dataset

    rows = _rows(problems(split, max_operand=max_operand, operators=operators, test_fraction=test_fraction,
                          seed=seed), num_rows, seed)
    return Dataset.from_list([
        {"prompt": [{"role": "user", "content": p.question}], "solution": str(p.answer)} for p in rows
    ])


def cold_start_dataset(num_rows: int = 64, *, max_operand: int = 9, operators: str = "+", test_fraction: float = 0.2,
                       seed: int = 0):
    """A tiny cold-start chain-of-thought set: ``messages`` conversations drawn from the train split only.

    >>> ds = cold_start_dataset(4)
    >>> ds[0]["messages"][1]["content"].startswith("<think>")
    True
    >>> test = {p.question for p in problems("test")}
    >>> any(row["messages"][0]["content"] in test for row in cold_start_dataset(500))
    False
    """
    from datasets import Dataset

    rows = _rows(problems("train", max_operand=max_operand, operators=operators, test_fraction=test_fraction,
                          seed=seed), num_rows, seed + 1)
    return Dataset.from_list([
        {"messages": [{"role": "user", "content": p.question}, {"role": "assistant", "content": p.completion()}]}
        for p in rows
    ])


def _rows(pool: list[Problem], num_rows: int | None, seed: int) -> list[Problem]:
    """`num_rows` problems from `pool`: whole shuffled passes over it, then a partial one."""
    if num_rows is None:
        return pool
    rng = random.Random(seed)
    out: list[Problem] = []
    while len(out) < num_rows and pool:
        batch = pool[:]
        rng.shuffle(batch)
        out.extend(batch[: num_rows - len(out)])
    return out
