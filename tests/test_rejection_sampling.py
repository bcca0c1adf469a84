"""Rejection sampling end to end on a real (briefly SFT-trained) tiny model with the real verifiers, the R1
filters' accounting, and a real `trl-r1 rejection-sample` subprocess killed with SIGKILL and restarted."""

import json
import signal
import subprocess
import sys
from collections import Counter

import pytest
import yaml
from datasets import Dataset

from tests.pause_points import pausing_env, wait_until_paused
from trl_r1.cli import main as cli_main
from trl_r1.data import R1Filters, RejectionSamplingConfig, Trace, parse_trace, rejection_sample
from trl_r1.data.filters import near_duplicates
from trl_r1.data.generation import Completion
from trl_r1.data.rejection_sampling import RecordStore, judge_batch, summarize
from trl_r1.rewards import get_reward_funcs
from trl_r1.toy.toy_reasoner import toy_prompts
from trl_r1.verifiers.format import check_strict
from trl_r1.verifiers.math import verify


def test_rejection_sampling_keeps_only_verified_readable_samples(toy_reasoner, tmp_path):
    config = RejectionSamplingConfig(
        model_name_or_path=toy_reasoner, output_dir=str(tmp_path / "rs"), rewards=["math", "format"],
        num_samples=6, max_new_tokens=32, batch_size=6, max_per_prompt=2, target_lang="en",
    )
    result = rejection_sample(config, toy_prompts())
    stats = result.stats
    assert stats["num_prompts"] == 12 and stats["generated"] == 72
    assert stats["accepted"] == len(result.dataset) > 0
    assert stats["generated"] == stats["accepted"] + sum(stats["rejections"].values())
    assert stats["rejections"]["incorrect:math_accuracy_reward"] > 0  # the toy model is often wrong
    assert list(stats["rejections"])[:1] == ["malformed"] and "near_duplicate" in stats["rejections"]
    for row in result.dataset:
        user, assistant = row["messages"]
        assert user["role"] == "user" and assistant["role"] == "assistant"
        assert check_strict(assistant["content"]).ok
        assert verify(row["solution"], assistant["content"])
    per_prompt = Counter(row["messages"][0]["content"] for row in result.dataset)
    assert max(per_prompt.values()) <= 2
    for prompt in per_prompt:
        texts = [r["messages"][1]["content"] for r in result.dataset if r["messages"][0]["content"] == prompt]
        assert not any(near_duplicates(texts, 0.9))
    # per-prompt pass rates: the difficulty signal for the next RL round
    rates = result.prompt_stats["pass_rate"]
    assert len(rates) == 12 and all(0 <= r <= 1 for r in rates)
    assert sum(result.prompt_stats["num_passed"]) == stats["passed"]
    assert list(result.prompt_stats["solution"]) == list(toy_prompts()["solution"])
    # the files on disk are the same data
    on_disk = [json.loads(line) for line in (tmp_path / "rs" / "sft.jsonl").read_text().splitlines()]
    assert on_disk == result.dataset.to_list()
    # and TRL's SFTTrainer takes the output as it is
    from trl import SFTConfig, SFTTrainer

    trainer = SFTTrainer(model=toy_reasoner, train_dataset=result.dataset, args=SFTConfig(
        output_dir=str(tmp_path / "sft"), max_steps=1, per_device_train_batch_size=2, use_cpu=True, bf16=False,
        report_to="none", save_strategy="no", assistant_only_loss=True, disable_tqdm=True))
    assert trainer.train().training_loss > 0


def test_finished_run_is_not_redone_and_settings_are_checked(toy_reasoner, tmp_path):
    config = RejectionSamplingConfig(model_name_or_path=toy_reasoner, output_dir=str(tmp_path), rewards=["format"],
                                     num_samples=2, max_new_tokens=24, min_language_consistency=None)
    dataset = toy_prompts().select(range(3))
    first = rejection_sample(config, dataset)
    records = (tmp_path / "records.jsonl").read_text()
    again = rejection_sample(RejectionSamplingConfig(**{**config.__dict__, "backend": "openai"}), dataset)
    assert (tmp_path / "records.jsonl").read_text() == records  # nothing regenerated (no server was needed)
    assert again.dataset.to_list() == first.dataset.to_list()
    with pytest.raises(ValueError, match="different settings.*num_samples"):
        rejection_sample(RejectionSamplingConfig(**{**config.__dict__, "num_samples": 3}), dataset)


