"""The tiny model after a few SFT steps on a toy arithmetic task: a real policy whose samples are sometimes right.

The random tiny model almost never writes a well-formed, correct R1 answer, so the dataset builders would
accept nothing. A short run of TRL's `SFTTrainer` on "What is a + b?" -> ``<think>a plus b is c.</think>
<answer>c</answer>`` teaches it the format and, partly, the sums: sampling it gives a mix of correct, wrong and
malformed answers, which is what rejection sampling and distillation have to sort out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# (a, b) pairs of the toy task: the first ones are trained on, all are prompts for the builders
TOY_PAIRS = [(2, 3), (4, 5), (7, 1), (6, 6), (9, 3), (8, 2), (5, 4), (1, 1), (3, 3), (2, 7), (6, 1), (8, 8)]
TRAINED_PAIRS = TOY_PAIRS[:8]


def toy_prompts(pairs: list[tuple[int, int]] = TOY_PAIRS) -> list[dict[str, Any]]:
    """Prompt rows: a conversational `prompt` and the gold `answer` (the columns the math reward reads)."""
    return [{"prompt": [{"role": "user", "content": f"What is {a} + {b}?"}], "answer": str(a + b)} for a, b in pairs]


def toy_trace(a: int, b: int) -> str:
    """The target completion for a + b."""
    return f"<think>{a} plus {b} is {a + b}.</think>\n<answer>{a + b}</answer>"


def build_toy_reasoner(output_dir: str | os.PathLike, base_model_dir: str | os.PathLike, steps: int = 100,
                       seed: int = 0) -> Path:
    """SFT `base_model_dir` (the tiny model) on the toy task with TRL and save it to `output_dir` (reused if built).

    About 10 s on one CPU core at the default 100 steps: enough for the format and some of the sums.
    """
    out = Path(output_dir)
    if (out / "config.json").exists():
        return out
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = [{"messages": [*p["prompt"], {"role": "assistant", "content": toy_trace(a, b)}]}
            for p, (a, b) in zip(toy_prompts(TRAINED_PAIRS), TRAINED_PAIRS)]
    args = SFTConfig(
        output_dir=str(out / "_trainer"), max_steps=steps, per_device_train_batch_size=16, learning_rate=3e-3,
        lr_scheduler_type="constant", use_cpu=True, bf16=False, report_to="none", save_strategy="no",
        activation_checkpointing=False, disable_tqdm=True, seed=seed,
    )
    trainer = SFTTrainer(model=str(base_model_dir), args=args, train_dataset=Dataset.from_list(rows * 8))
    trainer.train()
    trainer.save_model(str(out))
    return out
