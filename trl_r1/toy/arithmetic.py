"""A toy verifiable task shipped with the package: chained small-integer arithmetic with gold answers.

It is what `recipes/tiny/` trains on: small enough that the tiny offline model learns it on CPU in minutes,
and checked by the same rewards as real math (the `solution` column holds the gold answer, which the `math`
reward compares with the completion's ``<answer>`` block). The chain of thought works left to right, one
operation per step ("3 + 4 is 7. 7 + 5 is 12."), so every problem is built from the same small table of
one-step facts. Problems are split by operand tuple: the ``test`` split holds problems never seen in
training, which a model can only solve by having learnt the steps, not the problems.

`base_corpus_dataset` gives the R1-Zero route a *base* model: briefly pretraining a random model on worked
solutions, few of them with the R1 tags, makes a model that can do the steps and has seen the tags but rarely
uses them, like a real base model (see `trl_r1.toy.tiny.build_tiny_model(pretrain=...)`).
"""

from __future__ import annotations

import itertools
import random
import typing
from dataclasses import dataclass
from functools import reduce
from typing import Literal

OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
Split = Literal["train", "cold_start", "rl", "test", "all"]
TRAINING_SPLITS = ("train", "cold_start", "rl")
SLIPS = (-2, -1, 1, 2)


@dataclass(frozen=True)
class Problem:
    """One problem ``a op b op c ...`` (evaluated left to right) and its gold answer."""

    operands: tuple[int, ...]
    op: str = "+"

    @property
    def answer(self) -> int:
        return reduce(OPERATORS[self.op], self.operands)

    @property
    def question(self) -> str:
        return f"What is {f' {self.op} '.join(map(str, self.operands))}?"

    def worked(self, slip_rate: float = 0.0, rng: random.Random | None = None) -> tuple[str, int]:
        """The worked steps, one operation each, and the answer they reach.

        With `slip_rate` > 0 this is a *noisy teacher*: each step's result is off by 1 or 2 with that probability
        (never below 0 for a sum), and the next step and the answer follow the slipped result, so the trace is
        well-formed, consistent and wrong, the way a careless human's worked solution is.

        >>> Problem((3, 4, 5)).worked()
        ('3 + 4 is 7. 7 + 5 is 12.', 12)
        >>> Problem((3, 4, 5)).worked(slip_rate=1.0, rng=random.Random(0))
        ('3 + 4 is 9. 9 + 5 is 16.', 16)
        """
        if slip_rate and rng is None:
            raise ValueError("a slipping teacher needs its random.Random (rng)")
        steps, total = [], self.operands[0]
        for operand in self.operands[1:]:
            result = OPERATORS[self.op](total, operand)
            if slip_rate and rng.random() < slip_rate:
                slips = [d for d in SLIPS if self.op != "+" or result + d >= 0]
                result += rng.choice(slips)
            steps.append(f"{total} {self.op} {operand} is {result}.")
            total = result
        return " ".join(steps), total

    def reasoning(self) -> str:
        """The worked steps the cold-start set teaches, one operation each.

        >>> Problem((3, 4, 5)).reasoning()
        '3 + 4 is 7. 7 + 5 is 12.'
        """
        return self.worked()[0]

    def completion(self, slip_rate: float = 0.0, rng: random.Random | None = None, *,
                   answer_on_new_line: bool = False) -> str:
        """The R1-format target: reasoning in ``<think>``, the bare number in ``<answer>``.

        `answer_on_new_line` lays it out as rejection sampling writes its accepted traces
        (`trl_r1.data.rejection_sampling.sft_row`), so that a final SFT trains on the token sequence it sampled.

        >>> Problem((3, 4, 5)).completion()
        '<think>3 + 4 is 7. 7 + 5 is 12.</think> <answer>12</answer>'
        >>> Problem((3, 4, 5)).completion(answer_on_new_line=True)
        '<think>3 + 4 is 7. 7 + 5 is 12.</think>\\n<answer>12</answer>'
        """
        reasoning, answer = self.worked(slip_rate, rng)
        separator = "\n" if answer_on_new_line else " "
        return f"<think>{reasoning}</think>{separator}<answer>{answer}</answer>"

    def plain_completion(self, slip_rate: float = 0.0, rng: random.Random | None = None) -> str:
        """The same worked steps without the R1 tags, as a textbook would write them.

        >>> Problem((3, 4, 5)).plain_completion()
        '3 + 4 is 7. 7 + 5 is 12. The answer is 12.'
        """
        reasoning, answer = self.worked(slip_rate, rng)
        return f"{reasoning} The answer is {answer}."


