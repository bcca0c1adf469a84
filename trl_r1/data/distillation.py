"""Distillation data (DeepSeek-R1 §2.4): a teacher's reasoning traces -> normalised ``<think>`` SFT dataset.

The teacher is an OpenAI-compatible endpoint (`base_url` + the served model name in `model_name_or_path`, e.g.
`vllm serve deepseek-ai/DeepSeek-R1`) or a local model run by the same generation layer. Traces arrive with the
reasoning in a separate `reasoning_content` field or inline in ``<think>`` tags (prefilled or not) and are
normalised to ``<think>reasoning</think>\\nanswer``. Verification against gold answers is optional (add `math`
or `code` to `rewards` when the dataset has them); R1's readability filters apply as in rejection sampling,
with the same resumable output (`sft.jsonl`, `prompt_stats.jsonl`, `stats.json`) and progress bar.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .rejection_sampling import (
    RejectionSamplingConfig,
    RejectionSamplingResult,
    build_sft_dataset,
    run_cli,
)


@dataclass
class DistillationConfig(RejectionSamplingConfig):
    """Distillation settings (`trl-r1 distill`): rejection sampling's, with a teacher's defaults.

    Defaults follow open-r1's teacher sampling (temperature 0.6, top-p 0.95, long generations) with one trace
    per prompt and no gold-answer check.
    """

    model_name_or_path: str = field(metadata={
        "help": "The teacher: the model name served at `base_url` (OpenAI-compatible endpoint), or a local path / "
                "Hub id generated with vLLM or transformers."})
    num_samples: int = field(default=1, metadata={"help": "Traces per prompt."})
    max_new_tokens: int = field(default=8192, metadata={
        "help": "Maximum tokens per trace (open-r1 uses up to 32k for R1); truncated traces are rejected."})
    temperature: float = field(default=0.6, metadata={"help": "Teacher sampling temperature (R1's recommended 0.6)."})
    top_p: float = field(default=0.95, metadata={"help": "Teacher nucleus sampling (R1's recommended 0.95)."})
    batch_size: int = field(default=32, metadata={
        "help": "Prompts per generation call; with a served teacher, the number of concurrent requests."})
    rewards: list[Any] = field(default_factory=list, metadata={
        "help": "Optional verification: rewards that must pass (e.g. [math] with a gold `answer` column, [code] "
                "with tests). Empty keeps every well-formed trace that passes the readability filters."})
    max_per_prompt: int | None = field(default=None, metadata={"help": "Keep at most this many traces per prompt "
                                                               "(None: all that pass)."})

    kind = "distillation"


def distill(config: DistillationConfig, dataset: Any = None) -> RejectionSamplingResult:
    """Build the distillation SFT dataset; resumes a run interrupted in `config.output_dir`. `dataset`
    overrides `config.dataset_name`."""
    return build_sft_dataset(config, dataset)


def main(argv: list[str] | None = None) -> int:
    """`trl-r1 distill --config x.yaml [--flag value]`."""
    return run_cli(DistillationConfig, argv, "trl-r1 distill")
