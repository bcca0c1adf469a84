"""Red team (issue 21): the LoRA adapter pushed to vLLM unmerged (`data.generation.VLLMAdapterSlot`,
`trainers/trl_compat.AdapterSyncVLLMGeneration`) and adapters served from disk (`load_generator`), on a real vLLM
engine (CPU build, float32, so PEFT's log-probs are matched within 1e-4).

Each test asserts the correct behaviour; `xfail(strict=True)` marks a finding that still fails. Held properties
stay as plain tests. What only a GPU can check (the 4-bit base in vLLM, sleep and wake at level 1) is not here.
"""

import logging
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict

LOGP_TOLERANCE = 1e-4  # float32 on both sides
MESSAGES = [[{"role": "user", "content": f"What is {a} + {b}?"}] for a in range(3) for b in range(2)]


def lora(**overrides):
    """A LoRA whose B is random (not PEFT's zeros), so the adapter changes the model from the start."""
    values = dict(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM", init_lora_weights=False)
    return LoraConfig(**{**values, **overrides})


def peft_model(model_dir, config, seed=0):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return get_peft_model(base, config).eval()


def prompt_ids(model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return [tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
            for m in MESSAGES]


def vllm_greedy(llm, prompts, lora_request):
    from vllm import SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=8, logprobs=0, ignore_eos=True)
    outputs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, lora_request=lora_request,
                           use_tqdm=False)
    tokens = [list(o.outputs[0].token_ids) for o in outputs]
    logps = [[next(iter(step.values())).logprob for step in o.outputs[0].logprobs] for o in outputs]
    return tokens, logps


@torch.no_grad()
def peft_logps(model, prompts, tokens):
    out = []
    for prompt, completion in zip(prompts, tokens):
        logits = model(input_ids=torch.tensor([prompt + completion])).logits[0, len(prompt) - 1:-1].float()
        out.append(torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion)[:, None])[:, 0].tolist())
    return out


def max_gap(a, b):
    return max(abs(x - y) for row_a, row_b in zip(a, b) for x, y in zip(row_a, row_b))


def assert_served_as_peft(llm, request, model, prompts):
    """vLLM with ``request`` gives PEFT's log-probs, and the adapter matters (the base gives others)."""
    tokens, served = vllm_greedy(llm, prompts, request)
    assert max_gap(served, peft_logps(model, prompts, tokens)) < LOGP_TOLERANCE
    with model.disable_adapter():
        assert max_gap(served, peft_logps(model, prompts, tokens)) > 100 * LOGP_TOLERANCE


@pytest.fixture(scope="module")
def engine(vllm_model_dir):
    """One LoRA-enabled engine as AdapterSyncVLLMGeneration starts it (max_loras=1), float32."""
    from vllm import LLM

    return LLM(model=vllm_model_dir, enable_lora=True, max_lora_rank=16, max_loras=1, enforce_eager=True,
               dtype="float32", max_model_len=256, seed=0)


@pytest.fixture(scope="module")
def slot(engine):
    from trl_r1.data.generation import VLLMAdapterSlot

    slot = VLLMAdapterSlot(engine, name="red-team")
    yield slot
    slot.close()


# ----- parity with PEFT for LoRA variants vLLM serves (pushed through the slot, as after an optimizer step) ----------

@pytest.mark.parametrize("config", [
    lora(r=16, lora_alpha=8, use_rslora=True),  # rank-stabilised: scale alpha/sqrt(r), not alpha/r
    lora(r=4, lora_alpha=32),  # alpha != r (and a rank below the engine's)
    lora(target_modules=["q_proj", "v_proj"]),  # a subset of a packed qkv projection
    lora(target_modules=["down_proj"], lora_dropout=0.1),  # dropout: off in evaluation, absent in vLLM
    lora(r=8, lora_alpha=16, rank_pattern={"q_proj": 16}, alpha_pattern={"q_proj": 32}),  # one alpha/r everywhere
], ids=["rslora", "alpha-ne-r", "qv-subset", "dropout", "rank-alpha-pattern-one-scale"])
def test_a_pushed_adapter_is_served_as_peft_computes_it(engine, slot, vllm_model_dir, config):
    model = peft_model(vllm_model_dir, config)
    request = slot.push(get_peft_model_state_dict(model), model.peft_config["default"])
    assert_served_as_peft(engine, request, model, prompt_ids(vllm_model_dir))


