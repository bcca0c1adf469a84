"""A tiny causal LM and tokenizer built fully offline, saved like a Hub checkpoint.

Everything that takes a model path (`from_pretrained`, 4-bit loading, TRL trainers, the pipeline) is
exercised for real on it. The tokenizer is a byte-level BPE trained locally on a small corpus of the
texts the package deals with (arithmetic, R1 tags, code, a few languages) and carries a ChatML template
with `{% generation %}` markers, so SFT's assistant-only loss works. The R1 tags are single tokens
(ordinary, not special: decoding with `skip_special_tokens=True` keeps them).
"""

from __future__ import annotations

import os
from pathlib import Path

R1_TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_CHATML = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}"
    "{% else %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# A template that prefills the opening <think> after the assistant header (like DeepSeek-R1-Distill's).
_CHATML_THINK = _CHATML.replace(
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}",
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}",
)


def chat_template(prefill_think: bool = False) -> str:
    """The ChatML template of the tiny tokenizer (optionally prefilling ``<think>``)."""
    return _CHATML_THINK if prefill_think else _CHATML


def _corpus() -> list[str]:
    texts = []
    for a in range(0, 100, 3):
        for b in range(0, 100, 7):
            texts.append(f"What is {a} + {b}? <think>{a} plus {b} is {a + b}.</think> <answer>{a + b}</answer>")
            texts.append(f"Compute {a} - {b} = {a - b} and {a} * {b} = {a * b}. The answer is \\boxed{{{a * b}}}.")
    texts += [
        "user assistant system Think step by step, then give the final answer.",
        "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\nimport sys\nfor line in sys.stdin:\n    x = int(line)",
        "```python\nassert add(2, 3) == 5\n```",
        "The quick brown fox jumps over the lazy dog. Let me think about this problem carefully.",
        "Der schnelle braune Fuchs springt. Le renard brun rapide saute. El zorro marrón salta.",
        "我们来一步一步地思考这个问题。これは日本語の文章です。Быстрая коричневая лиса.",
        "\\frac{1}{2} \\sqrt{13} x^2 + y = 3, (1, -2), [0, \\infty)",
    ]
    return texts * 3


def build_tokenizer(vocab_size: int = 600, prefill_think: bool = False):
    """Train a byte-level BPE tokenizer locally and wrap it as a transformers tokenizer with a chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in R1_TAGS])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    hf.chat_template = chat_template(prefill_think)
    return hf


def build_tiny_model(
    output_dir: str | os.PathLike,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    vocab_size: int = 600,
    max_position_embeddings: int = 1024,
    prefill_think: bool = False,
    seed: int = 0,
    head_dim: int | None = None,
    pretrain: dict | None = None,
) -> Path:
    """Build a tiny Qwen2-architecture causal LM + tokenizer and save both to `output_dir`.

    Returns the directory, loadable with `AutoModelForCausalLM.from_pretrained` / `AutoTokenizer`.
    Building is deterministic for a given seed and takes about a second; an existing build is reused.
    `head_dim` defaults to hidden_size / num_heads. `pretrain` makes it a *base* model rather than a random one:
    a short causal-LM pass over `trl_r1.toy.arithmetic.base_corpus_dataset` (see `pretrain_base`; the dict
    holds its keyword arguments), what the R1-Zero recipe starts from.

    Example:
        >>> import tempfile
        >>> from transformers import AutoModelForCausalLM, AutoTokenizer
        >>> path = build_tiny_model(tempfile.mkdtemp())
        >>> tok = AutoTokenizer.from_pretrained(path)
        >>> tok.convert_ids_to_tokens(tok("<think>")["input_ids"])
        ['<think>']
        >>> AutoModelForCausalLM.from_pretrained(path).num_parameters() < 200_000
        True
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(output_dir)
    if (out / "config.json").exists() and (out / "tokenizer.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer(vocab_size=vocab_size, prefill_think=prefill_think)
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=max(1, num_heads // 2),
        head_dim=head_dim or hidden_size // num_heads,
        max_position_embeddings=max_position_embeddings, tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    if pretrain:
        model = pretrain_base(model, tok, seed=seed, **pretrain)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def pretrain_base(model, tokenizer, *, max_steps: int = 300, learning_rate: float = 2e-3, batch_size: int = 16,
                  lr_scheduler_type: str = "constant", seed: int = 0, **corpus_kwargs):
    """Train `model` on every token of the base corpus (prompt and solution alike, as pretraining does) with
    TRL's SFTTrainer, and return it. `corpus_kwargs` go to `base_corpus_dataset` (a decaying
    `lr_scheduler_type` such as cosine lets a corpus with noisy solutions settle)."""
    import tempfile

    from trl import SFTConfig, SFTTrainer

    from .arithmetic import base_corpus_dataset

    corpus_kwargs.setdefault("num_rows", max_steps * batch_size)
    corpus_kwargs.setdefault("sample_seed", seed)
    with tempfile.TemporaryDirectory() as tmp:
        args = SFTConfig(
            output_dir=tmp, max_steps=max_steps, per_device_train_batch_size=batch_size, learning_rate=learning_rate,
            lr_scheduler_type=lr_scheduler_type, use_cpu=True, bf16=False, report_to="none", save_strategy="no",
            logging_strategy="no", gradient_checkpointing=False, disable_tqdm=True, seed=seed, max_length=64,
        )
        trainer = SFTTrainer(model=model, args=args, processing_class=tokenizer,
                             train_dataset=base_corpus_dataset(**corpus_kwargs))
        trainer.train()
    return trainer.model


def main(argv: list[str] | None = None) -> int:
    """`trl-r1 tiny-model OUTPUT_DIR [--prefill-think]`: build the tiny model and print its path."""
    import argparse

    parser = argparse.ArgumentParser(prog="trl-r1 tiny-model", description=main.__doc__)
    parser.add_argument("output_dir")
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--prefill-think", action="store_true", help="chat template that prefills <think>")
    args = parser.parse_args(argv)
    print(build_tiny_model(args.output_dir, hidden_size=args.hidden_size, num_layers=args.num_layers,
                           prefill_think=args.prefill_think))
    return 0
