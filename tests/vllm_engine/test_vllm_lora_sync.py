"""The LoRA policy pushed to TRL's colocated vLLM unmerged (`trainers/trl_compat.AdapterSyncVLLMGeneration`), on a
real vLLM engine (CPU build): after N optimizer steps vLLM's greedy tokens and log-probs with the pushed adapter are
PEFT's on the same base; every push serves a fresh adapter id (a reused id serves the stale adapter: shown here);
a run killed after a checkpoint and resumed pushes the checkpoint's adapter; a 4-bit base that vLLM cannot serve
here falls back to transformers generation, saying why.

On CPU vLLM has no bitsandbytes, so the base here is float32 with the same adapter path; the 4-bit base in vLLM,
and sleep mode (level 1 on a GPU; vLLM's CPU build has no sleep mode), are checked on a GPU
(docs/troubleshooting.md, "QLoRA and vLLM"). vLLM runs in float32 here, so the tolerance is 1e-4 in log-probs.
Unlike the full-weight push (tests/vllm_engine/test_vllm_grpo_colocate.py), the adapter push needs no CPU
workaround: it goes through vLLM's public `add_lora`.
"""

import functools
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig
from safetensors.torch import load_file, save_file
from transformers import TrainerCallback

from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

LOGP_TOLERANCE = 1e-4  # float32 on both sides; seen: 2e-7 mean, 1e-6 max
PROMPTS = [[{"role": "user", "content": f"What is {a} + {b}?"}] for a in range(4) for b in range(4)]


class LowTokenShare:
    """A reward that differs within a group (so every step moves the adapter): the share of token ids below 300."""

    __name__ = "low_token_share"

    def __call__(self, completion_ids, **kwargs):
        return [sum(t < 300 for t in ids) / max(len(ids), 1) for ids in completion_ids]


class ServedAdapterIds(TrainerCallback):
    """The adapter id vLLM served at each optimizer step."""

    def __init__(self):
        self.trainer, self.ids = None, []

    def on_step_end(self, args, state, control, **kwargs):
        self.ids.append(self.trainer.vllm_generation.adapter_slot.request.lora_int_id)


RUN_SEED = 3  # not 0: TRL alone seeds the colocated engine with the rank (0 here)


def grpo_args(output_dir, **overrides):
    values = dict(output_dir=str(output_dir), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                  disable_tqdm=True, per_device_train_batch_size=8, num_generations=4, max_completion_length=8,
                  max_steps=3, logging_steps=1, learning_rate=0.05, seed=0, use_vllm=True, vllm_mode="colocate",
                  vllm_max_model_length=128)
    return R1GRPOConfig(**{**values, **overrides})


# random LoRA B (not PEFT's zeros): the adapter changes the model from the first step, so a comparison with the
# base, or with another version, is never vacuous
LORA = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM", init_lora_weights=False)


def float32_engine(monkeypatch):
    import trl.generation.vllm_generation as vllm_generation
    from vllm import LLM

    monkeypatch.setattr(vllm_generation, "LLM", functools.partial(LLM, enforce_eager=True, dtype="float32"))


