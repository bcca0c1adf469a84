"""The trainers under DDP with 2 real processes (gloo on CPU, `accelerate launch --multi_gpu`), and under DeepSpeed
ZeRO-2 where DeepSpeed is installed: after a few steps, every rank holds the same parameters (value head and critic
adapter included) and the same KL coefficient.

One launch runs every scenario (process start-up dominates); each rank writes what it holds to a JSON file,
and the pytest process compares the ranks. Run as a script, this file is the worker.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trl_r1.pipeline.ranks import shut_down

_COMMON = """\
compute_environment: LOCAL_MACHINE
num_machines: 1
num_processes: 2
machine_rank: 0
mixed_precision: 'no'
use_cpu: true
"""
# backend -> (accelerate config, extra launch flags)
BACKENDS = {
    "ddp": (_COMMON + "distributed_type: MULTI_GPU\n", ["--multi_gpu"]),
    "zero2": (
        _COMMON + "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  gradient_accumulation_steps: 1\n"
        "  offload_optimizer_device: none\n  offload_param_device: none\n  zero3_init_flag: false\n",
        [],
    ),
}

# name -> (trainer, options)
SCENARIOS = {
    "ppo_shared_trunk": ("ppo", {"critic": "shared_trunk", "kl_target": 0.01, "kl_horizon": 16}),
    "ppo_lora_critic": ("ppo", {"critic": "lora", "peft": True, "kl_target": 0.01, "kl_horizon": 16}),
    "grpo_adaptive_kl_in_reward": (
        "grpo",
        {"advantage_estimator": "rloo", "beta": 0.1, "kl_in_reward": True, "kl_estimator": "k1", "kl_target": 1e-3,
         "kl_horizon": 16},
    ),
    "grpo_adaptive_kl_in_loss": ("grpo", {"beta": 0.1, "kl_estimator": "k3+", "kl_target": 1e-3, "kl_horizon": 16}),
}


# ----------------------------------------------------------------------------------------------------- worker


def starts_with_digit(completions, **kwargs):
    return [float(text.lstrip()[:1].isdigit()) for text in completions]


def completion_length(completion_ids, **kwargs):
    return [len(ids) / 8 for ids in completion_ids]


def parameter_digest(trainer) -> dict[str, str]:
    """sha256 of the model's trainable parameters, and of the value head alone (PPO)."""
    import torch

    def digest(named_parameters) -> str:
        sha = hashlib.sha256()
        for name, parameter in sorted(named_parameters, key=lambda item: item[0]):
            if parameter.requires_grad:
                sha.update(name.encode())
                sha.update(parameter.detach().to(torch.float64).cpu().numpy().tobytes())
        return sha.hexdigest()

    head = getattr(trainer, "value_head", None)
    return {
        "trainable": digest(trainer.model.named_parameters()),
        "value_head": digest(head.named_parameters()) if head is not None else None,
    }


def run_scenario(name: str, model_dir: str, out_dir: Path) -> None:
    from datasets import Dataset
    from peft import LoraConfig

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer, R1PPOConfig, R1PPOTrainer

    kind, options = SCENARIOS[name]
    options = dict(options)
    peft_config = None
    if options.pop("peft", False):
        peft_config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    common = dict(
        output_dir=str(out_dir / name), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
        per_device_train_batch_size=4, max_completion_length=4, learning_rate=1e-2, max_steps=3, seed=0,
        logging_steps=1, disable_tqdm=True, log_level="error",
    )
    prompts = [" ".join(str((i * 7 + j) % 10) if i % 2 else "abcdefghij"[(i + j) % 10] for j in range(5)) for i in range(32)]
    dataset = Dataset.from_list([{"prompt": p} for p in prompts])
    if kind == "ppo":
        args = R1PPOConfig(**common, **options)
        trainer = R1PPOTrainer(model=model_dir, reward_funcs=[starts_with_digit, completion_length], args=args,
                               train_dataset=dataset, peft_config=peft_config)
    else:
        args = R1GRPOConfig(**common, num_generations=4, **options)
        trainer = R1GRPOTrainer(model=model_dir, reward_funcs=[starts_with_digit, completion_length], args=args,
                                train_dataset=dataset, peft_config=peft_config)
    before = parameter_digest(trainer)
    trainer.train()
    rank = trainer.accelerator.process_index
    record = {
        "world_size": trainer.accelerator.num_processes,
        "before": before,
        "after": parameter_digest(trainer),
        "kl_coef": trainer.kl_controller.value,
        "initial_kl_coef": args.kl_coef,
        "steps": trainer.state.global_step,
    }
    (out_dir / f"{name}.rank{rank}.json").write_text(json.dumps(record))


def main() -> None:
    model_dir, out_dir = sys.argv[1], Path(sys.argv[2])
    for name in sys.argv[3:]:
        run_scenario(name, model_dir, out_dir)
    shut_down(succeeded=True)  # leave the process group before exit (a rank can abort in interpreter shutdown)


# ------------------------------------------------------------------------------------------------------ tests


@pytest.fixture(scope="module", params=list(BACKENDS))
def two_rank_run(request, tiny_model_dir, tmp_path_factory):
    if request.param == "zero2" and importlib.util.find_spec("deepspeed") is None:
        pytest.skip("DeepSpeed is not installed (it is not in the test extra: its CPU comm op compiles on first use)")
    config_text, flags = BACKENDS[request.param]
    out_dir = tmp_path_factory.mktemp(request.param)
    config = out_dir / "accelerate.yaml"
    config.write_text(config_text)
    path = os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config), *flags,
        "--num_processes", "2", "--main_process_port", "0", __file__, tiny_model_dir, str(out_dir), *SCENARIOS,
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return out_dir


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_rank_holds_the_same_parameters_and_kl_coefficient(two_rank_run, scenario):
    ranks = [json.loads((two_rank_run / f"{scenario}.rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2] and [r["steps"] for r in ranks] == [3, 3]
    assert ranks[0]["after"]["trainable"] != ranks[0]["before"]["trainable"]  # training moved the parameters
    assert ranks[0]["after"] == ranks[1]["after"]
    if SCENARIOS[scenario][0] == "ppo":  # the value head trained, identically on both ranks
        assert ranks[0]["after"]["value_head"] != ranks[0]["before"]["value_head"]
    assert ranks[0]["kl_coef"] == ranks[1]["kl_coef"] != ranks[0]["initial_kl_coef"]


if __name__ == "__main__":
    main()