def _judge(completions, rewards=("math", "format"), **options):
    config = RejectionSamplingConfig(model_name_or_path="m", output_dir="unused", rewards=list(rewards),
                                     target_lang="en", **options)
    rows = [{"prompt": [{"role": "user", "content": "What is 2 + 3?"}], "answer": "5"}]
    (record,) = judge_batch(config, rows, [[Completion(c) for c in completions]], get_reward_funcs(config.rewards))
    return record


def test_each_filter_counts_its_rejections():
    long_paragraph = "<think>" + "2 plus 3 is 5. " * 200 + "</think>\n<answer>5</answer>"
    record = _judge([
        "<think>2 plus 3 is 5.</think>\n<answer>5</answer>",  # kept
        "<think>2 plus 3 is 5.</think>\n<answer>5</answer>",  # near-duplicate of the first
        "<think>2 plus 3 is 6.</think>\n<answer>6</answer>",  # incorrect
        "<think>2 plus 3 is",  # malformed (truncated)
        "<think>2 plus 3 is 5.</think> 5 <answer>5</answer>",  # correct but not the strict format
        "<think>Two plus three. 我们来一步一步地思考这个问题，答案是五。</think>\n<answer>5</answer>",  # mixed
        long_paragraph,
        "<think>Let me check:\n```python\nprint(2 + 3)\n```\nIt prints 5.</think>\n<answer>5</answer>",
        "<think>Adding three to two gives five, so the sum is five.</think>\n<answer>5</answer>",  # kept
        "<think>Two and three make five; the answer is therefore five.</think>\n<answer>5</answer>",  # over m
    ], max_per_prompt=2)
    assert record["rejections"] == {
        "near_duplicate": 1, "incorrect:math_accuracy_reward": 1, "malformed": 1, "incorrect:format_reward": 1,
        "mixed_language": 1, "long_paragraph": 1, "code_in_reasoning": 1, "max_per_prompt": 1}
    assert record["num_generated"] == 10 and record["num_passed"] == 7 and record["num_accepted"] == 2
    assert [r["messages"][1]["content"] for r in record["rows"]] == [
        "<think>2 plus 3 is 5.</think>\n<answer>5</answer>",
        "<think>Adding three to two gives five, so the sum is five.</think>\n<answer>5</answer>"]


def test_disabled_filters_and_unverifiable_samples():
    code = "<think>Check:\n```\n2 + 3\n```</think>\n<answer>5</answer>"
    record = _judge([code], min_language_consistency=None, reject_code_in_reasoning=False)
    assert record["num_accepted"] == 1
    # a reward that cannot verify a sample (here: no gold answer) rejects it rather than letting it through
    config = RejectionSamplingConfig(model_name_or_path="m", output_dir="unused", rewards=["math"])
    (record,) = judge_batch(config, [{"prompt": "2+3?", "answer": ""}], [[Completion("<think>a</think> 5")]],
                            get_reward_funcs(["math"]))
    assert record["rejections"] == {"unverified": 1} and record["rows"] == []
    stats = summarize(config, [record])  # the totals count it too (the report and the dataset card read them)
    assert stats["rejections"]["unverified"] == 1
    assert stats["generated"] == stats["accepted"] + sum(stats["rejections"].values())


