"""Start a trl-r1 process that stops itself at a named event (the `sitecustomize` beside this file), and wait for it.

A test that acts on a running process (kill it, Ctrl-C it, start a second run beside it) waits for the event instead
of polling a file while the process keeps running, so the outcome is the same on a machine of any speed or load.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil

FOLDER = Path(__file__).resolve().parent
ROOT = FOLDER.parents[1]


def pausing_env(**events: int | str) -> dict[str, str]:
    """The environment of a process that pauses after `records=N`, `checkpoint="rl/checkpoint-2"` or `run_lock=1`
    (this checkout next on its PYTHONPATH, so that it imports this code).

    >>> env = pausing_env(checkpoint="rl/checkpoint-2")
    >>> env["TRL_R1_TEST_PAUSE_AFTER_CHECKPOINT"], env["PYTHONPATH"].split(os.pathsep)[1] == str(ROOT)
    ('rl/checkpoint-2', True)
    """
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(FOLDER), str(ROOT)])}
    env.update({f"TRL_R1_TEST_PAUSE_AFTER_{event.upper()}": str(value) for event, value in events.items()})
    return env


def wait_until_paused(process: subprocess.Popen, timeout_s: float = 600) -> None:
    """Return once `process` stopped itself at its event; fail if it ended first. `timeout_s` only turns a hang into
    a message (pytest's own limit is 900 s), it is no bound on the machine's speed."""
    deadline = time.monotonic() + timeout_s
    while psutil.Process(process.pid).status() != psutil.STATUS_STOPPED:
        if process.poll() is not None:
            output = process.communicate()[0] if process.stdout else ""
            raise AssertionError(f"the process ended (exit {process.returncode}) before its pause point\n"
                                 f"{(output or '')[-3000:]}")
        assert time.monotonic() < deadline, f"no pause point in {timeout_s} s"
        time.sleep(0.05)
