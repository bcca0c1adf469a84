"""With vLLM installed, a section asking for vLLM that this vLLM cannot serve as trained stops the dry run (exit 2,
before any model loads) naming the fix, unless the section opts into `vllm_fallback: transformers`."""

import pytest
import yaml

from trl_r1.cli import run_main

ARITHMETIC = "trl_r1.toy.arithmetic:arithmetic_dataset"


def recipe(tmp_path, model, **rl):
    data = {"run_dir": str(tmp_path / "run"), "model": {"tiny": {"hidden_size": 64, "num_heads": 2}, **model},
            "training": {"use_cpu": True, "report_to": "none"},
            "rl": {"dataset_name": ARITHMETIC, "use_vllm": True, **rl}}
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("model, fix", [
    ({"load_in_4bit": False, "load_in_8bit": True}, "set load_in_8bit: false"),
    # the recipe's refusal comes before this machine's (a CPU vLLM has no 4-bit at all): fp4 itself is named
    ({"load_in_4bit": True, "bnb_4bit_quant_type": "fp4"}, "set bnb_4bit_quant_type: nf4"),
], ids=["8bit", "fp4"])
def test_vllm_asked_for_and_unservable_stops_the_dry_run_naming_the_fix(tmp_path, capsys, model, fix):
    assert run_main([recipe(tmp_path, model), "--dry-run"]) == 2
    err = capsys.readouterr().err
    [problem] = [line for line in err.splitlines() if "vLLM cannot generate here" in line]
    assert problem.startswith("  - rl (use_vllm: true): ") and fix in problem
    assert "vllm_fallback: transformers" in problem


def test_the_fallback_opted_into_runs_the_dry_run_and_names_the_backend(tmp_path, capsys):
    path = recipe(tmp_path, {"load_in_4bit": False, "load_in_8bit": True}, vllm_fallback="transformers")
    assert run_main([path, "--dry-run"]) == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("note: generation: rl: ")]
    assert line.startswith("note: generation: rl: transformers (vLLM has no in-flight 8-bit")