def test_mixed_math_and_code_rows_are_each_verified_by_the_reward_that_applies():
    """None means 'does not apply': math rows are judged by math, code rows by code, in one build."""
    config = RejectionSamplingConfig(model_name_or_path="m", output_dir="unused", rewards=["math", "code", "format"],
                                     target_lang="en", reject_code_in_reasoning=False)
    rows = [{"prompt": "What is 2+3?", "solution": "5", "tests": None},
            {"prompt": "Print the sum of two integers.", "solution": None,
             "tests": [{"type": "stdio", "input": "1 2", "output": "3"}]}]
    right_code = "<think>Read both numbers and add them.</think>\n<answer>```python\nprint(sum(map(int, input().split())))\n```</answer>"
    wrong_code = "<think>Read both numbers and add them.</think>\n<answer>```python\nprint(0)\n```</answer>"
    math_record, code_record = judge_batch(
        config, rows,
        [[Completion("<think>Two plus three is five.</think><answer>5</answer>"),
          Completion("<think>Two plus three is six.</think><answer>6</answer>")],
         [Completion(right_code), Completion(wrong_code)]],
        get_reward_funcs(config.rewards))
    assert math_record["num_accepted"] == 1 and math_record["rejections"] == {"incorrect:math_accuracy_reward": 1}
    assert code_record["num_accepted"] == 1 and code_record["rejections"] == {"incorrect:code_reward": 1}


def test_code_tasks_may_reason_with_code():
    """Rows the code reward scores are code tasks: a code block in their reasoning is not rejected."""
    config = RejectionSamplingConfig(model_name_or_path="m", output_dir="unused", rewards=["code", "format"],
                                     target_lang="en")
    row = {"prompt": "Read two integers and print their sum.", "tests": [{"type": "stdio", "input": "1 2", "output": "3"}]}
    completion = ("<think>A first try:\n```python\nprint(1)\n```\nNo, add them.</think>\n"
                  "<answer>```python\nprint(sum(map(int, input().split())))\n```</answer>")
    (record,) = judge_batch(config, [row], [[Completion(completion)]], get_reward_funcs(config.rewards))
    assert record["num_accepted"] == 1 and record["rows"][0]["tests"] == row["tests"]


def test_malformed_prompts_are_skipped_not_fatal(toy_reasoner, tmp_path):
    dataset = Dataset.from_list([{"prompt": "What is 2 + 3?", "solution": "5"}, {"prompt": "  ", "solution": "1"}])
    config = RejectionSamplingConfig(model_name_or_path=toy_reasoner, output_dir=str(tmp_path), num_samples=2,
                                     max_new_tokens=16, min_language_consistency=None)
    result = rejection_sample(config, dataset)
    assert result.stats["num_prompts"] == 2 and result.stats["prompts_without_samples"] == 1
    assert list(result.prompt_stats["num_generated"]) == [2, 0]


@pytest.mark.parametrize("content, reasoning, prefilled, expected", [
    ("<think>a</think>\n<answer>5</answer>", None, None, Trace("a", "<answer>5</answer>")),
    ("a</think> 5", None, None, Trace("a", "5")),  # template prefilled <think>: detected
    ("a</think> 5", None, True, Trace("a", "5")),
    ("\n<answer>5</answer>", "a", None, Trace("a", "<answer>5</answer>")),  # separate reasoning field
])
def test_parse_trace(content, reasoning, prefilled, expected):
    assert parse_trace(content, reasoning, prefilled) == expected


@pytest.mark.parametrize("content, reasoning, reason", [
    ("5", None, "no think block"), ("<think>a", None, "unclosed"), ("<think>a</think>  ", None, "no answer"),
    ("", "a", "no answer"), ("a</think> 5", None, "no think block"),
])
def test_parse_trace_rejects(content, reasoning, reason):
    prefilled = False if content.startswith("a</think>") else None
    with pytest.raises(ValueError, match=reason):
        parse_trace(content, reasoning, prefilled)


def test_filters_skip_language_check_when_no_language_can_be_told():
    assert R1Filters().rejection(Trace("2 + 3 = 5", "5"), prompt="2+3?") is None


def test_record_store_drops_a_torn_last_line(tmp_path):
    store = RecordStore(tmp_path / "records.jsonl")
    store.append([{"index": 0}, {"index": 1}])
    with open(store.path, "a") as f:
        f.write('{"index": 2, "rows": [')
    assert [r["index"] for r in store.load()] == [0, 1]
    store.append([{"index": 2}])
    assert [r["index"] for r in store.load()] == [0, 1, 2]


