"""Which checkpoint a stage resumes from: the newest one that was saved whole. The Trainer writes a checkpoint's
files one after the other and `trainer_state.json` last, so a run killed or interrupted while saving leaves a
newest `checkpoint-N` without it, from which `Trainer.train(resume_from_checkpoint=...)` fails with a traceback
(transformers' `get_last_checkpoint` takes the highest number, whole or not). The stage resumes from the last
whole one instead and saves `checkpoint-N` again over the cut one."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

logger = logging.getLogger("trl_r1.pipeline")

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")  # as transformers.trainer_utils names them


def last_complete_checkpoint(folder: Path) -> str | None:
    """The newest `checkpoint-N` under `folder` whose trainer_state.json reads; None when there is none. Logs the
    newer ones it passes over (cut while saving).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for step, state in ((2, "{}"), (3, None), (4, '{"glo')):
    ...     (folder / f"checkpoint-{step}").mkdir()
    ...     if state is not None:
    ...         _ = (folder / f"checkpoint-{step}" / "trainer_state.json").write_text(state)
    >>> Path(last_complete_checkpoint(folder)).name
    'checkpoint-2'
    """
    if not folder.is_dir():
        return None
    numbered = sorted(((int(m.group(1)), path) for path in folder.iterdir()
                       if (m := _CHECKPOINT.match(path.name)) and path.is_dir()), reverse=True)
    cut = []
    for _, path in numbered:
        try:
            json.loads((path / "trainer_state.json").read_text())
        except (OSError, ValueError):
            cut.append(path.name)
            continue
        if cut:
            logger.warning("%s: %s cut while saving (no readable trainer_state.json); resuming from %s, which "
                           "saves %s again", folder, ", ".join(cut), path.name, cut[-1])
        return str(path)
    return None
