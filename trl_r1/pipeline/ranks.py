"""The processes of one pipeline run: who is the main process, barriers, and work done once for all ranks.

Under `accelerate launch` (DDP or DeepSpeed, N processes) every rank runs the pipeline's loop. Training is
data-parallel (every rank trains, TRL's trainer shards the batches); everything that touches shared files or
should happen once (stage status, preflight, moving stage directories, building the tiny model, merging
adapters, evaluation, rejection sampling, records and the report) runs on the main process in `on_main`, whose
result (or error) is broadcast, so that all ranks leave it together, agree on it, and fail together.
Outside a distributed launch this is one process and costs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

# One world-size check, shared with the trainers (re-exported for the CLI and the pipeline).
from ..trainers.launch import WorldSizeError, check_world_size, intended_world_size  # noqa: F401


T = TypeVar("T")
# Main-process work (evaluation, rejection sampling) can take hours while the other ranks wait in a barrier.
WAIT_TIMEOUT = timedelta(hours=int(os.environ.get("TRL_R1_RANK_TIMEOUT_HOURS", "12")))


class Ranks:
    """This run's processes (accelerate's `PartialState` when launched with several), or just this one."""

    def __init__(self, planned: int = 1):
        self.num_processes, self.is_main, self.process_index = 1, True, 0
        self.planned = planned  # the processes a dry run plans for (`--num_processes N`), running in this one
        if intended_world_size() > 1:
            from accelerate import PartialState

            state = PartialState(timeout=WAIT_TIMEOUT)
            self.num_processes, self.is_main = state.num_processes, state.is_main_process
            self.process_index = state.process_index
        check_world_size(self.num_processes)

    @property
    def training_processes(self) -> int:
        """The processes the training stages run on: those running, or those a dry run plans for."""
        return max(self.num_processes, self.planned)

    @property
    def distributed(self) -> bool:
        return self.num_processes > 1

    def barrier(self) -> None:
        if self.distributed:
            import torch.distributed as dist

            dist.barrier()

    def broadcast(self, value: T) -> T:
        """The main process's `value` on every rank."""
        if not self.distributed:
            return value
        import torch.distributed as dist

        box = [value if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def on_main(self, work: Callable[[], T]) -> T:
        """Run `work` on the main process only; every rank returns its result or raises its error.

        The broadcast is the barrier: no rank goes on before the main process finished (its files are complete).
        An error is re-raised on the main process as it was and on the others as the same class when it takes one
        message (RecipeError lists, StageError), so every rank exits with the same code and one clear line.
        """
        outcome: tuple[str, Any] | None = None
        failure: BaseException | None = None
        if self.is_main:
            try:
                outcome = ("ok", work())
            except Exception as exc:
                if not self.distributed:
                    raise
                failure, outcome = exc, ("error", _portable(exc))
        outcome = self.broadcast(outcome)
        if outcome[0] == "ok":
            return outcome[1]
        raise failure if failure is not None else outcome[1]


def shut_down(*, succeeded: bool) -> None:
    """Leave the process group before the interpreter exits (no-op outside a distributed launch).

    Left to interpreter shutdown, gloo's and the TCP store's threads are torn down in no set order, and a rank
    can abort after its work is done ("terminate called without an active exception", SIGABRT), failing a run
    that succeeded. After a success every rank meets in a last barrier first, so none leaves while another
    still reads the last broadcast; after a failure the others may be gone, so each rank just leaves.
    """
    try:
        import torch.distributed as dist
    except ImportError:  # torch without distributed support: nothing was joined
        return
    if not (dist.is_available() and dist.is_initialized()):
        return
    if succeeded and dist.get_world_size() > 1:
        dist.barrier()
    dist.destroy_process_group()


def _portable(exc: Exception) -> Exception:
    """The error as the other ranks re-raise it: itself when it survives pickling, else a RuntimeError naming it."""
    import pickle

    try:
        copy = pickle.loads(pickle.dumps(exc))
        if str(copy) == str(exc):
            return copy
    except Exception:  # an exception holding unpicklable state
        pass
    return RuntimeError(f"the main process failed: {type(exc).__name__}: {exc}")
