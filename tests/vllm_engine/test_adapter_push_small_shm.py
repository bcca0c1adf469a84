"""The adapter push on a small tmpfs (Docker gives `/dev/shm` 64 MB): each version is written in the dtype vLLM
serves, the previous one deleted first, and where tmpfs has no room for even one version the push goes to the
temporary folder instead of failing with ENOSPC. A real tmpfs of a few MB is mounted for it (root only: the test
is skipped where `mount` is not permitted), standing in for `/dev/shm`.

Sizes: r=256 on the head_dim-32 tiny model is 2 MiB per version in float32, 1 MiB in bfloat16. On a 3 MiB
tmpfs, writing float32 versions before deleting the previous one (what the push did) fails at the second push,
as a 0.5B model's 35 MB adapter does on a 64 MB `/dev/shm`.
"""

import functools
import logging
import os
import subprocess
import tempfile

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig
from safetensors.torch import load_file

from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

def lora() -> LoraConfig:
    """A fresh config per test (a trainer's PEFT model keeps and edits the one it is given)."""
    return LoraConfig(r=256, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM",
                      init_lora_weights=False)
PROMPTS = [[{"role": "user", "content": f"What is {a} + {b}?"}] for a in range(4) for b in range(4)]


@pytest.fixture
def small_tmpfs(tmp_path, monkeypatch):
    """``mount(size_mb)``: a fresh tmpfs of that size, used as the adapter scratch root (unmounted afterwards)."""
    import trl_r1.data.generation as generation

    mounted = []

    def mount(size_mb: float) -> str:
        folder = tmp_path / f"shm{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={int(size_mb * 1024)}k", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
        mounted.append(str(folder))
        monkeypatch.setattr(generation, "adapter_scratch_root", lambda: str(folder))
        return str(folder)

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", folder], check=False)


class MaskedShareSeen(R1GRPOTrainer):
    """Records, per rollout, the share of sequences TRL's correction zeroed (its `importance_sampling_ratio`)."""

    def on_rollout(self, batch, rewards_per_func):
        self.zeroed = getattr(self, "zeroed", []) + [(batch["importance_sampling_ratio"] == 0).float().mean().item()]
        return super().on_rollout(batch, rewards_per_func)


class LowTokenShare:
    __name__ = "low_token_share"

    def __call__(self, completion_ids, **kwargs):
        return [sum(t < 300 for t in ids) / max(len(ids), 1) for ids in completion_ids]


def test_pushes_fit_a_3mb_tmpfs_in_the_served_dtype_without_asking_the_hub(vllm_model_dir, small_tmpfs, tmp_path,
                                                                          monkeypatch):
    import peft.utils.save_and_load as save_and_load
    import trl.generation.vllm_generation as vllm_generation
    from vllm import LLM

    shm = small_tmpfs(3)
    # the engine in bfloat16, as on a GPU with a bf16 base (the trainer's adapter stays float32)
    monkeypatch.setattr(vllm_generation, "LLM", functools.partial(LLM, enforce_eager=True, dtype="bfloat16"))

    def hub_asked(*args, **kwargs):
        raise AssertionError(f"the push asked the Hub: {args}")

    monkeypatch.setattr(save_and_load, "check_file_exists_on_hf_hub", hub_asked)
    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                        disable_tqdm=True, per_device_train_batch_size=8, num_generations=4, max_completion_length=8,
                        max_steps=3, logging_steps=1, learning_rate=0.05, seed=0, use_vllm=True,
                        vllm_mode="colocate", vllm_max_model_length=128,
                        vllm_importance_sampling_clip_max=1.001)  # bf16 vLLM vs float32 trainer: some masked
    trainer = MaskedShareSeen(model=vllm_model_dir, reward_funcs=LowTokenShare(), args=args, peft_config=lora(),
                            train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]))
    # a base named by Hub id (an rl stage from a Hub model): PEFT's default would look it up on every push
    trainer.model.peft_config["default"].base_model_name_or_path = "some-org/a-hub-model"
    trainer.train()

    slot = trainer.vllm_generation.adapter_slot
    assert slot.version == 3 and slot.dtype == torch.bfloat16
    assert os.listdir(slot.root) == ["v3"] and slot.request.lora_path.startswith(shm)
    served = load_file(os.path.join(slot.request.lora_path, "adapter_model.safetensors"))
    assert {t.dtype for t in served.values()} == {torch.bfloat16}
    assert slot.bytes_written == 1 << 20  # half the float32 adapter's 2 MiB
    logs = [e for e in trainer.state.log_history if "sampling/sampling_logp_difference/mean" in e]
    assert len(logs) == 3  # each step generated with the version pushed before it
    # the masked share the trainer logs is the share of sequences TRL's sequence_mask dropped
    shares = [e["sampling/importance_sampling_masked_share"] for e in logs]
    assert shares == pytest.approx(trainer.zeroed) and 0 < max(shares), (shares, trainer.zeroed)


def test_a_tmpfs_too_small_for_one_version_falls_back_to_the_temporary_folder(vllm_model_dir, small_tmpfs, caplog):
    from peft import get_peft_model, get_peft_model_state_dict
    from transformers import AutoModelForCausalLM
    from vllm import LLM, SamplingParams

    from trl_r1.data.generation import VLLMAdapterSlot, shutdown_vllm_engine

    shm = small_tmpfs(1)  # under the 2 MiB of one float32 version
    config = lora()
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(vllm_model_dir), config)
    tensors = get_peft_model_state_dict(model)
    llm = LLM(model=vllm_model_dir, enforce_eager=True, dtype="float32", max_model_len=128, enable_lora=True,
              max_lora_rank=256, max_loras=1)
    try:
        slot = VLLMAdapterSlot(llm)
        with caplog.at_level(logging.WARNING, logger="trl_r1.data"):
            first, second = slot.push(tensors, config), slot.push(tensors, config)
        assert "writing the versions to" in caplog.text and "--shm-size" in caplog.text
        assert os.path.dirname(os.path.dirname(second.lora_path)) == tempfile.gettempdir()
        assert not os.path.exists(first.lora_path) and os.listdir(slot.root) == []  # nothing left in tmpfs
        served = load_file(os.path.join(second.lora_path, "adapter_model.safetensors"))
        assert all(torch.equal(served[k], v) for k, v in tensors.items())  # float32 engine: written as trained
        params = SamplingParams(temperature=0.0, max_tokens=4, logprobs=0)
        with_adapter = llm.generate(["What is 2 + 3?"], params, lora_request=second, use_tqdm=False)[0].outputs[0]
        base = llm.generate(["What is 2 + 3?"], params, use_tqdm=False)[0].outputs[0]
        # the adapter is served: the model is another one
        assert (with_adapter.token_ids != base.token_ids
                or abs(with_adapter.cumulative_logprob - base.cumulative_logprob) > 1e-2)
        slot.close()
        assert not os.path.exists(second.lora_path) and not os.path.exists(slot.root)
        assert os.listdir(shm) == []
    finally:
        shutdown_vllm_engine(llm)
