"""The TRL seam: it refuses an unsupported TRL version with a clear message, and it is the only module that touches
TRL's private API (its numerical contract is the parity tests in test_grpo_trainer.py)."""

import re
from pathlib import Path

import pytest
import trl

from trl_r1.trainers import trl_compat

PACKAGE = Path(trl_compat.__file__).resolve().parents[1]
# Private members of TRL's GRPOTrainer / transformers' Trainer that trl_r1 relies on (used, or set in a class body
# as TRL's model-card attributes are), the private parameter of `Trainer.save_model`, and TRL's private modules.
MODEL_CARD = r"_(tag_names|name|paper|template_file)\b"
PRIVATE = re.compile(
    r"\._(metrics|logs|is_vlm|calculate_rewards|generate_and_score_completions|compute_loss|get_per_token_logps"
    r"|save_checkpoint|load_from_checkpoint|load_optimizer_and_scheduler|get_output_dir|keys_to_ignore_on_save"
    r"|name_or_path)\b|current_gradient_accumulation_steps|trl\.(trainer|models|scripts)\.utils"
    r"|chat_template_utils|[\"']chat_templates[\"']"
    rf"|\.{MODEL_CARD}|^[ \t]+{MODEL_CARD}\s*[:=]|[\"']{MODEL_CARD}[\"']|\b_internal_call\b",
    re.MULTILINE,
)
TRAINER_BETA = re.compile(r"self\.beta\b")  # the trainer's KL switch (a config's `beta` is a public field)


@pytest.mark.parametrize("version", ["1.15.2", "1.17.0", "2.0.0"])
def test_unsupported_trl_versions_are_refused_with_the_supported_range(version):
    with pytest.raises(ImportError, match=rf"supports trl>=1\.16\.0,<1\.17\.0 \(found {re.escape(version)}\).*pip install"):
        trl_compat.check_trl_version(version)


def test_the_installed_trl_is_supported():
    trl_compat.check_trl_version(trl.__version__)


def test_only_the_seam_touches_trl_private_members():
    def private_uses(path):
        found = {m.group(0) for m in PRIVATE.finditer(path.read_text())}
        if path.name.endswith("_trainer.py"):
            found |= {m.group(0) for m in TRAINER_BETA.finditer(path.read_text())}
        return sorted(found)

    offenders = {
        str(path.relative_to(PACKAGE)): private_uses(path)
        for path in PACKAGE.rglob("*.py")  # the whole package: the pipeline and builders go through the seam too
        if path.name != "trl_compat.py"
    }
    assert {path: found for path, found in offenders.items() if found} == {}
    assert PRIVATE.search(Path(trl_compat.__file__).read_text())  # the pattern does find them where they are


# ----- vLLM: the LoRA policy pushed unmerged, or transformers generation with the reason (tests/vllm_engine runs
# the engine itself)


def test_vllm_serves_plain_lora_adapters_only():
    from peft import IA3Config, LoraConfig

    plain = LoraConfig(r=16, target_modules="all-linear")
    assert trl_compat.lora_unservable_reason(plain) is None
    assert "DoRA" in trl_compat.lora_unservable_reason(LoraConfig(r=8, use_dora=True))
    assert "modules_to_save" in trl_compat.lora_unservable_reason(LoraConfig(r=8, modules_to_save=["lm_head"]))
    assert "bias" in trl_compat.lora_unservable_reason(LoraConfig(r=8, bias="all"))
    assert "up to 512" in trl_compat.lora_unservable_reason(LoraConfig(r=1024))
    assert "not LoRA" in trl_compat.lora_unservable_reason(IA3Config())
    for module in ("lm_head", "embed_tokens"):  # vLLM refuses these at the first load ("expected target modules")
        assert module in trl_compat.lora_unservable_reason(LoraConfig(r=8, target_modules=["q_proj", module]))
        assert module in trl_compat.lora_unservable_reason(LoraConfig(r=8, target_modules=f".*({module}|v_proj)"))


