"""The recipes' real model shapes offline: true configs, real special ids, original chat templates, exercised
by SFT (assistant-only loss masks exactly the assistant turns) and by generation (the end-of-turn token stops it).
"""

import pytest
import torch

from trl_r1.rehearsal.models import (
    MODELS,
    build_config,
    build_tokenizer,
    model_spec,
    num_parameters,
)

FAMILIES = ["Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen3-1.7B", "meta-llama/Llama-3.2-1B-Instruct"]
# Parameter counts published on the model cards (billions).
CARD_PARAMS = {"Qwen/Qwen2.5-0.5B-Instruct": 0.49, "Qwen/Qwen2.5-1.5B-Instruct": 1.54,
               "Qwen/Qwen2.5-3B-Instruct": 3.09, "Qwen/Qwen2.5-7B-Instruct": 7.61, "Qwen/Qwen3-1.7B": 1.7,
               "Qwen/Qwen3-4B": 4.0, "Qwen/Qwen3-8B": 8.2, "meta-llama/Llama-3.2-1B-Instruct": 1.23,
               "meta-llama/Llama-3.2-3B-Instruct": 3.21}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_config_matches_the_published_parameter_count(name):
    assert num_parameters(name) / 1e9 == pytest.approx(CARD_PARAMS[name], rel=0.02)
    config = build_config(name, "full")
    assert config.num_hidden_layers == model_spec(name).config["num_hidden_layers"]
    assert build_config(name, "smoke").num_hidden_layers == 2
    assert build_config(name, "smoke").hidden_size == config.hidden_size
    with torch.device("meta"):  # the real architecture instantiates with these numbers (no memory used)
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == num_parameters(name)


@pytest.fixture(scope="module", params=FAMILIES)
def tokenizer(request):
    return request.param, build_tokenizer(request.param)


def test_special_tokens_have_their_real_ids(tokenizer):
    name, tok = tokenizer
    spec = model_spec(name)
    for token_id, token, _ in spec.special_tokens:
        assert tok.convert_tokens_to_ids(token) == token_id
    assert tok.eos_token_id == spec.eos_token_id
    assert len(tok) <= spec.config["vocab_size"]
    if spec.family == "llama3.2":
        assert len(tok) == 128256 and tok.bos_token_id == 128000 and tok.eos_token == "<|eot_id|>"
        assert tok.pad_token is None  # Llama-3.2 ships no pad token
    else:
        assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>" and tok.bos_token is None
        assert tok("Hello world")["input_ids"] == [9707, 1879]  # Qwen's real BPE ids
        assert tok.decode(tok("Ünïcödé 你好 ∑ x²")["input_ids"]) == "Ünïcödé 你好 ∑ x²"