@pytest.fixture(scope="module")
def trained(vllm_model_dir, tmp_path_factory):
    """Three optimizer steps of GRPO with the adapter pushed unmerged after each."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        float32_engine(monkeypatch)
        served = ServedAdapterIds()
        trainer = R1GRPOTrainer(model=vllm_model_dir, reward_funcs=LowTokenShare(),
                                args=grpo_args(tmp_path_factory.mktemp("grpo-lora"), seed=RUN_SEED), peft_config=LORA,
                                train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]), callbacks=[served])
        served.trainer = trainer
        trainer.train()
        yield trainer, served.ids


def _prompt_ids(trainer):
    tokenizer = trainer.processing_class
    return [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
            for p in PROMPTS[:4]]


def _vllm_greedy(trainer, prompt_ids, lora_request=None):
    """Greedy tokens and their log-probs from the engine (with the adapter being served, or ``lora_request``)."""
    from vllm import SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=12, logprobs=0)
    prompts = [{"prompt_token_ids": ids} for ids in prompt_ids]
    outputs = trainer.vllm_generation.llm.generate(prompts, params, lora_request=lora_request, use_tqdm=False)
    tokens = [list(o.outputs[0].token_ids) for o in outputs]
    logps = [[next(iter(step.values())).logprob for step in o.outputs[0].logprobs] for o in outputs]
    return tokens, logps


@torch.no_grad()
def _peft_logps(model, prompt_ids, tokens):
    """Log-probs of ``tokens`` after each prompt under ``model`` (PEFT, in the trainer)."""
    out = []
    for prompt, completion in zip(prompt_ids, tokens):
        ids = torch.tensor([prompt + completion])
        logits = model(input_ids=ids).logits[0, len(prompt) - 1:-1].float()
        out.append(torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion)[:, None])[:, 0].tolist())
    return out


def _max_gap(a, b):
    return max(abs(x - y) for row_a, row_b in zip(a, b) for x, y in zip(row_a, row_b))


def test_after_n_steps_vllm_serves_the_trained_adapter_as_peft_computes_it(trained):
    trainer, ids = trained
    assert trainer.generation_backend == "adapter"
    from trl_r1.trainers.trl_compat import engine_seed

    # the engine's sampling seed follows the run's (TRL's own: the rank alone, 0 in every run)
    assert trainer.vllm_generation.llm.llm_engine.vllm_config.model_config.seed == engine_seed(RUN_SEED, 0) != 0
    logs = [e for e in trainer.state.log_history if "sampling/sampling_logp_difference/mean" in e]
    assert len(logs) == 3 and all(e["grad_norm"] > 0 for e in logs)
    # each rollout was sampled from the adapter of that step: vLLM's log-probs of its sampled tokens are the trainer's
    assert all(e["sampling/sampling_logp_difference/max"] < LOGP_TOLERANCE for e in logs), logs

    trainer.vllm_generation.sync_weights()  # the last step's update (TRL pushes before generating)
    model = trainer.model.eval()
    prompt_ids = _prompt_ids(trainer)
    tokens, vllm_logps = _vllm_greedy(trainer, prompt_ids)
    for prompt, completion in zip(prompt_ids, tokens):
        greedy = model.generate(input_ids=torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                do_sample=False, max_new_tokens=12, eos_token_id=None)[0, len(prompt):].tolist()
        assert greedy[:len(completion)] == completion  # vLLM stops at EOS; PEFT was told not to
    assert _max_gap(vllm_logps, _peft_logps(model, prompt_ids, tokens)) < LOGP_TOLERANCE
    with model.disable_adapter():  # the adapter matters: the base gives these tokens other log-probs
        assert _max_gap(vllm_logps, _peft_logps(model, prompt_ids, tokens)) > 100 * LOGP_TOLERANCE


def test_every_push_serves_a_fresh_adapter_id_and_a_reused_id_would_serve_a_stale_adapter(trained, tmp_path):
    from peft import get_peft_model_state_dict
    from vllm.lora.request import LoRARequest

    trainer, ids = trained
    slot = trainer.vllm_generation.adapter_slot
    # one push per optimizer step, each under a fresh id (ids are unique in the process, so not from 1 here)
    assert len(ids) == 3 and all(a < b for a, b in zip(ids, ids[1:]))
    engine = trainer.vllm_generation.llm.llm_engine
    assert engine.list_loras() == {slot.request.lora_int_id}  # older versions dropped from vLLM ...
    assert sorted(os.listdir(slot.root)) == [f"v{slot.version}"]  # ... and from tmpfs

    model, prompt_ids = trainer.model.eval(), _prompt_ids(trainer)
    served_tokens, served = _vllm_greedy(trainer, prompt_ids)
    # a zeroed adapter (= the base), written to a new folder but registered under the id being served: vLLM keeps
    # the adapter it cached for that id, so generation goes on with the old weights. This is what a fresh id per
    # push prevents.
    zeroed = {k: torch.zeros_like(v) for k, v in get_peft_model_state_dict(model).items()}
    stale_dir = tmp_path / "same-id"
    stale_dir.mkdir()
    save_file(zeroed, str(stale_dir / "adapter_model.safetensors"))
    model.peft_config["default"].save_pretrained(str(stale_dir))
    same_id = LoRARequest("reused", slot.request.lora_int_id, str(stale_dir))
    engine.add_lora(same_id)
    stale_tokens, stale = _vllm_greedy(trainer, prompt_ids, lora_request=same_id)
    assert stale_tokens == served_tokens and _max_gap(stale, served) < LOGP_TOLERANCE  # stale weights served
    # the slot pushes the zeroed adapter under a fresh id: vLLM now serves it, i.e. the base model
    before = slot.request.lora_int_id
    slot.push(zeroed, model.peft_config["default"])
    assert slot.request.lora_int_id == before + 1
    tokens, fresh = _vllm_greedy(trainer, prompt_ids)
    with model.disable_adapter():
        assert _max_gap(fresh, _peft_logps(model, prompt_ids, tokens)) < LOGP_TOLERANCE
    assert _max_gap(fresh, _peft_logps(model, prompt_ids, tokens)) > 100 * LOGP_TOLERANCE


RUN = textwrap.dedent('''
    """One GRPO run with the adapter pushed to vLLM (float32 on CPU); kills itself after its checkpoint at step
    `kill_at`, or resumes and writes what vLLM served first."""
    import functools, json, os, shutil, signal, sys
    import trl.generation.vllm_generation as vllm_generation
    from vllm import LLM
    from datasets import Dataset
    from transformers import TrainerCallback
    sys.path.insert(0, {test_dir!r})
    from test_vllm_lora_sync import LORA, PROMPTS, LowTokenShare, grpo_args
    from trl_r1.trainers import R1GRPOTrainer

    vllm_generation.LLM = functools.partial(LLM, enforce_eager=True, dtype="float32")
    model_dir, output_dir, mode = sys.argv[1:4]

    class KillAfterCheckpoint(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == 2:  # the test removes the tmpfs versions a killed run leaves behind
                open(os.path.join(output_dir, "slot-root.txt"), "w").write(trainer.vllm_generation.adapter_slot.root)
                os.kill(os.getpid(), signal.SIGKILL)  # no clean-up, as an OOM kill or a preemption

    class FirstPush(TrainerCallback):
        """Copies the first adapter version vLLM served after the resume (before the step changes the policy)."""
        def on_step_end(self, args, state, control, **kwargs):
            slot = trainer.vllm_generation.adapter_slot
            if not os.path.exists(os.path.join(output_dir, "first-push")):
                shutil.copytree(slot.request.lora_path, os.path.join(output_dir, "first-push"))
                json.dump({{"step": state.global_step, "id": slot.request.lora_int_id}},
                          open(os.path.join(output_dir, "first-push.json"), "w"))

    args = grpo_args(output_dir, max_steps=4 if mode == "kill" else 3, save_strategy="steps", save_steps=1)
    trainer = R1GRPOTrainer(model=model_dir, reward_funcs=LowTokenShare(), args=args, peft_config=LORA,
                            train_dataset=Dataset.from_list([{{"prompt": p}} for p in PROMPTS]),
                            callbacks=[KillAfterCheckpoint() if mode == "kill" else FirstPush()])
    trainer.train(resume_from_checkpoint=None if mode == "kill" else os.path.join(output_dir, "checkpoint-2"))
    logs = [e for e in trainer.state.log_history if "sampling/sampling_logp_difference/max" in e]
    json.dump(logs, open(os.path.join(output_dir, "logs.json"), "w"))
''')


def test_a_killed_and_resumed_run_pushes_the_checkpoints_adapter(vllm_model_dir, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(RUN.format(test_dir=os.path.dirname(__file__)))
    out = tmp_path / "out"

    # a fresh process: the rendezvous TRL's colocate mode set up in this one (its port included) stays here
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                             "MASTER_PORT")}

    def run(mode):
        return subprocess.run([sys.executable, str(script), vllm_model_dir, str(out), mode], capture_output=True,
                              text=True, timeout=600, env=env)

    killed = run("kill")
    assert killed.returncode == -9, killed.stderr[-3000:]  # SIGKILL after checkpoint-2
    shutil.rmtree((out / "slot-root.txt").read_text(), ignore_errors=True)
    assert (out / "checkpoint-2" / "adapter_model.safetensors").is_file() and not (out / "checkpoint-3").exists()
    resumed = run("resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    first = json.loads((out / "first-push.json").read_text())
    assert first == {"step": 3, "id": 1}  # the new engine's first version, at the first step after the resume
    pushed = load_file(str(out / "first-push" / "adapter_model.safetensors"))
    saved = load_file(str(out / "checkpoint-2" / "adapter_model.safetensors"))
    assert pushed.keys() == saved.keys()
    assert all(torch.equal(pushed[k], saved[k].to(pushed[k].dtype)) for k in saved)  # the checkpoint's adapter
    logs = json.loads((out / "logs.json").read_text())
    assert [e["step"] for e in logs] == [1, 2, 3]  # the checkpoint's history, then the resumed step
    assert logs[-1]["sampling/sampling_logp_difference/max"] < LOGP_TOLERANCE  # vLLM and the trainer in step


def test_a_4bit_base_vllm_cannot_serve_here_falls_back_to_transformers_saying_why(vllm_model_dir, tmp_path, caplog):
    from transformers import BitsAndBytesConfig

    four_bit = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32,
                                  bnb_4bit_use_double_quant=True)  # the base vLLM would build, so only the machine differs
    dataset = Dataset.from_list([{"prompt": p} for p in PROMPTS])
    with pytest.raises(ValueError, match="vLLM runs bitsandbytes 4-bit on CUDA only.*vllm_fallback='transformers'"):
        R1GRPOTrainer(model=vllm_model_dir, reward_funcs=LowTokenShare(), args=grpo_args(tmp_path, max_steps=1),
                      peft_config=LORA, quantization_config=four_bit, train_dataset=dataset)  # issue 34: no silent fallback
    with caplog.at_level(logging.WARNING, logger="trl_r1.trainers"):
        trainer = R1GRPOTrainer(model=vllm_model_dir, reward_funcs=LowTokenShare(),
                                args=grpo_args(tmp_path, max_steps=1, vllm_fallback="transformers"), peft_config=LORA,
                                quantization_config=four_bit, train_dataset=dataset)
    assert trainer.generation_backend == "transformers" and not trainer.use_vllm
    assert "generating with transformers, not vLLM: vLLM runs bitsandbytes 4-bit on CUDA only" in caplog.text
    trainer.train()
    assert trainer.state.global_step == 1 and trainer.model.is_loaded_in_4bit