def test_per_module_scales_are_served_as_peft_computes_them_or_refused(engine, slot, vllm_model_dir):
    """rank_pattern/alpha_pattern with several alpha/r scales: vLLM before 0.32 applies one scale to every module
    and serves another model without an error, so trl-r1 refuses it there; from 0.32 on vLLM reads the patterns."""
    from trl_r1.trainers.trl_compat import lora_unservable_reason

    model = peft_model(vllm_model_dir, lora(r=8, lora_alpha=16, rank_pattern={"q_proj": 4},
                                            alpha_pattern={"o_proj": 64}))
    config = model.peft_config["default"]
    request = slot.push(get_peft_model_state_dict(model), config)
    prompts = prompt_ids(vllm_model_dir)
    if lora_unservable_reason(config) is None:
        assert_served_as_peft(engine, request, model, prompts)
    else:  # the refusal is needed: this vLLM serves the adapter wrongly
        assert "one scale" in lora_unservable_reason(config)
        tokens, served = vllm_greedy(engine, prompts, request)
        assert max_gap(served, peft_logps(model, prompts, tokens)) > 100 * LOGP_TOLERANCE


def test_each_push_replaces_the_last_in_vllm_and_on_tmpfs(engine, slot, vllm_model_dir):
    """Many pushes keep one version loaded and one folder on tmpfs (no memory or disk leak over a run)."""
    model = peft_model(vllm_model_dir, lora())
    for step in range(6):
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "lora_B" in name:
                    param.add_(0.01 * (step + 1))
        before = slot.request.lora_int_id if slot.request else 0
        request = slot.push(get_peft_model_state_dict(model), model.peft_config["default"])
        assert request.lora_int_id == before + 1
        assert engine.llm_engine.list_loras() == {request.lora_int_id}
        assert os.listdir(slot.root) == [f"v{slot.version}"]
    assert_served_as_peft(engine, slot.request, model, prompt_ids(vllm_model_dir))  # the newest, not an older one


@pytest.mark.parametrize("module", ["lm_head", "embed_tokens"])
def test_an_adapter_vllm_refuses_to_load_is_said_unservable(engine, slot, vllm_model_dir, module):
    from trl_r1.trainers.trl_compat import lora_unservable_reason

    model = peft_model(vllm_model_dir, lora(target_modules=["q_proj", module]))
    config = model.peft_config["default"]
    with pytest.raises(ValueError, match="expected target modules"):  # what the first sync meets
        slot.push(get_peft_model_state_dict(model), config)
    assert lora_unservable_reason(config) is not None


def test_a_lora_bias_adapter_is_refused_by_vllm_and_said_unservable(engine, slot, vllm_model_dir):
    """vLLM refuses LoRA biases at load (0.22-0.31: "unsupported LoRA weight") or in its check (0.32)."""
    from trl_r1.trainers.trl_compat import lora_unservable_reason

    model = peft_model(vllm_model_dir, lora(lora_bias=True))
    config = model.peft_config["default"]
    with pytest.raises(ValueError):
        slot.push(get_peft_model_state_dict(model), config)
    assert "lora_bias" in lora_unservable_reason(config)


def test_two_slots_on_one_engine_each_serve_their_own_adapter(engine, vllm_model_dir):
    from trl_r1.data.generation import VLLMAdapterSlot

    first, second = VLLMAdapterSlot(engine, name="first"), VLLMAdapterSlot(engine, name="second")
    model_a, model_b = peft_model(vllm_model_dir, lora(), seed=1), peft_model(vllm_model_dir, lora(), seed=2)
    try:
        first.push(get_peft_model_state_dict(model_a), model_a.peft_config["default"])
        request = second.push(get_peft_model_state_dict(model_b), model_b.peft_config["default"])
        assert_served_as_peft(engine, request, model_b, prompt_ids(vllm_model_dir))
    finally:
        for lora_id in engine.llm_engine.list_loras():  # leave the engine as the other tests expect it
            engine.llm_engine.remove_lora(lora_id)
        first.close(), second.close()


