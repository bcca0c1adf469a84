"""`VLLMGenerator` on a real vLLM engine (CPU build): greedy output equal to the transformers backend, with and
without a LoRA adapter; a large sampled batch (the per-request-seed crash) reproducible from the engine seed; and the
`auto` backend falling back to transformers, with the reason logged, for what vLLM cannot serve."""

import gc
import logging

import pytest

from trl_r1.data.generation import (
    SamplingParams,
    TransformersGenerator,
    VLLMGenerator,
    load_generator,
    resolve_backend,
    vllm_unsupported_reason,
)
from trl_r1.toy.arithmetic import arithmetic_dataset
from trl_r1.toy.toy_reasoner import toy_prompts

from .conftest import ENGINE

GREEDY = SamplingParams(num_samples=1, max_new_tokens=32, temperature=0.0)


def _texts(groups):
    return [[c.content for c in group] for group in groups]


def _engine(model, seed=0, **kwargs):
    """One engine at a time: vLLM's in-process engines share global parallel state, set up by the newest one."""
    gc.collect()
    return VLLMGenerator(model, seed=seed, dtype="float32", **ENGINE, **kwargs)


def test_greedy_output_equals_the_transformers_backend(vllm_reasoner):
    prompts = list(toy_prompts()["prompt"])
    expected = TransformersGenerator(vllm_reasoner).generate(prompts, GREEDY, seed=0)
    engine = _engine(vllm_reasoner)
    out = engine.generate(prompts, GREEDY, seed=0)
    assert _texts(out) == _texts(expected)
    assert [[c.num_tokens for c in g] for g in out] == [[c.num_tokens for c in g] for g in expected]
    assert {c.finish_reason for g in out for c in g} <= {"stop", "length"}
    assert sum("<answer>" in c.content for g in out for c in g) >= 6  # the toy reasoner answers: real text compared
    assert engine.describe() == {"backend": "vllm", "model": vllm_reasoner, "adapter": None, "load_in_4bit": False}


def test_lora_adapter_greedy_output_equals_transformers_with_peft(vllm_reasoner, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(vllm_reasoner),
                           LoraConfig(r=8, lora_alpha=32, target_modules=["q_proj", "v_proj", "down_proj"],
                                      init_lora_weights=False))
    model.save_pretrained(tmp_path / "adapter")
    adapter = str(tmp_path / "adapter")
    prompts = list(toy_prompts()["prompt"])
    expected = TransformersGenerator(vllm_reasoner, adapter_path=adapter).generate(prompts, GREEDY, seed=0)
    out = _engine(vllm_reasoner, adapter_path=adapter).generate(prompts, GREEDY, seed=0)
    assert _texts(out) == _texts(expected)
    without = TransformersGenerator(vllm_reasoner).generate(prompts, GREEDY, seed=0)
    assert _texts(out) != _texts(without)  # the adapter changed the answers, and vLLM applied it


def test_large_sampled_batch_runs_and_is_reproducible_from_the_engine_seed(vllm_reasoner):
    # 32 prompts x 4 samples, more prompt tokens than one engine step takes: chunked prefill discards the token
    # sampled for a partly filled request and rewinds that request's RNG, which with a seed per request crashed
    # vLLM's CPU sampler (`CPU Generator does not use offset`). A small step budget gets there with short prompts.
    chunked = {"max_num_batched_tokens": 512}
    prompts = list(arithmetic_dataset("train").select(range(32))["prompt"])
    params = SamplingParams(num_samples=4, max_new_tokens=16, temperature=1.0)
    first = _texts(_engine(vllm_reasoner, seed=0, **chunked).generate(prompts, params, seed=0))
    assert [len(g) for g in first] == [4] * 32
    assert any(len(set(g)) > 1 for g in first)  # sampled, not greedy
    assert _texts(_engine(vllm_reasoner, seed=0, **chunked).generate(prompts, params, seed=0)) == first
    assert _texts(_engine(vllm_reasoner, seed=1, **chunked).generate(prompts, params, seed=0)) != first


