"""Worker processes with a hard wall-clock limit per task, usable from any thread.

math-verify's SIGALRM timeouts work only in the main thread, have one-second granularity and cannot stop C-level
work (big-integer arithmetic, printing a power tower). Here each check runs in a worker process; a worker that
exceeds the limit is killed (SIGKILL stops any computation) and replaced, and only its task fails.

Workers are fresh interpreters (``python -c "...; _serve(target, memory)"``) talking over pipes, not
`multiprocessing` children: nothing of the caller is inherited (threads, CUDA, locks) and the caller's script is
never re-imported, so no ``if __name__ == "__main__"`` guard is needed. The pool keeps one spare worker booted, so
a timeout does not make the next task wait for an interpreter to start.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

BOOT_TIMEOUT_S = 120.0  # a worker that is not ready by then is broken (import error, exhausted machine)
_READY = "ready"
_WORKER_MAIN = f"import sys; from {__name__} import _serve; _serve(sys.argv[1], int(sys.argv[2]))"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the directory holding `trl_r1`


def _serve(target: str, memory_limit_bytes: int) -> None:
    """Worker main: load `module:function`, then answer each task with ("ok", result) or ("error", reason)."""
    replies = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # stray prints of the checked code go to stderr, not into the reply pipe
    tasks = Connection(0, writable=False)
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    if memory_limit_bytes:
        _limit_memory(memory_limit_bytes)
    replies.send(_READY)
    while True:
        try:
            args = tasks.recv()
        except (EOFError, OSError):
            return
        try:
            message = ("ok", function(*args))
        except MemoryError:
            message = ("error", "out of memory")
        except RecursionError:
            message = ("error", "recursion too deep")
        except Exception as exc:  # a bug or a sympy failure costs this task only
            message = ("error", f"{type(exc).__name__}: {exc}"[:200])
        replies.send(message)


def _limit_memory(extra_bytes: int) -> None:
    """Cap the worker's address space at its current size plus `extra_bytes` (giant integers raise MemoryError).

    Only the soft limit is lowered, never above an inherited hard limit (``ulimit -v``, a scheduler's cap): an
    unprivileged process may not raise its hard limit, and a lower inherited limit already protects the node.
    """
    import resource

    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = current + extra_bytes
    for limit in (soft, hard):
        if limit != resource.RLIM_INFINITY:
            wanted = min(wanted, limit)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


class _Worker:
    def __init__(self, target: str, memory_limit_bytes: int):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")])))
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER_MAIN, target, str(memory_limit_bytes)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
        )
        self.tasks = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.replies = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self.ready = False
        self.started = time.monotonic()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.tasks.close()
        self.replies.close()


class WorkerPool:
    """Run ``module:function(*args)`` for many tasks on `workers` processes, each task under a hard `timeout_s`.

    `run` returns, per task, ("ok", result), ("timeout", reason) or ("error", reason), in task order. It is
    thread-safe (calls are serialised) and starts the workers on first use. A pool owns processes and is not
    picklable: reach it through a module-level accessor, as `trl_r1.verifiers.math` does.

    >>> pool = WorkerPool("operator:add", workers=1)
    >>> pool.run([(1, 2), ("a", 1)], timeout_s=60)
    [('ok', 3), ('error', 'TypeError: can only concatenate str (not "int") to str')]
    >>> pool.close()
    """

    def __init__(self, target: str, workers: int, memory_limit_bytes: int = 2 << 30):
        self.target = target
        self.workers = max(1, int(workers))
        self.memory_limit_bytes = memory_limit_bytes
        self._pool: list[_Worker] = []
        self._spare: _Worker | None = None
        self._lock = threading.Lock()

    def _replace(self, worker: _Worker) -> None:
        """Kill a worker and put the spare in its place; boot a new spare (ready by the next timeout)."""
        worker.kill()
        self._pool[self._pool.index(worker)] = self._spare
        self._spare = _Worker(self.target, self.memory_limit_bytes)

    def run(self, tasks: list[tuple], timeout_s: float) -> list[tuple[str, Any]]:
        with self._lock:
            while len(self._pool) < self.workers:
                self._pool.append(_Worker(self.target, self.memory_limit_bytes))
            if self._spare is None:
                self._spare = _Worker(self.target, self.memory_limit_bytes)
            results: list[tuple[str, Any] | None] = [None] * len(tasks)
            queue = deque(range(len(tasks)))
            running: dict[_Worker, tuple[int, float]] = {}
            while queue or running:
                for worker in list(self._pool):
                    if queue and worker.ready and worker not in running:
                        index = queue.popleft()
                        try:
                            worker.tasks.send(tasks[index])
                        except OSError:  # died while idle: retry the task on a new worker
                            queue.appendleft(index)
                            self._replace(worker)
                            continue
                        running[worker] = (index, time.monotonic() + timeout_s)
                self._collect(running, results)
                now = time.monotonic()
                for worker, (index, deadline) in list(running.items()):
                    if now >= deadline:
                        del running[worker]
                        results[index] = ("timeout", f"over the {timeout_s:g}s limit")
                        self._replace(worker)
            return results

    def _collect(self, running: dict, results: list) -> None:
        """Wait for the next message (a result, or a worker becoming ready) or the nearest deadline."""
        booting = [w for w in self._pool + [self._spare] if w is not None and not w.ready]
        deadlines = [deadline for _, deadline in running.values()] + [w.started + BOOT_TIMEOUT_S for w in booting]
        listening = {w.replies: w for w in booting + list(running)}
        for conn in wait(list(listening), timeout=max(0.0, min(deadlines) - time.monotonic())):
            worker = listening[conn]
            try:
                message = conn.recv()
            except (EOFError, OSError):
                if worker not in running:
                    raise RuntimeError(f"a math verifier worker failed to start: {self.target}") from None
                index, _ = running.pop(worker)
                self._replace(worker)  # reaps it, so its exit code is known
                results[index] = ("error", f"worker died (exit code {worker.process.returncode})")
                continue
            if message == _READY:
                worker.ready = True
            else:
                index, _ = running.pop(worker)
                results[index] = message
        if any(not w.ready and time.monotonic() > w.started + BOOT_TIMEOUT_S for w in booting):
            raise RuntimeError(f"a math verifier worker did not start within {BOOT_TIMEOUT_S:g}s")

    def close(self) -> None:
        with self._lock:
            for worker in self._pool + [self._spare]:
                if worker is not None:
                    worker.kill()
            self._pool.clear()
            self._spare = None