def test_two_slots_never_write_the_same_tmpfs_folder(engine):
    """Two runs at once (or two trainers in one process) each get their own scratch folder."""
    from trl_r1.data.generation import VLLMAdapterSlot, adapter_scratch_root

    a, b = VLLMAdapterSlot(engine), VLLMAdapterSlot(engine)
    try:
        assert a.root != b.root and os.path.dirname(a.root) == adapter_scratch_root()
    finally:
        a.close(), b.close()
    assert not os.path.exists(a.root) and not os.path.exists(b.root)


PUSH_THEN_END = textwrap.dedent('''
    """Push one adapter version to tmpfs from a slot held in a reference cycle (as a trainer holds it), then end:
    `exit` returns normally, `kill` dies as an OOM kill or a preemption does (no clean-up can run)."""
    import os, signal, sys, torch, types
    from peft import LoraConfig
    from trl_r1.data.generation import VLLMAdapterSlot

    class Engine:  # only the slot's files are under test: which engine loads them does not matter
        vllm_config = types.SimpleNamespace(lora_config=types.SimpleNamespace(lora_dtype=torch.float32))

        def add_lora(self, request): return True
        def remove_lora(self, lora_id): return True

    class LLM:
        llm_engine = Engine()

    class Trainer:
        pass

    trainer = Trainer()
    trainer.me, trainer.slot = trainer, VLLMAdapterSlot(LLM())
    trainer.slot.push({"base_model.model.lm_head.lora_A.weight": torch.ones(8, 64)}, LoraConfig(r=8))
    print(trainer.slot.root, flush=True)
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
''')


def push_then_end(tmp_path, mode):
    """Run PUSH_THEN_END; its slot's folder, checked to have existed."""
    script = tmp_path / "push_then_end.py"
    script.write_text(PUSH_THEN_END)
    done = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=300)
    assert done.returncode == (-signal.SIGKILL if mode == "kill" else 0), done.stderr[-2000:]
    return done.stdout.strip()


def test_a_run_that_ends_normally_leaves_no_adapter_folder_on_tmpfs(tmp_path):
    """Was: the folder was removed only by `__del__`, which does not run at exit for a slot still referenced, so
    every finished run left its last adapter version in RAM (tmpfs) until reboot."""
    folder = push_then_end(tmp_path, "exit")
    assert os.path.basename(folder).startswith("trl-r1-lora-")
    assert not os.path.exists(folder)


def test_an_adapter_folder_left_by_a_killed_run_is_cleared_by_the_next_run(engine, tmp_path):
    import shutil

    from trl_r1.data.generation import VLLMAdapterSlot

    orphan = push_then_end(tmp_path, "kill")
    assert os.path.isfile(os.path.join(orphan, "v1", "adapter_model.safetensors"))
    try:
        VLLMAdapterSlot(engine).close()  # the next run starts its slot
        assert not os.path.exists(orphan)
    finally:
        shutil.rmtree(orphan, ignore_errors=True)


# ----- which adapters vLLM is said to serve, against vLLM's own check ------------------------------------------------

def _vllm_refuses(config) -> bool:
    """Whether vLLM's loader refuses this adapter on an engine sized as trl-r1 sizes it."""
    from vllm.config.lora import LoRAConfig
    from vllm.lora.peft_helper import PEFTHelper

    from trl_r1.data.generation import vllm_lora_rank

    helper = PEFTHelper.from_dict(config.to_dict())
    try:
        helper.validate_legal(LoRAConfig(max_lora_rank=vllm_lora_rank(config.r), max_loras=1))
    except ValueError:
        return True
    return False


@pytest.mark.parametrize("config", [
    lora(use_dora=True),
    lora(bias="lora_only"),
    lora(modules_to_save=["lm_head"]),
    lora(),
    lora(use_rslora=True, r=16, lora_alpha=4),
], ids=["dora", "bias", "modules_to_save", "plain", "rslora"])
def test_lora_unservable_reason_agrees_with_vllms_own_check(config):
    from trl_r1.trainers.trl_compat import lora_unservable_reason

    reason = lora_unservable_reason(config)
    assert (reason is not None) == _vllm_refuses(config), reason


