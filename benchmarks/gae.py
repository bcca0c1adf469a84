"""Vectorised `trl_r1.algorithms.gae` vs the textbook reverse loop (verl / TRL's old PPOTrainer), one run.

Prints, per device and lambda: the median time of each over a few repeats, the speed-up, and the largest
error relative to the largest advantage. Run: `OMP_NUM_THREADS=1 python benchmarks/gae.py` (the
requirement is >= 10x at 256 x 8192 on CPU; `--batch/--length/--repeats` to change the problem).
A GPU is measured too when one is available.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from trl_r1.algorithms import gae


def textbook_gae(rewards, values, mask, gamma, lam):
    """The reference: a reverse loop over tokens, carrying values and advantages over masked positions."""
    next_value = torch.zeros_like(rewards[:, 0])
    running = torch.zeros_like(rewards[:, 0])
    advantages = torch.zeros_like(rewards)
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        candidate = delta + gamma * lam * running
        next_value = values[:, t] * mask[:, t] + (1 - mask[:, t]) * next_value
        running = candidate * mask[:, t] + (1 - mask[:, t]) * running
        advantages[:, t] = running
    return advantages * mask, (advantages + values) * mask


def timed(fn, args, repeats, device):
    """Median wall time of ``fn(*args)`` over ``repeats`` runs after one warm-up, and its last result."""
    result = fn(*args)
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        result = fn(*args)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--length", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    generator = torch.Generator().manual_seed(0)
    rewards = torch.randn(args.batch, args.length, generator=generator)
    values = torch.randn(args.batch, args.length, generator=generator)
    lengths = torch.randint(1, args.length + 1, (args.batch,), generator=generator)
    mask = (torch.arange(args.length) < lengths[:, None]).float()  # right padding, as in TRL
    print(f"GAE on {args.batch} x {args.length} tokens, float32, gamma=1, threads={torch.get_num_threads()}")
    print(f"{'device':<6} {'lambda':>8} {'loop s':>9} {'ours s':>9} {'speed-up':>9} {'max rel err':>12}")
    for device in devices:
        r, v, m = rewards.to(device), values.to(device), mask.to(device)
        for lam in (1.0, 0.95):
            loop_s, (loop_adv, loop_ret) = timed(textbook_gae, (r, v, m, 1.0, lam), args.repeats, device)
            ours_s, (adv, ret) = timed(gae, (r, v, m, 1.0, lam), args.repeats, device)
            error = max(
                ((adv - loop_adv).abs().max() / loop_adv.abs().max()).item(),
                ((ret - loop_ret).abs().max() / loop_ret.abs().max()).item(),
            )
            print(f"{device.type:<6} {lam:>8} {loop_s:>9.4f} {ours_s:>9.4f} {loop_s / ours_s:>8.1f}x {error:>12.2e}")


if __name__ == "__main__":
    main()
