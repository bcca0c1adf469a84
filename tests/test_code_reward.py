"""code_reward: program extraction, test columns, scoring options, logging, and a real GRPOTrainer run."""

import json
import logging
import pickle

import pytest
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from trl_r1.rewards import get_reward_func
from trl_r1.rewards.code import CodeReward, code_reward, extract_program
from trl_r1.verifiers.code import isolation_problem

pytestmark = pytest.mark.skipif(isolation_problem() is not None, reason=f"no sandbox: {isolation_problem()}")

ADD_TESTS = {"language": "python", "test_cases": [
    {"type": "stdin_stdout", "input": "1 2\n", "output": "3\n"},
    {"type": "stdin_stdout", "input": "5 5\n", "output": "10\n"},
    {"type": "stdin_stdout", "input": "-1 1\n", "output": "0\n"},
    {"type": "stdin_stdout", "input": "7 0\n", "output": "7\n"},
]}
RIGHT = "a, b = map(int, input().split())\nprint(a + b)"
WRONG_ON_ONE = "a, b = map(int, input().split())\nprint(a + b if a != 7 else 0)"


def answer(code, tag="python"):
    return f"<think>read two numbers</think>\n<answer>\n```{tag}\n{code}\n```\n</answer>"


def test_program_is_the_last_python_block_of_the_answer_with_a_fallback():
    text = "<think>```python\nprint('draft')\n```</think><answer>```python\nprint(1)\n```\n```python\nprint(2)\n```</answer>"
    assert extract_program(text) == "print(2)\n"
    assert extract_program("<think>x</think> Sure:\n```\nprint(3)\n```") == "print(3)\n"  # untagged block after </think>
    assert extract_program("```python\nprint(4)\n```<think>x</think><answer>no code</answer>") == "print(4)\n"  # fallback
    assert extract_program("<answer>```python\nprint(5)\n</answer>") is None  # unclosed fence
    assert extract_program("```cpp\nint main(){}\n```", "cpp") == "int main(){}\n"
    assert extract_program("```cpp\nint main(){}\n```") is None


def test_scores_pass_fractions_skips_samples_without_tests_and_logs_failure_kinds():
    extra, metrics = {}, {}
    completions = [answer(RIGHT), answer(WRONG_ON_ONE), "I cannot write code", answer("while True: pass"), answer(RIGHT)]
    columns = [ADD_TESTS, json.dumps(ADD_TESTS), ADD_TESTS, {"language": "python", "test_cases": ADD_TESTS["test_cases"][:1],
                                                            "timeout_s": 0.5}, None]
    scores = CodeReward()(completions=completions, verification_info=columns,
                          log_extra=extra.__setitem__, log_metric=metrics.__setitem__)
    assert scores == [1.0, 0.75, 0.0, 0.0, None]
    reasons = extra["code_reward_reason"]
    assert reasons[0] == "" and reasons[1] == "wrong_answer: wrong_answer x1 of 4 tests"
    assert reasons[2] == "no code block" and reasons[3].startswith("timeout") and reasons[4] == "no tests"
    assert metrics["code_reward/skipped"] == pytest.approx(0.2)


def test_a_row_with_a_broken_test_is_skipped_not_blamed_on_the_program():
    extra = {}
    broken = {"language": "python", "test_cases": [*ADD_TESTS["test_cases"][:1], {"type": "stdin_stdout", "input": "1"}]}
    scores = CodeReward()(completions=[answer(RIGHT)] * 2, verification_info=[broken, ADD_TESTS],
                          log_extra=extra.__setitem__)
    assert scores == [None, 1.0]
    assert extra["code_reward_reason"][0] == "bad tests: stdio test without 'output'"


def test_timeout_of_verification_info_given_as_json_text_is_used():
    extra = {}
    info = json.dumps({"language": "python", "test_cases": ADD_TESTS["test_cases"][:1], "timeout_s": 0.5})
    slow = answer("import time\ntime.sleep(2)\nprint(3)")
    assert CodeReward()(completions=[slow], verification_info=[info], log_extra=extra.__setitem__) == [0.0]
    assert extra["code_reward_reason"][0].startswith("timeout")


def test_binary_option_and_the_tests_column_with_asserts_and_conversational_completions():
    tests = [{"type": "assert", "code": "assert add(1, 2) == 3"}, {"type": "assert", "code": "assert add(-1, 1) == 0"}]
    half = [{"role": "assistant", "content": answer("def add(a, b):\n    return abs(a) + b")}]
    full = [{"role": "assistant", "content": answer("def add(a, b):\n    return a + b")}]
    assert CodeReward()(completions=[half, full], tests=[tests, tests]) == [0.5, 1.0]
    binary = get_reward_func("code", binary=True)
    assert binary.__name__ == "binary_code_reward"
    assert binary(completions=[half, full], tests=[tests, tests]) == [0.0, 1.0]


def test_cpp_samples_and_bad_columns_never_raise():
    cpp = "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b;}"
    info = {"language": "cpp", "test_cases": ADD_TESTS["test_cases"][:2]}
    scores = code_reward(completions=[answer(cpp, "cpp"), answer(RIGHT), answer(RIGHT)],
                         verification_info=[info, "{not json", {"language": "cobol", "test_cases": []}])
    assert scores[0] == 1.0 and scores[1] is None and scores[2] is None


def test_reward_is_registered_and_picklable():
    assert get_reward_func("code") is code_reward and code_reward.__name__ == "code_reward"
    clone = pickle.loads(pickle.dumps(CodeReward(binary=True, timeout_s=2.0)))
    assert clone.__name__ == "binary_code_reward" and clone.timeout_s == 2.0