def test_an_adapter_whose_rank_pattern_goes_above_r_is_served_as_peft_computes_it(vllm_model_dir, tmp_path):
    """The engine's max_lora_rank fits the adapter's largest rank, not only r (was: sized from r, and vLLM refused
    the adapter at its first generation or push)."""
    from trl_r1.data.generation import load_generator
    from trl_r1.trainers.trl_compat import lora_max_rank

    config = lora(r=8, lora_alpha=16, rank_pattern={"q_proj": 32}, alpha_pattern={"q_proj": 64})  # one scale
    assert lora_max_rank(config) == 32  # what the trainer's engine is sized from
    model = peft_model(vllm_model_dir, config, seed=4)
    model.save_pretrained(str(tmp_path))
    generator = load_generator("vllm", vllm_model_dir, adapter_path=str(tmp_path),
                               vllm_kwargs={"dtype": "float32", "max_model_len": 256})
    assert_served_as_peft(generator.llm, generator.lora_request, model, prompt_ids(vllm_model_dir))
    del generator


def test_a_dora_policy_on_a_4bit_base_falls_back_saying_why(vllm_model_dir):
    """DoRA cannot be pushed as a LoRA and cannot be merged into 4-bit: transformers, with the reason."""
    from transformers import BitsAndBytesConfig

    from trl_r1.trainers import R1GRPOConfig
    from trl_r1.trainers.trl_compat import vllm_generation_choice

    args = R1GRPOConfig(output_dir="unused", use_cpu=True, use_vllm=True, vllm_mode="colocate", report_to="none")
    four_bit = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)
    # the refusal named is the branch's own, not this machine's ("bitsandbytes 4-bit on CUDA only" on a CPU vLLM)
    choice, reason = vllm_generation_choice(vllm_model_dir, args, lora(use_dora=True), four_bit, this_machine=False)
    assert choice == "transformers" and "DoRA" in reason
    args.vllm_mode = "server"
    choice, reason = vllm_generation_choice(vllm_model_dir, args, lora(), four_bit, this_machine=False)
    assert choice == "transformers" and "server mode" in reason


# ----- evaluation and rejection sampling from an adapter folder on disk ----------------------------------------------

@pytest.fixture(scope="module")
def saved_adapter(vllm_model_dir, tmp_path_factory):
    """An rsLoRA adapter (alpha != r, a module subset) saved as training saves it."""
    model = peft_model(vllm_model_dir, lora(r=16, lora_alpha=4, use_rslora=True,
                                            target_modules=["q_proj", "k_proj", "gate_proj"]), seed=3)
    folder = tmp_path_factory.mktemp("rslora-adapter")
    model.save_pretrained(str(folder))
    return str(folder), model


def test_an_adapter_folder_generates_in_vllm_as_peft_computes_it(vllm_model_dir, saved_adapter, caplog):
    from trl_r1.data.generation import VLLMGenerator, load_generator

    folder, model = saved_adapter
    with caplog.at_level(logging.WARNING, logger="trl_r1.data"):
        generator = load_generator("auto", vllm_model_dir, adapter_path=folder,
                                   vllm_kwargs={"dtype": "float32", "max_model_len": 256})
    assert isinstance(generator, VLLMGenerator) and "not vLLM" not in caplog.text  # no fallback message
    assert_served_as_peft(generator.llm, generator.lora_request, model, prompt_ids(vllm_model_dir))
    del generator


def test_a_4bit_adapter_folder_says_why_it_is_not_served_by_vllm(vllm_model_dir, saved_adapter, caplog):
    from trl_r1.data.generation import TransformersGenerator, load_generator

    folder, _ = saved_adapter
    with caplog.at_level(logging.WARNING, logger="trl_r1.data"):
        generator = load_generator("auto", vllm_model_dir, adapter_path=folder, load_in_4bit=True)
    assert isinstance(generator, TransformersGenerator)
    assert "using transformers, not vLLM: vLLM runs bitsandbytes 4-bit on CUDA only" in caplog.text
    with pytest.raises(Exception, match="bitsandbytes"):  # asked for by name: refused, not replaced
        load_generator("vllm", vllm_model_dir, adapter_path=folder, load_in_4bit=True)


