"""Loaded by every Python process started with this folder first on its PYTHONPATH (see `tests/pause_points`).

The process that does the work (the only one, or the main rank, `LOCAL_RANK=0`) stops itself (SIGSTOP) at the event
its environment names, so a test acts on it (kill, Ctrl-C, a second run) at a known point on a machine of any speed
instead of polling a file while it keeps running (a fast machine finished the work before a polling test could react):

- `TRL_R1_TEST_PAUSE_AFTER_RECORDS=N`: once the rejection sampler's `records.jsonl` holds N records;
- `TRL_R1_TEST_PAUSE_AFTER_CHECKPOINT=rl/checkpoint-2`: once a trainer saved the checkpoint whose path ends so, whole
  (after its callbacks' `on_save`);
- `TRL_R1_TEST_PAUSE_AFTER_RUN_LOCK=1`: once the run holds its run directory's lock.

Each patch is applied when its module is first imported, so a process that never imports it starts as fast as ever.
"""

import importlib.abc
import importlib.util
import os
import signal
import sys
from types import ModuleType
from typing import Callable


def _pause() -> None:
    os.kill(os.getpid(), signal.SIGSTOP)


def _when_imported(name: str, patch: Callable[[ModuleType], None]) -> None:
    """Run `patch(module)` right after module `name` is first executed."""

    class PatchOnImport(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            execute = spec.loader.exec_module

            def execute_then_patch(module):
                execute(module)
                patch(module)

            spec.loader.exec_module = execute_then_patch
            return spec

    sys.meta_path.insert(0, PatchOnImport())


def _pause_after_records(records: int) -> Callable[[ModuleType], None]:
    def patch(module: ModuleType) -> None:
        append = module.RecordStore.append

        def append_then_pause(self, batch):
            append(self, batch)
            if self.path.read_text(encoding="utf-8").count("\n") >= records:
                _pause()

        module.RecordStore.append = append_then_pause

    return patch


def _pause_after_checkpoint(tail: str) -> Callable[[ModuleType], None]:
    def patch(module: ModuleType) -> None:
        on_save = module.CallbackHandler.on_save

        def on_save_then_pause(self, args, state, control):
            control = on_save(self, args, state, control)
            if os.path.join(os.path.abspath(args.output_dir), f"checkpoint-{state.global_step}").endswith(os.sep + tail):
                _pause()
            return control

        module.CallbackHandler.on_save = on_save_then_pause

    return patch


def _pause_after_run_lock(module: ModuleType) -> None:
    acquire = module.RunDirLock.acquire

    def acquire_then_pause(self):
        acquire(self)
        _pause()

    module.RunDirLock.acquire = acquire_then_pause


if os.environ.get("LOCAL_RANK", "0") == "0":
    if os.environ.get("TRL_R1_TEST_PAUSE_AFTER_RECORDS"):
        _when_imported("trl_r1.data.rejection_sampling",
                       _pause_after_records(int(os.environ["TRL_R1_TEST_PAUSE_AFTER_RECORDS"])))
    if os.environ.get("TRL_R1_TEST_PAUSE_AFTER_CHECKPOINT"):
        _when_imported("transformers.trainer_callback",
                       _pause_after_checkpoint(os.environ["TRL_R1_TEST_PAUSE_AFTER_CHECKPOINT"]))
    if os.environ.get("TRL_R1_TEST_PAUSE_AFTER_RUN_LOCK"):
        _when_imported("trl_r1.pipeline.run_lock", _pause_after_run_lock)
