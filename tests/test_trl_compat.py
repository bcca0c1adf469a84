"""The TRL seam: it refuses an unsupported TRL version with a clear message, and it is the only module that touches
TRL's private API (its numerical contract is the parity tests in test_grpo_trainer.py)."""

import re
from pathlib import Path

import pytest
import trl

from trl_r1.trainers import trl_compat

PACKAGE = Path(trl_compat.__file__).resolve().parents[1]
# Private members of TRL's GRPOTrainer / transformers' Trainer that trl_r1 relies on (used, or set in a class body
# as TRL's model-card attributes are), the private parameter of `Trainer.save_model`, and TRL's private modules.
MODEL_CARD = r"_(tag_names|name|paper|template_file)\b"
PRIVATE = re.compile(
    r"\._(metrics|logs|is_vlm|calculate_rewards|generate_and_score_completions|compute_loss|get_per_token_logps"
    r"|save_checkpoint|load_from_checkpoint|load_optimizer_and_scheduler|get_output_dir|keys_to_ignore_on_save"
    r"|name_or_path)\b|current_gradient_accumulation_steps|trl\.(trainer|models|scripts)\.utils"
    r"|chat_template_utils|[\"']chat_templates[\"']"
    rf"|\.{MODEL_CARD}|^[ \t]+{MODEL_CARD}\s*[:=]|[\"']{MODEL_CARD}[\"']|\b_internal_call\b",
    re.MULTILINE,
)
TRAINER_BETA = re.compile(r"self\.beta\b")  # the trainer's KL switch (a config's `beta` is a public field)


@pytest.mark.parametrize("version", ["1.15.2", "1.17.0", "2.0.0"])
def test_unsupported_trl_versions_are_refused_with_the_supported_range(version):
    with pytest.raises(ImportError, match=rf"supports trl>=1\.16\.0,<1\.17\.0 \(found {re.escape(version)}\).*pip install"):
        trl_compat.check_trl_version(version)


def test_the_installed_trl_is_supported():
    trl_compat.check_trl_version(trl.__version__)


def test_only_the_seam_touches_trl_private_members():
    def private_uses(path):
        found = {m.group(0) for m in PRIVATE.finditer(path.read_text())}
        if path.name.endswith("_trainer.py"):
            found |= {m.group(0) for m in TRAINER_BETA.finditer(path.read_text())}
        return sorted(found)

    offenders = {
        str(path.relative_to(PACKAGE)): private_uses(path)
        for path in PACKAGE.rglob("*.py")  # the whole package: the pipeline and builders go through the seam too
        if path.name != "trl_compat.py"
    }
    assert {path: found for path, found in offenders.items() if found} == {}
    assert PRIVATE.search(Path(trl_compat.__file__).read_text())  # the pattern does find them where they are
