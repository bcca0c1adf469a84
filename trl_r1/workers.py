"""How many worker processes a verifier pool may start on this node, shared by the math and code verifiers.

Under ``accelerate launch`` every rank on a node starts its own pools, so each rank takes its share of the
node's CPUs (``LOCAL_WORLD_SIZE`` ranks share them) instead of all of them. ``TRL_R1_NUM_WORKERS`` overrides
the figure for every pool of the process.
"""

from __future__ import annotations

import os


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which respects cgroups/taskset), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def local_world_size() -> int:
    """Processes of this job on this node, from the launcher's environment (1 outside a distributed launch)."""
    for key in ("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        value = os.environ.get(key, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def default_workers(share: float = 1.0, cap: int | None = None) -> int:
    """Workers for one pool: ``share`` of this rank's CPUs, capped, at least 1; ``TRL_R1_NUM_WORKERS`` wins.

    >>> import os; os.environ["TRL_R1_NUM_WORKERS"] = "3"; default_workers(share=0.5, cap=8)
    3
    >>> del os.environ["TRL_R1_NUM_WORKERS"]; default_workers(cap=1)
    1
    >>> os.environ["LOCAL_WORLD_SIZE"] = "2"  # two ranks on this node: each takes half of the CPUs
    >>> default_workers() == max(1, available_cpus() // 2)
    True
    >>> del os.environ["LOCAL_WORLD_SIZE"]; default_workers() == available_cpus()
    True
    """
    override = os.environ.get("TRL_R1_NUM_WORKERS", "")
    if override:
        if not override.isdigit() or int(override) < 1:
            raise ValueError(f"TRL_R1_NUM_WORKERS must be a positive integer, got {override!r}")
        return int(override)
    workers = int(available_cpus() / local_world_size() * share)
    if cap is not None:
        workers = min(workers, cap)
    return max(1, workers)