def problems(split: Split = "train", *, max_operand: int = 9, num_terms: int = 2, operators: str = "+",
             test_fraction: float = 0.2, cold_start_fraction: float = 0.5, seed: int = 0) -> list[Problem]:
    """Every problem with `num_terms` operands in ``0..max_operand``, split into train and held-out test.

    ``cold_start`` and ``rl`` split the train problems in two (`cold_start_fraction` of them for the cold start), so
    that RL prompts are problems the cold start never saw. The split depends only on the arguments, so every stage
    of a run sees the same partition.

    >>> len(problems("all")), len(problems("train")), len(problems("test")), len(problems("test", num_terms=3))
    (100, 80, 20, 200)
    >>> set(problems("train")).isdisjoint(problems("test"))
    True
    >>> cold, rl = problems("cold_start", num_terms=3), problems("rl", num_terms=3)
    >>> len(cold), len(rl), set(cold).isdisjoint(rl), set(cold) | set(rl) == set(problems("train", num_terms=3))
    (400, 400, True, True)
    >>> problems("all", max_operand=2, operators="*")[5]
    Problem(operands=(1, 2), op='*')
    """
    unknown = set(operators) - set(OPERATORS)
    if unknown:
        raise ValueError(f"unknown operators {sorted(unknown)}; known: {sorted(OPERATORS)}")
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    if split not in typing.get_args(Split):
        raise ValueError(f"split must be one of {typing.get_args(Split)}, got {split!r}")
    every = [Problem(operands, op) for op in operators
             for operands in itertools.product(range(max_operand + 1), repeat=num_terms)]
    if split == "all":
        return every
    shuffled = every[:]
    random.Random(seed).shuffle(shuffled)
    test = set(shuffled[: round(test_fraction * len(every))])
    chosen = [p for p in shuffled if (p in test) == (split == "test")]
    if split in ("cold_start", "rl"):
        cut = round(cold_start_fraction * len(chosen))
        chosen = chosen[:cut] if split == "cold_start" else chosen[cut:]
    return chosen


def arithmetic_dataset(split: Split = "train", *, num_rows: int | None = None, max_operand: int = 9,
                       num_terms: int = 2, operators: str = "+", test_fraction: float = 0.2,
                       cold_start_fraction: float = 0.5, seed: int = 0, sample_seed: int | None = None,
                       instruction: str | None = None, prefill: str | None = None):
    """RL / evaluation prompts: a conversational ``prompt`` and the gold ``solution`` (a string).

    `num_rows` repeats or truncates the problems in a shuffled order seeded by `sample_seed` (default `seed`;
    `seed` alone fixes the train/test split), None: each problem once in split order.

    R1-Zero's setting on a chat model whose template does not open the reasoning: `instruction` is appended to
    each question (R1-Zero's template describes the format, Table 1), and `prefill` becomes a final assistant
    message that the model continues (TRL's ``continue_final_message``), e.g. ``"<think>"``; trl-r1's rewards see
    such a prefill and score the completion as if it had written it.

    >>> ds = arithmetic_dataset("test", num_rows=3)
    >>> ds.column_names, ds[0]["prompt"][0]["role"], ds.num_rows
    (['prompt', 'solution'], 'user', 3)
    >>> arithmetic_dataset("test", num_rows=1, instruction=" Think first.", prefill="<think>")[0]["prompt"]
    [{'role': 'user', 'content': 'What is 1 + 6? Think first.'}, {'role': 'assistant', 'content': '<think>'}]
    """
    from datasets import Dataset

    pool = problems(split, max_operand=max_operand, num_terms=num_terms, operators=operators,
                    test_fraction=test_fraction, cold_start_fraction=cold_start_fraction, seed=seed)
    opened = [{"role": "assistant", "content": prefill}] if prefill else []
    return Dataset.from_list([
        {"prompt": [{"role": "user", "content": p.question + (instruction or "")}, *opened],
         "solution": str(p.answer)}
        for p in _rows(pool, num_rows, seed if sample_seed is None else sample_seed)
    ])