def test_unavailable_sandbox_skips_samples_loudly(monkeypatch, caplog):
    from trl_r1.verifiers.code import runner

    monkeypatch.setattr(runner, "isolation_problem", lambda: "bubblewrap is not installed")
    with caplog.at_level(logging.ERROR, logger="trl_r1.verifiers.code"):
        assert code_reward(completions=[answer(RIGHT)], verification_info=[ADD_TESTS]) == [None]
    assert "bubblewrap is not installed" in caplog.text and "allow_unsafe" in caplog.text


def test_a_base_exception_costs_its_samples_only_but_ctrl_c_still_stops_training(monkeypatch, caplog):
    """A SystemExit or GeneratorExit raised under the reward (in the verifier mid-job, or around it) scores the
    sample None with the reason, logged; a KeyboardInterrupt still propagates."""
    from trl_r1.rewards import code as code_module
    from trl_r1.verifiers.code import runner

    judges = []

    def verdict_raising(kind):
        def verdict(judge, *args):
            judges.append(judge)
            raise kind("raised inside the verifier")
        return verdict

    def batch_raising(kind):
        def run_tests_batch(*args, **kwargs):
            raise kind("raised around the verifier")
        return run_tests_batch

    def score(reward=code_reward):
        extra = {}
        values = reward(completions=[answer(RIGHT)], verification_info=[ADD_TESTS], log_extra=extra.__setitem__)
        return values, extra.get(f"{reward.__name__}_reason")

    with monkeypatch.context() as patch:
        patch.setattr(runner.Judge, "verdict", verdict_raising(SystemExit))
        with caplog.at_level(logging.WARNING, logger="trl_r1.verifiers.code"):
            assert score() == ([None], ["verifier error: SystemExit: raised inside the verifier"])
        assert "code verifier failed on a job" in caplog.text
        assert judges[-1].process.poll() is not None  # the judge it interrupted was killed, not kept idle
        patch.setattr(runner.Judge, "verdict", verdict_raising(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            score()
    with monkeypatch.context() as patch:
        patch.setattr(code_module, "run_tests_batch", batch_raising(GeneratorExit))
        assert score(CodeReward(binary=True)) == ([0.0], ["error: GeneratorExit: raised around the verifier"])
        patch.setattr(code_module, "run_tests_batch", batch_raising(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            score()
    assert score() == ([1.0], None)  # the verifier works again


class LogRecorder(TrainerCallback):
    def __init__(self):
        self.logs = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs or {}))


def test_grpo_trainer_runs_code_reward(tiny_model_dir, tmp_path):
    calls = []

    class RecordingCodeReward(CodeReward):
        def score_batch(self, samples):
            calls.append([s.columns["verification_info"] for s in samples])
            return super().score_batch(samples)

    rows = [{"prompt": [{"role": "user", "content": "Read a and b, print a + b. Answer in a ```python block."}],
             "verification_info": ADD_TESTS} for _ in range(4)]
    recorder = LogRecorder()
    args = GRPOConfig(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=12, logging_steps=1, save_strategy="no", report_to="none", use_cpu=True,
                      bf16=False, seed=0)
    trainer = GRPOTrainer(model=tiny_model_dir, reward_funcs=[RecordingCodeReward()], args=args,
                          train_dataset=Dataset.from_list(rows), callbacks=[recorder])
    trainer.train()
    means = [log["rewards/code_reward/mean"] for log in recorder.logs if "rewards/code_reward/mean" in log]
    assert means and all(0.0 <= m <= 1.0 for m in means)  # the untrained model writes no code block: 0.0
    assert calls and all(info == ADD_TESTS for batch in calls for info in batch)


def test_fenced_blocks_are_found_in_linear_time():
    import random
    import re
    import time

    from trl_r1.rewards.code import _fenced_blocks
    quadratic = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)```", re.DOTALL)  # the former rule
    rng = random.Random(0)
    pieces = ["`", "```", "\n", "a", " ", "py", "\t", "#", "x y", "````", "C++"]
    for _ in range(5000):  # the same blocks as the regex
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert _fenced_blocks(text) == quadratic.findall(text), repr(text)
    attack = "```" + "a" * 10_000  # one long fence line without a newline
    started = time.process_time()
    quadratic.findall(attack)
    regex_s = time.process_time() - started
    started = time.process_time()
    for _ in range(10):
        assert extract_program(attack * 8) is None
    ours_s = (time.process_time() - started) / 10
    assert regex_s > 0.02 and ours_s < regex_s / 10, (regex_s, ours_s)  # control: the regex is quadratic


def test_multi_megabyte_outputs_pass_and_the_cap_is_configurable():
    n = 200_000  # about 1.3 MB of output (over the former 1 MiB cap) from a 6-byte input
    expected = " ".join(map(str, range(1, n + 1)))
    completion = "```python\nn = int(input())\nprint(*range(1, n + 1))\n```"
    info = {"language": "python", "test_cases": [{"type": "stdin_stdout", "input": str(n), "output": expected}]}
    assert code_reward(completions=[completion], verification_info=[info]) == [1.0]
    capped = CodeReward(max_output_bytes=1 << 20)
    assert capped(completions=[completion], verification_info=[info]) == [0.0]
    assert capped(completions=[completion], verification_info=[{**info, "max_output_bytes": 4 << 20}]) == [1.0]
    assert code_reward(completions=[completion], verification_info=[{**info, "max_output_bytes": 1 << 20}]) == [0.0]
