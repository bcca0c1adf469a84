"""Chat-template checks, so that a template which prefills ``<think>`` cannot silently zero the format reward.

DeepSeek-R1-Distill and Qwen3 (thinking mode) templates end the generation prompt with ``<think>``: the model
never generates the opening tag, so a reward that looks for it scores 0 for every sample (open-r1 #560,
trl#6966). Some templates also drop the reasoning of assistant turns when rendering a conversation, which
silently removes the chain of thought from SFT targets. Both are detected by rendering a probe conversation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..verifiers.format import THINK_OPEN, prompt_prefills_think

logger = logging.getLogger("trl_r1.pipeline")

_PROBE_REASONING = "probe reasoning 7 plus 5"


@dataclass(frozen=True)
class TemplateReport:
    """What a tokenizer's chat template does to R1-style text."""

    prefills_think: bool  # the generation prompt ends with <think>
    keeps_reasoning: bool  # an assistant turn's <think> block survives rendering (needed for SFT on CoT)
    generation_prompt: str  # the tail of the rendered generation prompt, for messages


def inspect_chat_template(tokenizer: Any) -> TemplateReport:
    """Render a probe conversation with `tokenizer`'s chat template.

    >>> from trl_r1.toy import build_tokenizer
    >>> inspect_chat_template(build_tokenizer(prefill_think=True)).prefills_think
    True
    >>> inspect_chat_template(build_tokenizer()).keeps_reasoning
    True
    """
    user = [{"role": "user", "content": "What is 7 + 5?"}]
    prompt = tokenizer.apply_chat_template(user, add_generation_prompt=True, tokenize=False)
    answer = {"role": "assistant", "content": f"{THINK_OPEN}{_PROBE_REASONING}</think>\n<answer>12</answer>"}
    conversation = tokenizer.apply_chat_template([*user, answer], tokenize=False)
    return TemplateReport(prefills_think=prompt_prefills_think(prompt),
                          keeps_reasoning=_PROBE_REASONING in conversation, generation_prompt=prompt[-40:])


def adapt_rewards(rewards: list[Any], report: TemplateReport) -> list[Any]:
    """Reward entries with ``think_prefilled: true`` added to the rewards that take it (they declare
    `think_prefill_option`) when the template prefills ``<think>``.

    An explicit ``think_prefilled`` in an entry is kept (the user decided).

    >>> report = TemplateReport(prefills_think=True, keeps_reasoning=True, generation_prompt="")
    >>> adapt_rewards(["format", "math", {"name": "soft_format", "weight": 0.5}], report)
    [{'name': 'format', 'think_prefilled': True}, 'math', {'name': 'soft_format', 'weight': 0.5, 'think_prefilled': True}]
    """
    if not report.prefills_think:
        return list(rewards)
    from ..rewards import reward_declares

    adapted = []
    for entry in rewards:
        if reward_declares(entry, "think_prefill_option"):
            entry = {"name": entry} if isinstance(entry, str) else dict(entry)
            entry.setdefault("think_prefilled", True)
        adapted.append(entry)
    return adapted


def template_problems(report: TemplateReport, *, sft_stages: list[str]) -> list[str]:
    """Problems that would silently ruin a run (errors, raised before any work), and log the benign findings."""
    problems = []
    if report.prefills_think:
        logger.warning("The chat template prefills %r (generation prompt ends %r): completions start inside the "
                       "reasoning, so format rewards are told think_prefilled=True.", THINK_OPEN,
                       report.generation_prompt)
        if sft_stages:
            logger.warning("SFT stages %s train on assistant turns that start with %r while generation prompts "
                           "already end with it: check that the model does not learn to write it twice (see "
                           "docs/troubleshooting.md).", sft_stages, THINK_OPEN)
    if not report.keeps_reasoning:
        for stage in sft_stages:
            problems.append(f"{stage}: the chat template drops the <think> reasoning of assistant turns, so SFT "
                            "would train on answers without their chain of thought; set chat_template_path to a "
                            "template that keeps it")
    return problems
