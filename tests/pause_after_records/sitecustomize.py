"""Loaded by every Python process started with this folder on its PYTHONPATH (tests that kill a run mid-sampling).

With `TRL_R1_TEST_PAUSE_AFTER_RECORDS=N`, the process that samples (the only one, or the main rank, `LOCAL_RANK=0`)
stops itself (SIGSTOP) once `records.jsonl` holds N records, so a test can kill it, or the other rank, at a known
point of the sampling on a machine of any speed (a fast one sampled every prompt before a polling test could react).
"""

import os
import signal

if os.environ.get("TRL_R1_TEST_PAUSE_AFTER_RECORDS") and os.environ.get("LOCAL_RANK", "0") == "0":
    from trl_r1.data import rejection_sampling

    _append = rejection_sampling.RecordStore.append
    _records = int(os.environ["TRL_R1_TEST_PAUSE_AFTER_RECORDS"])

    def append(self, records):
        _append(self, records)
        if self.path.read_text(encoding="utf-8").count("\n") >= _records:
            os.kill(os.getpid(), signal.SIGSTOP)

    rejection_sampling.RecordStore.append = append
