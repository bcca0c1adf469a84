"""What the launcher meant against what started, checked by the trainers and the pipeline alike (one place).

`accelerate launch --cpu --num_processes 2` (and a DeepSpeed config with `--cpu`) silently starts one process; a
run would then train on one rank with the batch size meant for several.
"""

from __future__ import annotations

import logging
import os

logger = logging.getLogger("trl_r1")


class WorldSizeError(RuntimeError):
    """The launcher meant more processes than there are (e.g. `accelerate launch --cpu --num_processes 2`)."""


def intended_world_size() -> int:
    """The number of processes the launcher's environment announces (1 outside a distributed launch)."""
    value = os.environ.get("WORLD_SIZE", "")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def check_world_size(num_processes: int) -> None:
    """Refuse to run when `WORLD_SIZE` announces more processes than were started.

    `accelerate launch --cpu --num_processes 2` (and a DeepSpeed config with `--cpu`) silently starts one
    process; the run would then train on one rank with the batch size meant for several.
    """
    intended = intended_world_size()
    from accelerate.utils import parse_flag_from_env  # accelerate writes "False" too: parse it as it does

    if num_processes == 1 and "WORLD_SIZE" not in os.environ and parse_flag_from_env("ACCELERATE_USE_CPU") \
            and "MASTER_PORT" in os.environ:
        logger.warning("started by `accelerate launch --cpu`, which runs ONE process whatever --num_processes says; "
                       "for N processes on CPU use `trl-r1 ... --num_processes N` or `accelerate launch --multi_gpu "
                       "--num_processes N` with `use_cpu: true` in the accelerate config")
    if intended > num_processes:
        raise WorldSizeError(
            f"WORLD_SIZE={intended} but only {num_processes} process(es) joined this run. For several processes on "
            "CPU use `accelerate launch --multi_gpu --num_processes N` with `use_cpu: true` in the accelerate "
            "config (or `trl-r1 run --num_processes N`); `--cpu --num_processes N` starts one process.")
