"""Setting a resource limit without ever raising a hard one (standard library only).

Used by the judge and by the sandbox's supervisor. The sandbox cannot import this package, so ``sandbox.py``
compiles this file's text into the supervisor's script, after ``protocol.py``'s and before ``supervisor.py``'s.
"""

import resource


def lower_limit(kind, wanted, lock=False):
    """Set the soft limit `kind` to `wanted`, or to the hard limit this process inherited when that is lower.

    Only a privileged process may raise a hard limit, so under ``ulimit -v`` or a scheduler's cap asking for
    more raised ValueError; the inherited limit already holds. With `lock` the hard limit comes down too, so
    that the process cannot raise its soft limit back. Returns the limit now in force.
    """
    hard = resource.getrlimit(kind)[1]
    value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(kind, (value, value if lock else hard))
    return value
