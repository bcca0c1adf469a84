"""Distillation against a real OpenAI-compatible HTTP server (started here, serving the toy reasoner), with the
reasoning in a separate `reasoning_content` field or inline in <think> tags."""

import json

import pytest
import yaml

from trl_r1.data import DistillationConfig, distill
from trl_r1.data.distillation import main
from trl_r1.toy.openai_server import OpenAICompatibleServer
from trl_r1.toy.toy_reasoner import toy_prompts
from trl_r1.verifiers.format import check_strict, extract_reasoning
from trl_r1.verifiers.math import verify


@pytest.mark.parametrize("reasoning_parser", [True, False], ids=["reasoning_content", "inline_think"])
def test_distill_from_a_served_teacher_with_gold_verification(toy_reasoner, tmp_path, reasoning_parser):
    with OpenAICompatibleServer(toy_reasoner, reasoning_parser=reasoning_parser, model_name="toy-teacher") as server:
        config = DistillationConfig(model_name_or_path="toy-teacher", base_url=server.base_url,
                                    output_dir=str(tmp_path), rewards=["math"], num_samples=4, max_new_tokens=32,
                                    target_lang="en")
        result = distill(config, toy_prompts())
        assert server.requests_served == 12  # one request per prompt, n=4 each
    stats = result.stats
    assert stats["generated"] == 48 and 0 < stats["accepted"] < 48
    assert stats["rejections"]["incorrect:math_accuracy_reward"] > 0
    for row in result.dataset:
        content = row["messages"][-1]["content"]
        # normalised: reasoning in one think block, then the answer, whichever way the server sent it
        assert content.startswith("<think>") and content.count("</think>") == 1
        assert check_strict(content).ok and verify(row["solution"], content)
        assert extract_reasoning(content).strip()
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["kind"] == "distillation" and run["model"]["backend"] == "openai"
    assert run["generation"] == {"num_samples": 4, "max_new_tokens": 32, "temperature": 0.6, "top_p": 0.95}


def test_distill_without_gold_keeps_well_formed_traces(toy_reasoner, tmp_path):
    """The CLI with a YAML config and no reward: every well-formed, readable trace is kept, right or wrong."""
    (tmp_path / "prompts.jsonl").write_text("".join(json.dumps({"prompt": p["prompt"]}) + "\n"
                                                    for p in toy_prompts().select(range(6))))
    with OpenAICompatibleServer(toy_reasoner, reasoning_parser=True, model_name="toy-teacher") as server:
        (tmp_path / "distill.yaml").write_text(yaml.safe_dump({
            "model_name_or_path": "toy-teacher", "base_url": server.base_url,
            "dataset_name": str(tmp_path / "prompts.jsonl"), "output_dir": str(tmp_path / "out"),
            "num_samples": 2, "max_new_tokens": 32, "dedup_threshold": None, "min_language_consistency": None,
        }))
        assert main(["--config", str(tmp_path / "distill.yaml"), "--temperature", "1.0"]) == 0
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["generated"] == 12 and stats["accepted"] == stats["passed"] == 12 - stats["rejections"]["malformed"]
    assert list(stats["rejections"]) == ["malformed", "long_paragraph", "code_in_reasoning"]
    rows = [json.loads(line) for line in (tmp_path / "out" / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == stats["accepted"] and all(set(r) == {"messages"} for r in rows)
    assert json.loads((tmp_path / "out" / "run.json").read_text())["generation"]["temperature"] == 1.0