def test_killed_run_resumes_without_loss_or_duplicates(toy_reasoner, tmp_path):
    prompts = toy_prompts()  # one prompt per batch: plenty of points to be killed at
    (tmp_path / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    killed = tmp_path / "killed"
    settings = {"model_name_or_path": toy_reasoner, "dataset_name": str(tmp_path / "prompts.jsonl"),
                "rewards": ["math", "format"], "num_samples": 3, "max_new_tokens": 24, "batch_size": 1,
                "min_language_consistency": None, "dedup_threshold": None}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({**settings, "output_dir": str(killed)}))
    command = ["rejection-sample", "--config", str(tmp_path / "run.yaml")]
    records = killed / "records.jsonl"
    # the run stops itself after its 2nd record (tests/pause_points), is killed there, whatever the machine's speed
    process = subprocess.Popen([sys.executable, "-m", "trl_r1.cli", *command], env=pausing_env(records=2),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until_paused(process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = records.read_bytes()
    done_before = before.count(b"\n")
    assert 2 <= done_before < len(prompts) and not (killed / "sft.jsonl").exists()

    assert cli_main(command) == 0  # the restart
    after = records.read_bytes()
    assert after.startswith(before[:before.rfind(b"\n") + 1])  # every record written before the kill is kept
    indices = [json.loads(line)["index"] for line in after.splitlines()]
    assert sorted(indices) == list(range(len(prompts)))  # each prompt exactly once

    # the same data an uninterrupted run produces (sampling is seeded per batch)
    uninterrupted = rejection_sample(RejectionSamplingConfig(**settings, output_dir=str(tmp_path / "uninterrupted")))
    assert (killed / "sft.jsonl").read_text() == (tmp_path / "uninterrupted" / "sft.jsonl").read_text()
    assert json.loads((killed / "stats.json").read_text()) == uninterrupted.stats
    assert uninterrupted.stats["accepted"] > 0


def test_builders_read_dataset_name_as_recipes_do(tmp_path):
    """One loader for a `dataset_name` (trl_r1.data.loading): a Python builder, a file and a saved folder work for
    `trl-r1 rejection-sample|distill` exactly as in a recipe."""
    from trl_r1.data import load_dataset_spec

    builder = "trl_r1.toy.arithmetic:arithmetic_dataset"
    test = load_dataset_spec(builder, split="test")  # the builder called with the split: the 20 held-out sums
    assert test.num_rows == 20 and test.column_names == ["prompt", "solution"]
    rows = Dataset.from_list([{"prompt": "1+1?", "solution": "2"}])
    rows.to_json(tmp_path / "rows.jsonl")
    rows.save_to_disk(tmp_path / "saved")
    for name in (tmp_path / "rows.jsonl", tmp_path / "saved"):
        assert load_dataset_spec(str(name))[0] == {"prompt": "1+1?", "solution": "2"}


def test_builder_settings_that_cannot_work_exit_2_naming_the_key_before_any_model_loads(tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    Dataset.from_list([{"prompt": "1+1?", "solution": "2"}]).to_json(prompts)
    base = ["rejection-sample", "--model_name_or_path", str(tmp_path / "no-model"), "--output_dir", str(tmp_path / "out")]
    cases = [(["--dataset_name", str(tmp_path / "missing.jsonl")], "dataset_name: cannot load"),
             (["--dataset_name", str(prompts), "--prompt_column", "question"], "prompt_column: 'question' is not"),
             (["--dataset_name", str(prompts), "--rewards", "[mathh]"], "rewards: unknown reward 'mathh'"),
             (["--dataset_name", str(prompts), "--num_samples", "0"], "num_samples must be >= 1, got 0")]
    for flags, message in cases:
        assert cli_main([*base, *flags]) == 2
        err = capsys.readouterr().err
        assert f"trl-r1 rejection-sample: invalid configuration:\n  - {message}" in err
        assert err.count("trl-r1 rejection-sample") == 1  # named once, not again in front of each problem
    assert not (tmp_path / "out").exists()
    for model in ("no-model", "still-no-model"):  # a run that never sampled may change its settings
        (tmp_path / model).mkdir()
        flags = ["--model_name_or_path", str(tmp_path / model), "--dataset_name", str(prompts)]
        assert cli_main([*base, *flags]) == 2
        assert f"model_name_or_path: cannot load '{tmp_path / model}'" in capsys.readouterr().err