def test_chat_templates_render_like_the_real_ones(tokenizer):
    name, tok = tokenizer
    user = [{"role": "user", "content": "What is 2+2?"}]
    prompt = tok.apply_chat_template(user, add_generation_prompt=True, tokenize=False)
    family = model_spec(name).family
    if family == "qwen2.5":
        assert prompt == ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
                          "<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")
    elif family == "qwen3":
        assert prompt == "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"  # thinking: not prefilled
        off = tok.apply_chat_template(user, add_generation_prompt=True, tokenize=False, enable_thinking=False)
        assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    else:
        assert prompt.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                                 "Cutting Knowledge Date: December 2023\nToday Date: ")
        assert prompt.endswith("<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                               "<|start_header_id|>assistant<|end_header_id|>\n\n")


def _trained_spans(tok, row) -> list[str]:
    """The decoded runs of consecutive tokens that carry a label (the rest is -100)."""
    spans, current = [], []
    for token, label in zip(row["input_ids"], row["labels"]):
        if label != -100:
            current.append(token)
        elif current:
            spans.append(tok.decode(current))
            current = []
    return spans + ([tok.decode(current)] if current else [])


# The real-model runs are the full tier's (`slow`), but for Llama-3.2's SFT: the one family that trains through
# trl-r1's own training template (the fast tier's smoke run covers Qwen2.5's real shape end to end).
LLAMA = "meta-llama/Llama-3.2-1B-Instruct"
SFT_FAMILIES = [pytest.param(name, marks=[] if name == LLAMA else [pytest.mark.slow]) for name in FAMILIES]


@pytest.mark.parametrize("name", SFT_FAMILIES)
def test_sft_assistant_only_loss_masks_exactly_the_assistant_turns(name, smoke_model, tmp_path):
    """What a recipe with `assistant_only_loss: true` gets (no chat_template_path): the loss covers each assistant
    turn's text and its end-of-turn token, and nothing else (Llama-3.2 through trl-r1's training template)."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from trl_r1.trainers.chat_templates import prepare_assistant_only_loss

    model_dir = smoke_model(name)
    tok = AutoTokenizer.from_pretrained(model_dir)
    reasoning = "<think>\nfirst\n</think>\n\nalpha"
    turns = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say alpha."},
             {"role": "assistant", "content": reasoning}, {"role": "user", "content": "Say omega."},
             {"role": "assistant", "content": "omega"}]
    args = SFTConfig(output_dir=str(tmp_path / "out"), assistant_only_loss=True, max_steps=1, use_cpu=True,
                     bf16=False, report_to="none", per_device_train_batch_size=1, save_strategy="no",
                     disable_tqdm=True)
    prepare_assistant_only_loss(args, str(model_dir), tmp_path / "out")
    family = model_spec(name).family
    assert (args.chat_template_path is not None) == (family == "llama3.2")  # TRL 1.16 patches Qwen's itself
    if args.chat_template_path:  # trl-r1's training template renders exactly like the original
        training = open(args.chat_template_path).read()
        for kwargs in ({"conversation": turns}, {"conversation": turns[:2], "add_generation_prompt": True}):
            assert (tok.apply_chat_template(**kwargs, tokenize=False, chat_template=training)
                    == tok.apply_chat_template(**kwargs, tokenize=False))
    trainer = SFTTrainer(model=str(model_dir), args=args, train_dataset=Dataset.from_list([{"messages": turns}]))
    spans = _trained_spans(tok, trainer.train_dataset[0])
    # Qwen3 renders the latest turn with its empty think block; TRL's Qwen training templates also count the
    # newlines that frame a ChatML turn (after "assistant", after <|im_end|>) as the assistant's.
    second = "<think>\n\n</think>\n\nomega" if family == "qwen3" else "omega"
    assert [span.strip("\n") for span in spans] == [reasoning + tok.eos_token, second + tok.eos_token]
    assert all(span.strip("\n") == span for span in spans) == (family == "llama3.2")
    loss = trainer.train().training_loss
    assert 0 < loss < 100


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_generation_stops_at_the_end_of_turn_token(name, smoke_model):
    from trl_r1.data.generation import SamplingParams, TransformersGenerator
    from trl_r1.pipeline.smoke import MATH_ANSWER

    generator = TransformersGenerator(str(smoke_model(name)))
    prompt = [{"role": "user", "content": "What is $3 + 4$?"}]
    [samples] = generator.generate([prompt], SamplingParams(num_samples=2, max_new_tokens=64, temperature=0.6), 0)
    for sample in samples:
        assert sample.finish_reason == "stop" and sample.num_tokens < 64
        assert sample.content == MATH_ANSWER  # the end-of-turn token stopped it and is not part of the text


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_the_real_widths_train_a_qlora_step(name, tmp_path):
    """The `smoke` size (the real config, 2 layers: real hidden size, head_dim, query/KV heads, vocabulary) loads
    in 4 bit and trains LoRA on every linear layer with gradient checkpointing, on a chat-templated turn; the
    recipes' smoke runs use the narrower `ci` size."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    from trl_r1.rehearsal.models import build_model

    config = build_config(name, "smoke")
    model_dir = build_model(name, tmp_path, size="smoke")
    quantized = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                   bnb_4bit_compute_dtype=torch.float32)
    model = AutoModelForCausalLM.from_pretrained(model_dir, quantization_config=quantized, dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    model.gradient_checkpointing_enable()
    model.enable_input_require_grads()
    attention = model.base_model.model.model.layers[0].self_attn
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    assert type(attention.q_proj.base_layer).__name__ == "Linear4bit"
    assert attention.q_proj.base_layer.in_features == config.hidden_size
    assert attention.q_proj.base_layer.out_features == config.num_attention_heads * head_dim
    assert attention.k_proj.base_layer.out_features == config.num_key_value_heads * head_dim
    tok = AutoTokenizer.from_pretrained(model_dir)
    turn = [{"role": "user", "content": "What is 3 + 4?"},
            {"role": "assistant", "content": "<think>3 + 4 is 7.</think>\n<answer>7</answer>"}]
    batch = tok.apply_chat_template(turn, return_tensors="pt", return_dict=True)
    loss = model(**batch, labels=batch["input_ids"]).loss
    loss.backward()
    assert torch.isfinite(loss) and abs(loss.item() - torch.log(torch.tensor(float(config.vocab_size)))) < 2
    lora_grads = [p.grad for n, p in model.named_parameters() if "lora_" in n and p.grad is not None]
    assert lora_grads and any(g.abs().sum() > 0 for g in lora_grads)