def test_a_4bit_policy_in_vllm_server_mode_generates_with_transformers_saying_why(tmp_path):
    from transformers import BitsAndBytesConfig

    from trl_r1.trainers import R1GRPOConfig

    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", use_vllm=True, vllm_mode="server")
    qlora = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)
    choice, reason = trl_compat.vllm_generation_choice("some/model", args, None, qlora)
    assert choice == "transformers" and "server mode" in reason and "colocate" in reason
    assert trl_compat.vllm_generation_choice("some/model", args) == ("trl", None)  # a 16-bit base: TRL's own push
    with pytest.raises(ValueError, match="vllm_lora_sync='adapter' is not one of"):
        R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", vllm_lora_sync="adapter")


def test_without_vllm_a_qlora_grpo_run_asking_for_it_stops_or_falls_back_as_vllm_fallback_says(tmp_path, caplog,
                                                                                                  monkeypatch):
    """Issue 34: without `vllm_fallback: transformers` the trainer stops before loading the model, naming the key;
    with it, it trains with transformers and says why."""
    import logging

    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import BitsAndBytesConfig

    from trl_r1.data.generation import is_vllm_available
    from trl_r1.toy import build_tiny_model
    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    if is_vllm_available():
        pytest.skip("vLLM is installed: tests/vllm_engine covers this machine")
    model_dir = str(build_tiny_model(tmp_path / "tiny"))
    args = R1GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none", max_steps=1,
                        per_device_train_batch_size=4, num_generations=4, max_completion_length=8,
                        save_strategy="no", use_vllm=True, vllm_mode="colocate")
    prompts = Dataset.from_list([{"prompt": [{"role": "user", "content": f"{a}+1?"}]} for a in range(4)])
    qlora = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.float32, bnb_4bit_quant_type="nf4",
                               bnb_4bit_use_double_quant=True)  # what vLLM serves: only the missing vLLM refuses
    build = dict(model=model_dir, reward_funcs=lambda completions, **kw: [float(len(c[0]["content"])) for c in completions],
                 train_dataset=prompts, peft_config=LoraConfig(r=4, target_modules="all-linear"),
                 quantization_config=qlora)
    import trl.trainer.grpo_trainer as grpo_trainer

    loaded = []
    monkeypatch.setattr(grpo_trainer, "create_model_from_path", lambda *a, **k: loaded.append(a))  # TRL's loader
    with pytest.raises(ValueError, match="vLLM is not installed.*vllm_fallback='transformers'"):
        R1GRPOTrainer(args=args, **build)
    assert loaded == [] and args.use_vllm  # stopped before any model loaded
    monkeypatch.undo()
    args.vllm_fallback = "transformers"
    with caplog.at_level(logging.WARNING, logger="trl_r1.trainers"):
        trainer = R1GRPOTrainer(args=args, **build)
    assert "R1GRPOTrainer: generating with transformers, not vLLM: vLLM is not installed" in caplog.text
    assert (trainer.generation_backend, trainer.use_vllm) == ("transformers", False)
    trainer.train()
    assert trainer.state.global_step == 1


def test_a_prompt_ending_with_an_assistant_prefill_is_continued_not_followed_by_a_new_turn(tmp_path, tiny_model_dir):
    """TRL 1.16's GRPOTrainer renders conversational prompts with a generation prompt whatever their last role; the
    seam renders a final assistant message (R1-Zero's `<think>` prefill) so that the model continues it, and the
    format reward, seeing the prefill, scores the completion as if the model had written `<think>`."""
    from datasets import Dataset
    from transformers import AutoTokenizer

    from trl_r1.rewards import FormatReward
    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    seen = {}

    def record(prompts, completions, **kwargs):
        seen["prompts"], seen["completions"] = prompts, completions
        return [0.0] * len(completions)

    rows = [{"prompt": [{"role": "user", "content": f"What is {a} + 1?"}, {"role": "assistant", "content": "<think>"}]}
            for a in range(4)]
    args = R1GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none", max_steps=1,
                        per_device_train_batch_size=4, num_generations=4, max_completion_length=8,
                        save_strategy="no")
    trainer = R1GRPOTrainer(model=tiny_model_dir, reward_funcs=[record, FormatReward()], args=args,
                            train_dataset=Dataset.from_list(rows))
    trainer.train()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompt = seen["prompts"][0]
    row = next(r for r in rows if r["prompt"][0]["content"] in prompt)
    user_turn = tokenizer.apply_chat_template(row["prompt"][:1], tokenize=False, add_generation_prompt=True)
    assert prompt == user_turn + "<think>"  # the prefill continued: no end of turn, no second assistant turn
    # the format reward reads the prefill: "</think><answer>1</answer>" after it is the whole R1 format
    assert FormatReward()(prompts=[prompt, prompt], completions=["1</think><answer>1</answer>", "1"]) == [1.0, 0.0]
    # prompts without a prefill stay conversational (TRL renders them itself)
    plain = Dataset.from_list([{"prompt": row["prompt"][:1]} for row in rows])
    trainer = R1GRPOTrainer(model=tiny_model_dir, reward_funcs=record, args=args, train_dataset=plain)
    assert trainer.train_dataset[0]["prompt"] == rows[0]["prompt"][:1]


