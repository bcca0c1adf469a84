"""One run at a time in a run directory: two `trl-r1 run`s into the same `run_dir` would both train each stage,
write the same checkpoints and records and move each other's outputs aside. The main process holds an exclusive
`flock` on `.<name>.trl-r1.lock` beside the run directory (not in it: a one-stage command's run directory is its
output folder, which a redone stage moves aside) from before it reads the stages' status until the run ends; the
kernel drops it when the process ends however it ends (a SIGKILLed run leaves no stale lock), and a second run
refuses at once, naming the run directory and the process that holds it. Where the lock cannot be written (a
read-only place, a run_dir under a file) the preflight names the real problem.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from .stages import StageError



class RunDirInUse(StageError):
    """Another process runs in this run directory (a stage error: exit 1, one line)."""


class RunDirLock:
    """The run directory's lock, held from `acquire` to `release` (or the end of the process).

    >>> import tempfile
    >>> run_dir = Path(tempfile.mkdtemp())
    >>> first, second = RunDirLock(run_dir), RunDirLock(run_dir)
    >>> first.acquire()
    >>> second.acquire()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    trl_r1.pipeline.run_lock.RunDirInUse: run_dir ... is in use by another trl-r1 run (pid ...
    >>> first.release(); second.acquire(); second.release()
    """

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self._fd: int | None = None

    def acquire(self) -> None:
        path = self.run_dir.resolve()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path.parent / f".{path.name}.trl-r1.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "a process"
            os.close(fd)
            raise RunDirInUse(f"run_dir {self.run_dir} is in use by another trl-r1 run ({holder}); wait for it to "
                              "end (rerunning the same command then resumes where it stopped), or give this run "
                              "another run_dir (--run-dir)") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock; the file stays (removing it would race a new holder)
            self._fd = None
