"""Issue 35 (a user's first run, round 3), the dataset builders and the one-stage commands: a push checked before
generating, --export-only and --license (item 10), a served teacher still loading (11), the long prompt that
killed rejection sampling (3), solution_column and push_to_hub (13), LoRA at full fine-tuning's rate (8),
the model card's recipe and license, merge progress (9)."""

import json
import logging
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from trl_r1.cli import main
from trl_r1.cli import free_port
from trl_r1.toy.toy_reasoner import toy_prompts

SMALL = ["--num_samples", "2", "--max_new_tokens", "16", "--batch_size", "4"]


def _prompts(tmp_path, rows=None, suffix="jsonl"):
    dataset = rows if rows is not None else toy_prompts().select(range(4))
    path = tmp_path / f"prompts.{suffix}"
    dataset.to_csv(path) if suffix == "csv" else dataset.to_json(path)
    return path


def _card_metadata(path):
    return yaml.safe_load(path.read_text().split("---\n", 2)[1])


# --------------------------------------------------------------------------------------------- item 10


def test_a_push_that_cannot_happen_is_refused_before_generating(toy_reasoner, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    out = tmp_path / "rs"
    argv = ["rejection-sample", "--model_name_or_path", toy_reasoner, "--dataset_name", str(_prompts(tmp_path)),
            "--output_dir", str(out), "--hub_dataset_id", "me/data", *SMALL]
    started = time.perf_counter()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "hub_dataset_id: cannot push to 'me/data'" in err and "HF_HUB_OFFLINE" in err and "--export-only" in err
    assert "Traceback" not in err and not (out / "records.jsonl").exists()  # nothing was generated
    assert time.perf_counter() - started < 20


def test_export_only_writes_the_upload_with_the_models_license_or_the_one_given(toy_reasoner, tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)  # export-only never needs the Hub
    llama = tmp_path / "Llama-3.2-1B-Instruct-tiny"  # a Llama-3.2 derivative: its data carry Meta's license
    shutil.copytree(toy_reasoner, llama)
    prompts = _prompts(tmp_path)
    out = tmp_path / "rs"
    argv = ["rejection-sample", "--model_name_or_path", str(llama), "--dataset_name", str(prompts),
            "--output_dir", str(out), "--hub_dataset_id", "me/data", "--export-only", *SMALL]
    assert main(argv) == 0
    assert _card_metadata(out / "hub" / "README.md")["license"] == "llama3.2"
    assert (out / "hub" / "data" / "train-00000-of-00001.parquet").is_file()
    assert main([*argv, "--license", "mit"]) == 0  # a restart with another license: the export follows it
    assert _card_metadata(out / "hub" / "README.md")["license"] == "mit"


def test_licenses_follow_the_base_model():
    from trl_r1.data.hub import model_license

    assert model_license("meta-llama/Llama-3.2-3B-Instruct") == "llama3.2"
    assert model_license("Qwen/Qwen2.5-3B-Instruct") == "qwen-research"
    assert model_license("Qwen/Qwen2.5-32B-Instruct") == "apache-2.0"
    assert model_license("Qwen/Qwen2.5-1.5B-Instruct") == "apache-2.0"


# --------------------------------------------------------------------------------------------- item 11


def test_distill_waits_for_a_server_that_starts_late(tiny_model_dir, tmp_path, caplog):
    """The docs/data.md example: the server is started in the background and `trl-r1 distill` at once. The
    server (a subprocess) starts listening seconds later; distill waits for it instead of retrying into a
    traceback, and logs no retry WARNING."""
    port = free_port()
    go = tmp_path / "go"  # the server loads once distill says it waits (a fixed 4 s delay raced distill's start)
    server = subprocess.Popen(
        [sys.executable, "-c", f"import os, time, sys\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
         f"from trl_r1.toy.openai_server import main; sys.exit(main([{str(tiny_model_dir)!r}, '--port', '{port}']))"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    class StartTheServer(logging.Handler):
        def emit(self, record):
            if "waiting for the server" in record.getMessage():
                go.touch()

    start_the_server = StartTheServer()
    logging.getLogger().addHandler(start_the_server)
    try:
        out = tmp_path / "distill"
        argv = ["distill", "--model_name_or_path", str(tiny_model_dir), "--base_url",
                f"http://127.0.0.1:{port}/v1", "--dataset_name", str(_prompts(tmp_path)), "--max_new_tokens", "8",
                "--output_dir", str(out), "--server_timeout_s", "120", "--max_retries", "1"]
        with caplog.at_level(logging.INFO):
            assert main(argv) == 0
    finally:
        logging.getLogger().removeHandler(start_the_server)
        server.terminate()
        server.wait(timeout=30)
    assert json.loads((out / "stats.json").read_text())["generated"] == 4
    assert any("waiting for the server" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "retry" in r.getMessage()]


def test_a_server_that_never_answers_is_one_clear_line(tmp_path, capsys):
    argv = ["distill", "--model_name_or_path", "teacher", "--base_url", f"http://127.0.0.1:{free_port()}/v1",
            "--dataset_name", str(_prompts(tmp_path)), "--output_dir", str(tmp_path / "d"),
            "--server_timeout_s", "3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "base_url: the server at" in err and "did not answer within 3s" in err and "Traceback" not in err


def test_a_base_url_without_v1_is_named_before_any_request(tiny_model_dir, tmp_path, capsys):
    """A new user's slip: `--base_url http://host:8000` (no /v1) made every request a 404, each prompt skipped."""
    from trl_r1.toy.openai_server import OpenAICompatibleServer

    with OpenAICompatibleServer(str(tiny_model_dir)) as server:
        root = server.base_url.removesuffix("/v1")
        argv = ["distill", "--model_name_or_path", str(tiny_model_dir), "--base_url", root, "--dataset_name",
                str(_prompts(tmp_path)), "--output_dir", str(tmp_path / "d"), "--max_new_tokens", "8"]
        assert main(argv) == 2
        assert server.requests_served == 0
    err = capsys.readouterr().err
    assert f"base_url: {root}/models answers HTTP 404" in err and f"(base_url {root}/v1)" in err


# --------------------------------------------------------------------------------------------- item 3 (builders)


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_prompt_over_the_budget_is_skipped_and_counted(tiny_model_dir, tmp_path, suffix, caplog):
    from datasets import Dataset

    rows = Dataset.from_list([{"prompt": "What is 2 + 3?", "solution": "5"},
                              {"prompt": "Sum these: " + " + ".join(["7"] * 3000), "solution": "21000"},
                              {"prompt": "What is 4 + 4?", "solution": "8"}])
    out = tmp_path / "rs"
    argv = ["rejection-sample", "--model_name_or_path", str(tiny_model_dir), "--dataset_name",
            str(_prompts(tmp_path, rows, suffix)), "--output_dir", str(out), "--max_prompt_tokens", "512", *SMALL]
    with caplog.at_level(logging.WARNING):
        assert main(argv) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["prompts_too_long"] == 1 and stats["generated"] == 4  # the two short prompts, 2 samples each
    lines = [r.getMessage() for r in caplog.records if "max_prompt_tokens" in r.getMessage()]
    assert any("prompt 1 has" in line and "skipped, not cut" in line for line in lines)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [r.get("prompt_too_long", False) for r in sorted(records, key=lambda r: r["index"])] == [False, True, False]


def test_long_prompts_split_the_generate_call_instead_of_padding_the_batch(tiny_model_dir, tmp_path):
    """batch_size is sized for 512-token prompts: two prompts of ~650 tokens in one batch of 2 go one per call
    (2 x (650 + 8) tokens > 2 x (512 + 8)), two short ones together."""
    from datasets import Dataset

    from trl_r1.data import RejectionSamplingConfig
    from trl_r1.data.generation import load_generator
    from trl_r1.data.rejection_sampling import build_sft_dataset

    generator = load_generator("transformers", str(tiny_model_dir))
    calls = []
    generate = generator.generate
    generator.generate = lambda prompts, params, seed: calls.append(len(prompts)) or generate(prompts, params, seed)
    long = "Sum these: " + " + ".join(["7"] * 320)
    rows = Dataset.from_list([{"prompt": p, "solution": "1"} for p in ["1 + 0?", "0 + 1?", long, long, "1 * 1?"]])
    config = RejectionSamplingConfig(model_name_or_path=str(tiny_model_dir), output_dir=str(tmp_path / "rs"),
                                     num_samples=2, max_new_tokens=8, batch_size=2, rewards=[])
    try:
        build_sft_dataset(config, rows, generator=generator)
    finally:
        generator.close()
    assert calls == [2, 1, 1, 1]


# --------------------------------------------------------------------------------------------- item 13


def test_rejection_sample_takes_solution_column(toy_reasoner, tmp_path):
    rows = toy_prompts().select(range(8)).rename_column("solution", "gold")
    out = tmp_path / "rs"
    argv = ["rejection-sample", "--model_name_or_path", toy_reasoner, "--dataset_name", str(_prompts(tmp_path, rows)),
            "--output_dir", str(out), "--solution_column", "gold", "--num_samples", "4", "--max_new_tokens", "24"]
    assert main(argv) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["accepted"] > 0 and "unverified" not in stats["rejections"]  # the gold answers were read


def test_sft_push_to_hub_without_a_repo_or_token_is_one_clear_line(tiny_model_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct", "dataset_name": "d.jsonl",
                                      "output_dir": str(tmp_path / "out"), "push_to_hub": True}))
    assert main(["sft", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "push_to_hub: true needs hub_model_id" in err and "invalid recipe" not in err
    assert main(["sft", "--config", str(config), "--hub_model_id", "me/m"]) == 2
    assert "cannot push to 'me/m': the Hub is switched off here" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------- item 8


@pytest.mark.parametrize("command, rate, lora_rate", [("grpo", "1e-06", "1e-05"), ("sft", "2e-05", "0.0002")])
def test_lora_at_trls_full_fine_tuning_rate_warns_once(command, rate, lora_rate, tiny_model_dir, tmp_path, caplog):
    data = _prompts(tmp_path)
    config = tmp_path / "stage.yaml"
    config.write_text(yaml.safe_dump({"model_name_or_path": str(tiny_model_dir), "dataset_name": str(data),
                                      "output_dir": str(tmp_path / "out")}))
    with caplog.at_level(logging.WARNING):
        main([command, "--config", str(config), "--dry-run", "--card", "24"])
    warnings = [r.getMessage() for r in caplog.records if "full fine-tuning learning rate" in r.getMessage()]
    assert len(warnings) == 1 and f"rate {rate}" in warnings[0] and f"--learning_rate {lora_rate}" in warnings[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        main([command, "--config", str(config), "--dry-run", "--card", "24", "--learning_rate", rate])
    assert not [r for r in caplog.records if "full fine-tuning learning rate" in r.getMessage()]  # the user chose it


# --------------------------------------------------------------------------------------------- model card, merges


def test_the_model_card_names_the_recipe_file_and_merges_show_progress(tmp_path, capfd):
    from trl_r1.pipeline import run_recipe

    recipe = tmp_path / "my-recipe.yaml"
    recipe.write_text(yaml.safe_dump({
        "run_dir": str(tmp_path / "run"),
        "model": {"tiny": {}, "load_in_4bit": False, "use_peft": True, "lora_r": 4, "dtype": "float32"},
        "training": {"use_cpu": True, "report_to": "none", "disable_tqdm": True, "save_strategy": "no"},
        "cold_start": {"dataset_name": "trl_r1.toy.arithmetic:cold_start_dataset", "dataset_kwargs": {"num_rows": 4},
                       "max_steps": 1, "per_device_train_batch_size": 4, "max_length": 64}}, sort_keys=False))
    run_recipe(str(recipe), echo=lambda _: None)
    assert "Unloading and merging model" in capfd.readouterr().err  # the adapter merge's progress bar
    assert main(["publish", str(recipe), "--repo-id", "me/tiny-r1", "--export-only", "--set",
                 "cold_start.max_steps=1"]) == 0
    card = (tmp_path / "run" / "hub" / "README.md").read_text()
    assert f"**Recipe:** `{recipe}`" in card and "(a mapping)" not in card
    assert _card_metadata(tmp_path / "run" / "hub" / "README.md")["license"] == "apache-2.0"
