"""`R1GRPOTrainer` with TRL's vLLM colocate mode (`use_vllm=True, vllm_mode="colocate"`) for a few real steps on
CPU: generation by a vLLM engine in the trainer's process, the trainer's weights pushed into it after each
optimizer step, and vLLM's sampling log-probs matching the trainer's.

CPU-only workaround, here in the test and nowhere else: TRL syncs weights with
`model_runner.model.load_weights(...)`, which on vLLM's CPU backend fails at the first sync (`'Parameter' object has
no attribute 'weight_loader'`: after loading, the CPU backend repacks linear weights for its GEMM kernels and drops
the loaders). The test pushes the same tensors through the model runner's `reload_weights`, which reloads in place
and repacks again, then re-ties `lm_head` to the embedding (the tiny model ties them). On a GPU TRL's own sync is
used. The engine also runs without graph compilation (`enforce_eager`), which costs minutes of start-up on CPU.
"""

import functools

import pytest
import torch
from datasets import Dataset

from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer


def _cpu_sync_weights(self):
    """TRL's colocate `VLLMGeneration.sync_weights`, with the CPU backend's reload (see the module docstring)."""
    runner = self.llm.llm_engine.model_executor.driver_worker.worker.model_runner
    runner.reload_weights(weights_iterator=[(name, param.detach().clone()) for name, param in self._iter_named_params()])
    model = runner.get_model()
    # not in the weights pushed: tie it again, then repack it for the CPU GEMM (vLLM 0.32; before, the tied lm_head
    # is the embedding module itself)
    if model.config.tie_word_embeddings and model.lm_head is not model.model.embed_tokens:
        model.lm_head.tie_weights(model.model.embed_tokens)
        model.lm_head.quant_method.process_weights_after_loading(model.lm_head)
    self.llm.reset_prefix_cache()


class LowTokenShare:
    """A reward that differs within a group (so every step moves the weights): the share of token ids below 300."""

    __name__ = "low_token_share"

    def __call__(self, completion_ids, **kwargs):
        return [sum(t < 300 for t in ids) / max(len(ids), 1) for ids in completion_ids]


@pytest.fixture
def colocate_on_cpu(monkeypatch):
    import trl.generation.vllm_generation as vllm_generation
    from vllm import LLM

    monkeypatch.setattr(vllm_generation, "LLM", functools.partial(LLM, enforce_eager=True))
    monkeypatch.setattr(vllm_generation.VLLMGeneration, "sync_weights", _cpu_sync_weights)


def test_grpo_colocate_generates_with_vllm_and_syncs_weights(vllm_model_dir, colocate_on_cpu, tmp_path):
    prompts = [[{"role": "user", "content": f"What is {a} + {b}?"}] for a in range(4) for b in range(4)]
    args = R1GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", save_strategy="no", disable_tqdm=True,
        per_device_train_batch_size=8, num_generations=4, max_completion_length=8, max_steps=3, logging_steps=1,
        learning_rate=0.05, seed=0, use_vllm=True, vllm_mode="colocate", vllm_max_model_length=128,
    )
    trainer = R1GRPOTrainer(model=vllm_model_dir, reward_funcs=LowTokenShare(), args=args,
                            train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]))
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "sampling/sampling_logp_difference/mean" in entry]
    assert len(logs) == 3
    gaps = [entry["sampling/sampling_logp_difference/mean"] for entry in logs]
    # vLLM samples from the weights the trainer has after each optimizer step: its log-probs of the sampled tokens
    # agree with the trainer's to a few 1e-3 (vLLM computes in bfloat16, the trainer in float32). Stale weights, or
    # an lm_head left on the old embedding, put the gap near 0.5 after one step at this learning rate.
    assert all(g < 1e-2 for g in gaps), gaps
    trainer.vllm_generation.sync_weights()  # the last step's update (TRL pushes weights before generating)
    runner = trainer.vllm_generation.llm.llm_engine.model_executor.driver_worker.worker.model_runner
    trained = trainer.model.get_input_embeddings().weight.detach()
    served = runner.get_model().model.embed_tokens.weight[: len(trained)].float()  # vLLM pads the vocabulary
    assert all(entry["grad_norm"] > 0 for entry in logs)  # the weights moved at every step ...
    assert torch.allclose(served, trained, rtol=1e-2, atol=1e-4)  # ... and vLLM serves them (in bfloat16)
    print("vLLM-vs-trainer log-prob gap per step:", gaps)