@pytest.mark.parametrize("features, named", [
    ({"init_lora_weights": "pissa"}, "init_lora_weights='pissa'"),
    ({"init_lora_weights": "olora"}, "init_lora_weights='olora'"),
    ({"init_lora_weights": "corda"}, "init_lora_weights='corda'"),
    ({"init_lora_weights": "loftq", "loftq_config": {"loftq_bits": 4, "loftq_iter": 1}}, "init_lora_weights='loftq'"),
    ({"layer_replication": [[0, 2], [1, 2]]}, "layer replication"),
    ({"alora_invocation_tokens": [5, 6]}, "aLoRA"),
    ({"use_qalora": True}, "QALoRA"),
    ({"use_bdlora": {"target_modules_bd_a": ["q_proj"], "nblocks": 2}}, "BD-LoRA"),
    ({"rank_pattern": {"q_proj": 32}}, "one scale"),
    ({"alpha_pattern": {"v_proj": 64}}, "one scale"),
])
def test_adapter_features_vllm_serves_differently_from_peft_are_refused_naming_the_feature(features, named):
    """vLLM 0.22-0.27 load these adapters without an error and serve another model (one alpha/r scale, the
    original base); the refusal makes the trainers and `auto` generate with transformers, and `backend: vllm`
    stop."""
    from peft import LoraConfig

    reason = trl_compat.lora_unservable_reason(LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                                          **features))
    assert reason is not None and named in reason


def test_a_rank_pattern_with_one_scale_for_every_module_is_served():
    """A pattern keeping alpha / r the same everywhere gives vLLM's one global scale: nothing to refuse."""
    from peft import LoraConfig

    same_scale = LoraConfig(r=8, lora_alpha=16, rank_pattern={"q_proj": 16}, alpha_pattern={"q_proj": 32},
                            target_modules=["q_proj", "v_proj"])
    assert trl_compat.lora_unservable_reason(same_scale) is None
    for init in (True, "gaussian", "eva", "orthogonal"):  # inits that leave the base as it is
        assert trl_compat.lora_unservable_reason(LoraConfig(r=8, init_lora_weights=init)) is None


@pytest.mark.parametrize("quantization, fix", [
    ({"load_in_8bit": True}, "load_in_8bit: false"),
    ({"load_in_4bit": True, "bnb_4bit_quant_type": "fp4", "bnb_4bit_use_double_quant": True},
     "bnb_4bit_quant_type: nf4"),
    ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": False},
     "use_bnb_nested_quant: true"),
])
def test_a_base_vllm_would_quantize_differently_generates_with_transformers_naming_the_fix(tmp_path, quantization,
                                                                                          fix):
    """TRL would stop at start-up on an 8-bit base; vLLM's in-flight 4-bit is NF4 with double quantization only."""
    from transformers import BitsAndBytesConfig

    from trl_r1.trainers import R1GRPOConfig

    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", use_vllm=True, vllm_mode="server")
    choice, reason = trl_compat.vllm_generation_choice("some/model", args, None, BitsAndBytesConfig(**quantization))
    assert choice == "transformers" and fix in reason


def test_the_colocated_engine_seed_follows_the_run_seed():
    """TRL seeds the colocated engine with the rank alone; two runs with different seeds get different streams,
    the ranks of one run keep TRL's offset."""
    seeds = {trl_compat.engine_seed(run, rank) for run in (0, 1, 42) for rank in (0, 1, 7)}
    assert len(seeds) == 9
    started = []
    trl_compat._SeededLLM(lambda **kwargs: started.append(kwargs), run_seed=42)(model="m", seed=1)
    assert started == [{"model": "m", "seed": trl_compat.engine_seed(42, 1)}]
