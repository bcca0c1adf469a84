"""Issue 35, round 4: what the blind new-user rounds (red teams 5 and 6) found and the fixer's own tries
(interrupt and resume, builders on bad files, two runs at once). Each test failed on the main of its round."""

import pytest

from tests.conftest import dry_run, passes, recipe


def test_a_misspelt_bare_model_name_offline_fails_the_dry_run(workdir, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, problems, _ = dry_run(capsys, recipe(model={"model_name_or_path": "tinyy"}))
    assert code == 2 and len(problems) == 1, (code, problems)
    assert "model_name_or_path" in problems[0] and "'tinyy'" in problems[0] and "offline" in problems[0], problems
    assert "did you mean the folder 'tiny'" in problems[0], problems


def test_an_org_model_id_offline_still_plans(workdir, capsys, monkeypatch):
    """A Hub id 'org/name' offline is a laptop planning a run that downloads it on the GPU machine: a note only."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = passes(capsys, recipe(model={"model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}, evaluation=None))
    assert "Qwen/Qwen2.5-0.5B-Instruct" in plan
