"""Chat-template checks, so that a template which prefills ``<think>`` cannot silently zero the format reward.

DeepSeek-R1-Distill and Qwen3 (thinking mode) templates end the generation prompt with ``<think>``: the model
never generates the opening tag, so a reward that looks for it scores 0 for every sample (open-r1 #560,
trl#6966). Some templates also drop the reasoning of assistant turns when rendering a conversation, which
silently removes the chain of thought from SFT targets. Both are detected by rendering a probe conversation.

SFT with ``assistant_only_loss`` needs a template whose assistant turns sit inside ``{% generation %}`` markers.
TRL 1.16 swaps in its training versions of the templates it knows (Qwen2.5, Qwen3, Llama-3 ...) but has none for
Llama-3.2's: `training_chat_template` supplies it, and a template nobody can patch is a recipe error.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..verifiers.format import THINK_OPEN, prompt_prefills_think

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
    from trl import SFTConfig

logger = logging.getLogger("trl_r1.pipeline")

_PROBE_REASONING = "probe reasoning 7 plus 5"


@dataclass(frozen=True)
class TemplateReport:
    """What a tokenizer's chat template does to R1-style text."""

    prefills_think: bool  # the generation prompt ends with <think>
    keeps_reasoning: bool  # an assistant turn's <think> block survives rendering (needed for SFT on CoT)
    generation_prompt: str  # the tail of the rendered generation prompt, for messages
    training_template_error: str | None = None  # why assistant_only_loss cannot mask this template (None: it can)


def inspect_chat_template(tokenizer: PreTrainedTokenizerBase) -> TemplateReport:
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
    try:
        training_chat_template(tokenizer)
        error = None
    except ValueError as exc:
        error = str(exc)
    return TemplateReport(prefills_think=prompt_prefills_think(prompt),
                          keeps_reasoning=_PROBE_REASONING in conversation, generation_prompt=prompt[-40:],
                          training_template_error=error)


# Llama-3.2's template renders every turn with this one line; TRL 1.16 patches Llama-3's but not this one.
_LLAMA32_TURN = ("{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] "
                 "| trim + '<|eot_id|>' }}")
_LLAMA32_TRAINING_TURN = (
    "{%- if message.role == 'assistant' %}\n"
    "            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    "            {%- generation %}{{- message['content'] | trim + '<|eot_id|>' }}{%- endgeneration %}\n"
    "        {%- else %}\n            " + _LLAMA32_TURN + "\n        {%- endif %}")


def own_training_template(chat_template: str | None) -> str | None:
    """trl-r1's training version of a template TRL 1.16 cannot patch, else None.

    Llama-3.2's: assistant turns wrap their content and ``<|eot_id|>`` in generation markers (the change TRL makes
    to Llama-3's template); every conversation renders exactly as with the original.
    """
    from .trl_compat import llama3_2_chat_template

    if chat_template != llama3_2_chat_template or chat_template.count(_LLAMA32_TURN) != 1:
        return None
    return chat_template.replace(_LLAMA32_TURN, _LLAMA32_TRAINING_TURN)


def training_chat_template(tokenizer: PreTrainedTokenizerBase) -> str:
    """The template `SFTConfig(assistant_only_loss=True)` masks with: the tokenizer's own when it has generation
    markers, trl-r1's (`own_training_template`), or TRL's training version; a ValueError saying why otherwise.

    >>> from trl_r1.toy import build_tokenizer
    >>> tok = build_tokenizer()
    >>> "{% generation %}" in training_chat_template(tok)
    True
    >>> tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    >>> training_chat_template(tok)
    Traceback (most recent call last):
    ...
    ValueError: the chat template has no {% generation %} markers and neither TRL 1.16 nor trl-r1 has a training version of it
    """
    from .trl_compat import get_training_chat_template, has_generation_markers

    original = tokenizer.chat_template
    own = own_training_template(original)
    if own is not None:
        return own
    if original and has_generation_markers(original):
        return original
    try:
        return get_training_chat_template(tokenizer) or original
    except ValueError:
        raise ValueError("the chat template has no {% generation %} markers and neither TRL 1.16 nor trl-r1 has a "
                         "training version of it") from None


def prepare_assistant_only_loss(config: SFTConfig, model_path: str, directory: Path) -> None:
    """Point an SFT config with `assistant_only_loss` at trl-r1's training template when TRL would find none.

    Runs on every rank before the trainer is built: writes ``<directory>/training_chat_template.jinja`` (atomically,
    the same text on every rank) and sets `config.chat_template_path`. A recipe's own `chat_template_path` wins.
    """
    if not getattr(config, "assistant_only_loss", False) or config.chat_template_path is not None:
        return
    from transformers import AutoTokenizer

    own = own_training_template(AutoTokenizer.from_pretrained(model_path).chat_template)
    if own is None:  # TRL's SFTTrainer swaps in its own training template (or the template has the markers)
        return
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "training_chat_template.jinja"
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(own, encoding="utf-8")
    os.replace(partial, path)
    config.chat_template_path = str(path)


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


def template_problems(report: TemplateReport, *, sft_stages: list[str],
                      assistant_only_stages: list[str] = ()) -> list[str]:
    """Problems that would silently ruin a run (errors, raised before any work), and log the benign findings.

    `assistant_only_stages`: the SFT stages that set `assistant_only_loss` without their own `chat_template_path`.

    >>> report = TemplateReport(False, True, "", training_template_error="no markers")
    >>> template_problems(report, sft_stages=["cold_start"], assistant_only_stages=["cold_start"])
    ["cold_start: key 'assistant_only_loss': no markers; set chat_template_path to a .jinja template whose assistant turns are inside {% generation %} ... {% endgeneration %}, or assistant_only_loss: false"]
    """
    problems = []
    if report.training_template_error:
        for stage in assistant_only_stages:
            problems.append(f"{stage}: key 'assistant_only_loss': {report.training_template_error}; set "
                            "chat_template_path to a .jinja template whose assistant turns are inside "
                            "{% generation %} ... {% endgeneration %}, or assistant_only_loss: false")
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
