"""`R1PPOTrainer` vs `trl.GRPOTrainer` on the tiny model with QLoRA, one run: model memory held and time per step.

The promise: one 4-bit base shared by the policy adapter, the critic and the reference, so PPO costs little more
memory than GRPO with a KL term (whose reference is the same base with adapters disabled) instead of PPO's usual
two to four models. Measured for GRPO (beta > 0), PPO with a shared-trunk critic and PPO with a LoRA critic: the
bytes of every parameter and buffer the trainer holds (model with adapters, reference model, value head) and the
median optimizer-step time; printed with the PPO / GRPO ratios.

The tiny model (d = 64) overstates the LoRA critic's cost: a rank-r adapter on a d x d layer holds 2rd float32
parameters next to d^2 / 2 bytes of 4-bit weights, an extra 16r/d of the layer, so about 3% at r = 8, d = 4096
(a 7B model) against the +29% measured here.

Run: `OMP_NUM_THREADS=1 python benchmarks/ppo_vs_grpo.py` (`--steps N` to change the run length).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import BitsAndBytesConfig, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from trl_r1.toy import build_tiny_model
from trl_r1.trainers import R1PPOConfig, R1PPOTrainer


def starts_with_digit(completions, **kwargs):
    return [float(text.lstrip()[:1].isdigit()) for text in completions]


class StepTimer(TrainerCallback):
    """Wall time of each optimizer step."""

    def __init__(self):
        self.times, self._start = [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


def held_bytes(trainer) -> int:
    """Bytes of the distinct parameters and buffers of every model the trainer keeps (4-bit weights as packed)."""
    modules = [trainer.model, trainer.ref_model, getattr(trainer, "value_head", None)]
    tensors = {}
    for module in filter(None, modules):
        for tensor in [*module.parameters(), *module.buffers()]:
            tensors[id(tensor)] = tensor.numel() * tensor.element_size()
    return sum(tensors.values())


def run(name, trainer_cls, config_cls, model_dir, steps, **options):
    common = {
        "output_dir": tempfile.mkdtemp(),
        "use_cpu": True,
        "bf16": False,
        "report_to": "none",
        "save_strategy": "no",
        "per_device_train_batch_size": 8,
        "num_generations": 2,
        "num_iterations": 2,
        "max_completion_length": 16,
        "max_steps": steps,
        "learning_rate": 1e-3,
        "seed": 0,
        "disable_tqdm": True,
        "logging_strategy": "no",
        "log_level": "error",
        "model_init_kwargs": {
            "quantization_config": BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32
            )
        },
    }
    dataset = Dataset.from_list([{"prompt": f"{a} + {b} ="} for a in range(8) for b in range(8)])
    trainer = trainer_cls(
        model=model_dir,
        reward_funcs=starts_with_digit,
        args=config_cls(**{**common, **options}),
        train_dataset=dataset,
        peft_config=LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    timer = StepTimer()
    trainer.add_callback(timer)
    trainer.train()
    return name, held_bytes(trainer), statistics.median(timer.times[2:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    steps = parser.parse_args().steps
    model_dir = str(build_tiny_model(tempfile.mkdtemp()))
    results = [
        run("GRPO (beta=0.05)", GRPOTrainer, GRPOConfig, model_dir, steps, beta=0.05),
        run("PPO, shared-trunk critic", R1PPOTrainer, R1PPOConfig, model_dir, steps, critic="shared_trunk"),
        run("PPO, LoRA critic", R1PPOTrainer, R1PPOConfig, model_dir, steps, critic="lora"),
    ]
    _, grpo_bytes, grpo_time = results[0]
    print(f"{'trainer':<26} {'model bytes':>12} {'x GRPO':>7} {'s/step':>8} {'x GRPO':>7}")
    for name, held, seconds in results:
        print(f"{name:<26} {held:>12,} {held / grpo_bytes:>7.3f} {seconds:>8.3f} {seconds / grpo_time:>7.2f}")


if __name__ == "__main__":
    main()
