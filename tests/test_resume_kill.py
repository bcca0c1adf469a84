"""Kill and resume, for real: each trainer (PPO with its value head, GRPO with an adaptive KL coefficient, TRL's SFT)
on 1 process and on 2 (`accelerate launch --multi_gpu` with `use_cpu: true`, gloo) is SIGKILLed (its whole process
group) right after its step-2 checkpoint, resumed from that checkpoint, and must end bit-identical to a run that was
never interrupted: same parameters (value head included), same KL coefficient.

Run as a script, this file is the worker: `WORKER MODEL OUT PHASE KIND...` with PHASE `full`, `kill` or `resume`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KINDS = ("ppo", "grpo", "sft")
MAX_STEPS, KILL_AFTER = 4, 2
_ACCELERATE_CONFIG = """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
num_machines: 1
num_processes: 2
machine_rank: 0
mixed_precision: 'no'
use_cpu: true
"""


# ----------------------------------------------------------------------------------------------------- worker


def starts_with_digit(completions, **kwargs):
    return [float(text.lstrip()[:1].isdigit()) for text in completions]


def completion_length(completion_ids, **kwargs):
    return [len(ids) / 8 for ids in completion_ids]


def build_trainer(kind: str, model_dir: str, output_dir: str, callbacks: list):
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer, R1PPOConfig, R1PPOTrainer

    common = dict(
        output_dir=output_dir, use_cpu=True, bf16=False, report_to="none", save_strategy="steps", save_steps=1,
        per_device_train_batch_size=4, learning_rate=1e-2, max_steps=MAX_STEPS, seed=0, logging_steps=1,
        disable_tqdm=True, log_level="error",
    )
    prompts = [" ".join(str((i * 7 + j) % 10) if i % 2 else "abcdefghij"[(i + j) % 10] for j in range(5))
               for i in range(32)]
    rewards = [starts_with_digit, completion_length]
    if kind == "sft":
        dataset = Dataset.from_list([{"prompt": p, "completion": " 1 2 3"} for p in prompts])
        return SFTTrainer(model=model_dir, args=SFTConfig(**common), train_dataset=dataset, callbacks=callbacks)
    dataset = Dataset.from_list([{"prompt": p} for p in prompts])
    if kind == "ppo":
        args = R1PPOConfig(**common, max_completion_length=4, kl_target=0.01, kl_horizon=16)
        return R1PPOTrainer(model_dir, rewards, args, dataset, callbacks=callbacks)
    args = R1GRPOConfig(**common, max_completion_length=4, num_generations=4, beta=0.1, kl_target=1e-3, kl_horizon=16)
    return R1GRPOTrainer(model_dir, rewards, args, dataset, callbacks=callbacks)


def stall_after_checkpoint(marker_dir: Path):
    """A callback that, once the step-`KILL_AFTER` checkpoint is written, says so and waits to be killed."""
    from transformers import TrainerCallback

    class StallAfterCheckpoint(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == KILL_AFTER:
                (marker_dir / f"saved.rank{args.process_index}").write_text(str(state.global_step))
                time.sleep(600)

    return StallAfterCheckpoint()


def state_digest(trainer) -> dict:
    """Every parameter (float64 bytes, hex-hashed) and the KL coefficient, as a JSON record."""
    import hashlib

    import torch

    sha = hashlib.sha256()
    for name, parameter in sorted(trainer.model.named_parameters(), key=lambda item: item[0]):
        sha.update(name.encode())
        sha.update(parameter.detach().to(torch.float64).cpu().numpy().tobytes())
    head = getattr(trainer, "value_head", None)
    controller = getattr(trainer, "kl_controller", None)
    return {
        "parameters": sha.hexdigest(),
        "value_head": [p.detach().double().sum().item() for p in head.parameters()] if head is not None else None,
        "kl_coef": controller.value if controller is not None else None,
        "steps": trainer.state.global_step,
        "world_size": trainer.accelerator.num_processes,
    }


def main() -> None:
    model_dir, out_dir, phase = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    from trl_r1.pipeline.ranks import shut_down

    for kind in sys.argv[4:]:
        run_dir = out_dir / phase.replace("kill", "resume") / kind  # the resumed run continues the killed one
        callbacks = [stall_after_checkpoint(out_dir)] if phase == "kill" else []
        trainer = build_trainer(kind, model_dir, str(run_dir), callbacks)
        trainer.train(resume_from_checkpoint=str(run_dir / f"checkpoint-{KILL_AFTER}") if phase == "resume" else None)
        if trainer.accelerator.is_main_process:
            (out_dir / f"{phase}.{kind}.json").write_text(json.dumps(state_digest(trainer)))
    shut_down(succeeded=True)
    # Leave without freeing the last trainer: freeing its DDP reducer frees the gloo process group, whose destructor
    # joins a worker thread while holding the GIL that the thread waits for (seen: a 2-rank worker idle for 7 min).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ------------------------------------------------------------------------------------------------------ tests


def worker_command(num_processes: int, out_dir: Path, model_dir: str, phase: str, kinds: tuple[str, ...]) -> list:
    if num_processes == 1:
        return [sys.executable, __file__, model_dir, str(out_dir), phase, *kinds]
    config = out_dir / "accelerate.yaml"
    config.write_text(_ACCELERATE_CONFIG)
    return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config), "--multi_gpu",
            "--num_processes", "2", "--main_process_port", "0", __file__, model_dir, str(out_dir), phase, *kinds]


def worker_env() -> dict:
    path = os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}


def kill_after_checkpoint(command: list, out_dir: Path, num_processes: int, timeout: float = 600) -> None:
    """Start ``command`` in its own process group and SIGKILL the group once every rank wrote its checkpoint."""
    log = (out_dir / "kill.log").open("w")
    process = subprocess.Popen(command, env=worker_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while len(list(out_dir.glob("saved.rank*"))) < num_processes:
            assert process.poll() is None, (out_dir / "kill.log").read_text()[-6000:]
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.5)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    for marker in out_dir.glob("saved.rank*"):
        marker.unlink()


@pytest.mark.slow
@pytest.mark.parametrize("num_processes", [1, 2])
def test_a_killed_run_resumes_bit_identically(num_processes, tiny_model_dir, tmp_path):
    def run(phase: str) -> None:
        result = subprocess.run(worker_command(num_processes, tmp_path, tiny_model_dir, phase, KINDS),
                                env=worker_env(), capture_output=True, text=True, timeout=1200)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
        return result.stdout + result.stderr

    run("full")
    for kind in KINDS:
        kill_after_checkpoint(worker_command(num_processes, tmp_path, tiny_model_dir, "kill", (kind,)), tmp_path,
                              num_processes)
        assert (tmp_path / "resume" / kind / f"checkpoint-{KILL_AFTER}").is_dir()
        assert not (tmp_path / "resume" / kind / f"checkpoint-{KILL_AFTER + 1}").exists()  # killed mid-run
    output = run("resume")
    # The value head is restored by the trainer, not missing (a tied lm_head may be reported by Trainer itself).
    assert not [line for line in output.splitlines() if "missing keys" in line and "value_head" in line]
    for kind in KINDS:
        full = json.loads((tmp_path / f"full.{kind}.json").read_text())
        resumed = json.loads((tmp_path / f"resume.{kind}.json").read_text())
        assert full["world_size"] == resumed["world_size"] == num_processes
        assert resumed["steps"] == MAX_STEPS
        assert resumed == full, kind
    assert json.loads((tmp_path / "full.ppo.json").read_text())["kl_coef"] != 0.05  # the adaptive coefficient moved


if __name__ == "__main__":
    main()
