"""The tiny model after a few SFT steps on toy sums: a real policy whose samples are sometimes right.

The random tiny model almost never writes a well-formed, correct R1 answer, so the dataset builders would accept
nothing. A short run of TRL's `SFTTrainer` on eight problems of the arithmetic task (`trl_r1.toy.arithmetic`)
teaches it the format and most of those sums: sampling it gives a mix of correct, wrong and malformed answers,
which is what rejection sampling and distillation have to sort out.
"""

from __future__ import annotations

import os
from pathlib import Path

TRAINED = list(range(0, 80, 10))  # indices into arithmetic.problems("train") that the toy reasoner learns
UNSEEN = [5, 15, 25, 35]  # train-split problems it never saw


def toy_prompts():
    """12 prompt rows (`prompt`, gold `solution`): the 8 learned problems, then 4 it never saw."""
    from .arithmetic import arithmetic_dataset

    return arithmetic_dataset("train").select(TRAINED + UNSEEN)


def build_toy_reasoner(output_dir: str | os.PathLike, base_model_dir: str | os.PathLike, steps: int = 100,
                       seed: int = 0) -> Path:
    """SFT `base_model_dir` (the tiny model) on the learned problems with TRL and save it to `output_dir` (reused
    when already built). About 10 s on one CPU core at the default 100 steps."""
    out = Path(output_dir)
    if (out / "config.json").exists():
        return out
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from ..config import checkpointing_key
    from .arithmetic import problems

    learned = [problems("train")[i] for i in TRAINED]
    rows = [{"messages": [{"role": "user", "content": p.question}, {"role": "assistant", "content": p.completion()}]}
            for p in learned]
    args = SFTConfig(
        output_dir=str(out / "_trainer"), max_steps=steps, per_device_train_batch_size=16, learning_rate=3e-3,
        lr_scheduler_type="constant", use_cpu=True, bf16=False, report_to="none", save_strategy="no",
        logging_strategy="no", disable_tqdm=True, seed=seed, **{checkpointing_key(SFTConfig): False},
    )
    trainer = SFTTrainer(model=str(base_model_dir), args=args, train_dataset=Dataset.from_list(rows * 8))
    trainer.train()
    trainer.save_model(str(out))
    return out