def cold_start_dataset(num_rows: int = 64, *, split: Split = "train", slip_rate: float = 0.0,
                       answer_on_new_line: bool = False, num_problems: int | None = None, max_operand: int = 9,
                       num_terms: int = 2, operators: str = "+", test_fraction: float = 0.2,
                       cold_start_fraction: float = 0.5, seed: int = 0, sample_seed: int | None = None):
    """A cold-start chain-of-thought set: ``messages`` conversations from a training split (never ``test``).

    `split` ``cold_start`` keeps the cold start off the ``rl`` problems. `slip_rate` > 0 writes the traces with
    the noisy teacher of `Problem.worked` (fresh slips each time a problem repeats): a model trained on them to
    convergence learns every step *and* the teacher's error rate, so its pass@1 sits well under its pass@k, the
    room RL with a verifiable reward has to surpass its demonstrations. `answer_on_new_line`: see
    `Problem.completion` (a pipeline whose final SFT trains on rejection-sampled traces wants it). `num_problems`
    limits it to that many distinct problems, repeated up to `num_rows` in an order seeded by `sample_seed`
    (default `seed + 1`).

    >>> ds = cold_start_dataset(4)
    >>> ds[0]["messages"][1]["content"].startswith("<think>")
    True
    >>> test = {p.question for p in problems("test")}
    >>> any(row["messages"][0]["content"] in test for row in cold_start_dataset(500))
    False
    >>> len({row["messages"][0]["content"] for row in cold_start_dataset(100, num_problems=10)})
    10
    >>> rows = cold_start_dataset(1000, split="cold_start", slip_rate=0.3, num_terms=3)
    >>> answers = {p.question: str(p.answer) for p in problems("cold_start", num_terms=3)}
    >>> sum(r["messages"][1]["content"].endswith(f"<answer>{answers[r['messages'][0]['content']]}</answer>")
    ...     for r in rows)  # about (1 - 0.3) ** 2 of them are right
    483
    """
    from datasets import Dataset

    pool = _training_problems(split, max_operand=max_operand, num_terms=num_terms, operators=operators,
                              test_fraction=test_fraction, cold_start_fraction=cold_start_fraction,
                              seed=seed)[:num_problems]
    sample_seed = seed + 1 if sample_seed is None else sample_seed
    rng = random.Random(sample_seed + 10_007)
    return Dataset.from_list([
        {"messages": [{"role": "user", "content": p.question},
                      {"role": "assistant",
                       "content": p.completion(slip_rate, rng, answer_on_new_line=answer_on_new_line)}]}
        for p in _rows(pool, num_rows, sample_seed)
    ])


def base_corpus_dataset(num_rows: int = 2000, *, tagged_fraction: float = 0.1, slip_rate: float = 0.0,
                        split: Split = "train", max_operand: int = 9, num_terms: int = 2, operators: str = "+",
                        test_fraction: float = 0.2, cold_start_fraction: float = 0.5, seed: int = 0,
                        sample_seed: int | None = None):
    """Pretraining documents for an R1-Zero *base* model: training problems with worked solutions, mostly in
    plain text ("... The answer is 12."), a `tagged_fraction` of them in the R1 tag format, written by the
    noisy teacher at `slip_rate` (see `cold_start_dataset`).

    A real base model has seen worked solutions and tag-like markup without being tuned to answer in any one
    format, and has read careless solutions as well as careful ones; this is that prior at toy scale.
    ``messages`` rows (trained on every token, prompt included).

    >>> rows = base_corpus_dataset(1000, tagged_fraction=0.1)
    >>> sum(r["messages"][1]["content"].startswith("<think>") for r in rows)
    107
    >>> rows[1]["messages"][1]["content"]
    '1 + 0 is 1. The answer is 1.'
    """
    from datasets import Dataset

    pool = _training_problems(split, max_operand=max_operand, num_terms=num_terms, operators=operators,
                              test_fraction=test_fraction, cold_start_fraction=cold_start_fraction, seed=seed)
    sample_seed = seed + 2 if sample_seed is None else sample_seed
    rng = random.Random(sample_seed + 20_011)
    slips = random.Random(sample_seed + 30_011)
    return Dataset.from_list([
        {"messages": [{"role": "user", "content": p.question},
                      {"role": "assistant",
                       "content": p.completion(slip_rate, slips) if rng.random() < tagged_fraction
                       else p.plain_completion(slip_rate, slips)}]}
        for p in _rows(pool, num_rows, sample_seed)
    ])


def _training_problems(split: Split, **kwargs) -> list[Problem]:
    """`problems(split, **kwargs)` for a set that trains on them: never the held-out ``test`` problems."""
    if split not in TRAINING_SPLITS:
        raise ValueError(f"training data comes from a training split {TRAINING_SPLITS}, not {split!r}")
    return problems(split, **kwargs)


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