def test_auto_falls_back_for_an_adapter_folder_vllm_cannot_serve(vllm_model_dir, tmp_path, caplog):
    from trl_r1.data.generation import SamplingParams, load_generator

    model = peft_model(vllm_model_dir, lora(use_dora=True))
    model.save_pretrained(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="trl_r1.data"):
        generator = load_generator("auto", vllm_model_dir, adapter_path=str(tmp_path),
                                   vllm_kwargs={"dtype": "float32", "max_model_len": 256})
        try:
            completions = generator.generate(MESSAGES[:1], SamplingParams(num_samples=1, max_new_tokens=4), seed=0)
        finally:
            llm = getattr(generator, "llm", None)
            del generator, llm
    assert len(completions[0]) == 1
    assert "DoRA" in caplog.text


# ----- GRPO: gradient accumulation and reused generations ------------------------------------------------------------

ACCUMULATING_RUN = textwrap.dedent('''
    """GRPO with gradient_accumulation_steps=2 and num_iterations=2 (TRL generates every 2 optimizer steps), the adapter
    pushed to vLLM (float32 on CPU); writes each push (step, id, whether the pushed file is the model's adapter then),
    the logs and the trainer's warnings."""
    import functools, json, logging, os, sys, torch
    import trl.generation.vllm_generation as vllm_generation
    from datasets import Dataset
    from peft import get_peft_model_state_dict
    from safetensors.torch import load_file
    from vllm import LLM
    sys.path.insert(0, {test_dir!r})
    from test_adapter_red_team import MESSAGES, LowTokenShare, lora
    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    model_dir, output_dir = sys.argv[1:3]
    warnings = []
    handler = logging.Handler()
    handler.emit = lambda record: warnings.append(record.getMessage())
    logging.getLogger("trl_r1").addHandler(handler)
    vllm_generation.LLM = functools.partial(LLM, enforce_eager=True, dtype="float32")
    args = R1GRPOConfig(output_dir=output_dir, use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                        disable_tqdm=True, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                        num_iterations=2, num_generations=4, max_completion_length=6, max_steps=4, logging_steps=1,
                        learning_rate=0.05, seed=0, use_vllm=True, vllm_mode="colocate", vllm_max_model_length=128)
    trainer = R1GRPOTrainer(model=model_dir, reward_funcs=LowTokenShare(), args=args, peft_config=lora(),
                            train_dataset=Dataset.from_list([{{"prompt": p}} for p in MESSAGES * 2]))
    generation, pushes = trainer.vllm_generation, []
    sync = generation.sync_weights

    def checked_sync():
        sync()
        request = generation.adapter_slot.request
        pushed = load_file(os.path.join(request.lora_path, "adapter_model.safetensors"))
        current = get_peft_model_state_dict(trainer.model)
        same = pushed.keys() == current.keys() and all(torch.equal(pushed[k], current[k].cpu()) for k in current)
        pushes.append([trainer.state.global_step, request.lora_int_id, same])

    generation.sync_weights = checked_sync
    trainer.train()
    json.dump({{"backend": trainer.generation_backend, "pushes": pushes, "warnings": warnings,
               "logs": trainer.state.log_history}}, open(os.path.join(output_dir, "run.json"), "w"))
''')


class LowTokenShare:
    """A reward that differs within a group, so every step moves the adapter."""

    __name__ = "low_token_share"

    def __call__(self, completion_ids, **kwargs):
        return [sum(t < 300 for t in ids) / max(len(ids), 1) for ids in completion_ids]


def test_with_accumulation_and_reused_generations_each_generation_uses_the_current_adapter(vllm_model_dir, tmp_path):
    """Each push happens before a generation and serves the adapter the model has then; vLLM's log-probs of what
    it sampled are the trainer's (the first generation, before any step, included); no fallback message. In a
    fresh process: TRL's colocate rendezvous stays out of the engines of this one."""
    import json

    script = tmp_path / "accumulating_run.py"
    script.write_text(ACCUMULATING_RUN.format(test_dir=os.path.dirname(__file__)))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                             "MASTER_PORT")}
    done = subprocess.run([sys.executable, str(script), vllm_model_dir, str(tmp_path)], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["backend"] == "adapter" and not any("not vLLM" in w for w in run["warnings"]), run["warnings"]
    assert run["pushes"] == [[0, 1, True], [2, 2, True]]  # before the first generation, then two optimizer steps on
    # logged at the steps that generated (2 of 4)
    logs = [e for e in run["logs"] if "sampling/sampling_logp_difference/max" in e]
    assert len(logs) == 2 and all(e["sampling/sampling_logp_difference/max"] < LOGP_TOLERANCE for e in logs), logs
