"""Issue 34: the fingerprint reads what the recipe filled in for a stage (`StagePlan.filled`), not a hand list: a key
written at the value the pipeline gives it changes nothing, one written at its class default (which the pipeline
does not use) redoes the stage."""

import pytest

from trl_r1.pipeline import load_recipe
from tests.conftest import recipe


def fingerprints(**sections) -> dict[str, str]:
    data = recipe(evaluation=None, model={"load_in_4bit": True, "use_peft": True}, **sections)
    data["training"]["use_cpu"] = True
    return {plan.name: plan.fingerprint for plan in load_recipe(data, check_hardware=False).stages}


def test_the_recipe_records_what_it_filled_in():
    plans = {p.name: p for p in load_recipe(recipe(evaluation=None, model={"load_in_4bit": True, "use_peft": True},
                                                   rejection_sampling={}), check_hardware=False).stages}
    rl = plans["rl"]
    assert rl.filled["optim"] == rl.config.optim == "paged_adamw_8bit"
    assert rl.filled["output_dir"] == rl.config.output_dir
    assert plans["rejection_sampling"].filled["seed"] == plans["rejection_sampling"].config.seed == 42
    assert "optim" not in load_recipe(recipe(evaluation=None), check_hardware=False).stage("rl").filled  # not 4-bit


@pytest.mark.parametrize(("section", "written", "redoes"), [
    ("rl", {"optim": "paged_adamw_8bit"}, False),  # what a 4-bit stage holds without it
    ("rl", {"optim": "adamw_torch"}, True),  # TrainingArguments' default: not what the pipeline gives a 4-bit stage
    ("rl", {"activation_checkpointing": True}, False),
    ("rl", {"activation_checkpointing": False}, True),
    ("rl", {"gradient_checkpointing": True}, False),  # the name before transformers 5's rename
    ("rl", {"gradient_checkpointing": False}, True),
    ("rejection_sampling", {"seed": 42}, False),  # the run's seed
    ("rejection_sampling", {"seed": 0}, True),  # RejectionSamplingConfig's default, which the pipeline overrides
])
def test_a_key_written_at_what_the_pipeline_fills_in_redoes_nothing(section, written, redoes):
    before = fingerprints(rejection_sampling={})
    after = fingerprints(**{"rejection_sampling": {}, section: written})
    assert (after[section] != before[section]) == redoes, written