def test_auto_picks_vllm_for_a_model_it_can_serve(vllm_reasoner):
    assert vllm_unsupported_reason(vllm_reasoner) is None
    assert resolve_backend("auto", model_name_or_path=vllm_reasoner) == "vllm"
    assert resolve_backend("auto") == "vllm"  # installed; no model to check


def test_auto_falls_back_to_transformers_with_the_reason(tiny_head_dim_16, vllm_reasoner, caplog):
    with caplog.at_level(logging.WARNING, logger="trl_r1.data"):
        generator = load_generator("auto", tiny_head_dim_16)
    assert isinstance(generator, TransformersGenerator)
    assert "head_dim >= 32" in caplog.text and "has 16" in caplog.text
    assert resolve_backend("auto", model_name_or_path=tiny_head_dim_16) == "transformers"
    assert "4-bit on CUDA only" in vllm_unsupported_reason(vllm_reasoner, load_in_4bit=True)
    caplog.clear()
    # an engine that does not start (here: a context longer than the model's) falls back too, with vLLM's error
    with caplog.at_level(logging.WARNING, logger="trl_r1.data"):
        generator = load_generator("auto", vllm_reasoner, vllm_kwargs={"max_model_len": 10**6})
    assert isinstance(generator, TransformersGenerator)
    assert "the vLLM engine did not start" in caplog.text and "max_model_len" in caplog.text
    with pytest.raises(Exception, match="max_model_len"):  # asked for by name, vLLM's error is raised
        load_generator("vllm", vllm_reasoner, vllm_kwargs={"max_model_len": 10**6})


@pytest.fixture(scope="module")
def tiny_head_dim_16(tmp_path_factory):
    from trl_r1.toy import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny16"), hidden_size=64, num_heads=4))


class _PromptsSeen:
    """The engine, with the prompts it was given kept for the test to read."""

    def __init__(self, llm):
        self.llm, self.prompts = llm, []

    def generate(self, prompts, *args, **kwargs):
        self.prompts += prompts
        return self.llm.generate(prompts, *args, **kwargs)


@pytest.fixture(scope="module")
def llama3_style_reasoner(vllm_reasoner, tmp_path_factory):
    """The toy reasoner with a Llama-3-style tokenizer: its template writes the BOS, and its tokenizer adds one to
    any text it encodes with special tokens (as Llama-3's does)."""
    import shutil

    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("llama3-style") / "model"
    shutil.copytree(vllm_reasoner, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.bos_token = "<|endoftext|>"
    tokenizer.add_bos_token = True
    tokenizer.chat_template = "{{ bos_token }}" + tokenizer.chat_template
    tokenizer.save_pretrained(folder)
    reloaded = AutoTokenizer.from_pretrained(folder)
    assert reloaded("2 + 2").input_ids[0] == reloaded.bos_token_id  # the double BOS would be real here
    return str(folder), reloaded.bos_token_id


def test_a_template_that_writes_the_bos_gets_one_bos_on_vllm_and_the_transformers_greedy_text(llama3_style_reasoner):
    model, bos = llama3_style_reasoner
    prompts = list(toy_prompts()["prompt"])[:4]
    expected = TransformersGenerator(model).generate(prompts, GREEDY, seed=0)
    engine = _engine(model)
    engine.llm = seen = _PromptsSeen(engine.llm)
    out = engine.generate(prompts, GREEDY, seed=0)
    ids = [p["prompt_token_ids"] for p in seen.prompts]
    assert all(p[0] == bos and p[1] != bos for p in ids)
    assert _texts(out) == _texts(expected)


def test_greedy_with_k_samples_gives_the_one_greedy_answer_k_times_as_transformers_does(vllm_reasoner):
    """vLLM refuses n > 1 with temperature 0 ('n must be 1 when using greedy sampling')."""
    prompts = list(toy_prompts()["prompt"])[:3]
    greedy_k = SamplingParams(num_samples=3, max_new_tokens=32, temperature=0.0)
    expected = TransformersGenerator(vllm_reasoner).generate(prompts, greedy_k, seed=0)
    out = _engine(vllm_reasoner).generate(prompts, greedy_k, seed=0)
    assert [len(g) for g in out] == [3, 3, 3] and _texts(out) == _texts(expected)
    assert all(len(set(group)) == 1 for group in _texts(out))
