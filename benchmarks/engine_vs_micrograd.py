"""Benchmark: the reference engine (refgrad) against micrograd 0.1.0, measured in one run.

    .venv/bin/python benchmarks/engine_vs_micrograd.py            # full run (a few minutes)
    .venv/bin/python benchmarks/engine_vs_micrograd.py --quick    # smaller, about a minute

Every number is measured here, on this machine, in this process: only the ratios mean
anything. The garbage collector is left on, as it is for a student running a notebook.

What is measured:
  (a) one step of micrograd's moons demo: MLP(2, [16, 16, 1]) on 100 two-moons points,
      max-margin loss + 1e-4 L2, forward + zero_grad + backward + SGD (median of steps);
  (b) forward + backward of a ~100k-node graph of + * relu, built the same way in both
      (micrograd has no tanh);
  (c) memory per node of that graph (tracemalloc);
  (d) the deepest chain of relu nodes each engine can backward through;
  (e) the whole 100-step demo with refgrad: training accuracy and seconds, and micrograd's
      time for the same (run in full when it should take under two minutes, else
      extrapolated from (a)).

This is a script, not a test: nothing here passes or fails, it prints a table.
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import common
import numpy as np

common.on_path(common.REFERENCE)

import micrograd.engine  # noqa: E402
import micrograd.nn  # noqa: E402
import refgrad.engine  # noqa: E402
import refgrad.nn  # noqa: E402

SEED = 1337


def make_moons(
    n_samples: int = 100, noise: float = 0.1, seed: int = SEED
) -> tuple[list[list[float]], list[float]]:
    """Two interleaving half circles, like sklearn.datasets.make_moons; labels -1 and +1.

    Returns plain Python lists (points as [x, y] floats, labels as floats), shuffled.
    """
    rng = np.random.default_rng(seed)
    n_outer = n_samples // 2
    n_inner = n_samples - n_outer
    outer = np.linspace(0.0, np.pi, n_outer)
    inner = np.linspace(0.0, np.pi, n_inner)
    xs = np.concatenate([np.cos(outer), 1.0 - np.cos(inner)])
    ys = np.concatenate([np.sin(outer), 0.5 - np.sin(inner)])
    points = np.stack([xs, ys], axis=1) + rng.normal(scale=noise, size=(n_samples, 2))
    labels = np.concatenate([-np.ones(n_outer), np.ones(n_inner)])
    order = rng.permutation(n_samples)
    return points[order].tolist(), labels[order].tolist()


# ---- (a) and (e): the moons demo ------------------------------------------------------


def refgrad_demo_step(model, X, y, learning_rate: float) -> tuple[float, float]:
    """One training step with refgrad's own API; returns (loss, accuracy) before the step."""
    scores = [model(x) for x in X]
    loss = refgrad.nn.max_margin_loss(scores, y, model.parameters(), alpha=1e-4)
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= learning_rate * p.grad
    accuracy = sum((yi > 0) == (s.data > 0) for yi, s in zip(y, scores)) / len(y)
    return loss.data, accuracy


def micrograd_demo_step(model, X, y, learning_rate: float) -> tuple[float, float]:
    """One step exactly as micrograd's demo.ipynb writes it."""
    V = micrograd.engine.Value
    inputs = [list(map(V, xrow)) for xrow in X]
    scores = list(map(model, inputs))
    losses = [(1 + -yi * scorei).relu() for yi, scorei in zip(y, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = 1e-4 * sum(p * p for p in model.parameters())
    total_loss = data_loss + reg_loss
    model.zero_grad()
    total_loss.backward()
    for p in model.parameters():
        p.data -= learning_rate * p.grad
    accuracy = sum((yi > 0) == (s.data > 0) for yi, s in zip(y, scores)) / len(y)
    return total_loss.data, accuracy


def new_refgrad_model():
    return refgrad.nn.MLP(2, [16, 16, 1], rng=SEED)


def new_micrograd_model():
    random.seed(SEED)  # micrograd draws its weights from the random module
    return micrograd.nn.MLP(2, [16, 16, 1])


def median_step_seconds(step: Callable, model, X, y, steps: int) -> float:
    """Median seconds of one training step, over ``steps`` steps in a row."""
    gc.collect()  # start clean: the last measurement's garbage is not billed to this one
    times = []
    for k in range(steps):
        t0 = time.perf_counter()
        step(model, X, y, 1.0 - 0.9 * k / 100)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def full_demo(step: Callable, model, X, y, steps: int = 100) -> tuple[float, float, float]:
    """Train for ``steps`` steps; returns (seconds, final loss, final accuracy)."""
    gc.collect()
    t0 = time.perf_counter()
    for k in range(steps):
        step(model, X, y, 1.0 - 0.9 * k / 100)
    seconds = time.perf_counter() - t0
    loss, accuracy = step(model, X, y, 0.0)  # evaluate after the last update (lr 0)
    return seconds, loss, accuracy


# ---- (b) and (c): a large graph built the same way in both engines -------------------


def build_graph(V: type, blocks: int, depth: int):
    """``blocks`` chains of ``depth`` relu(v * w + 0.5) steps, summed by a balanced tree.

    4 nodes per step (*, the 0.5 constant, +, relu). The graph is at most
    depth * 3 + log2(blocks) deep, so micrograd's recursive backward can handle it.
    """
    rng = random.Random(SEED)
    leaves = [V(rng.uniform(-1.0, 1.0)) for _ in range(200)]
    outs = []
    for j in range(blocks):
        v = leaves[j % len(leaves)]
        for k in range(depth):
            v = (v * leaves[(j + 7 * k + 1) % len(leaves)] + 0.5).relu()
        outs.append(v)
    while len(outs) > 1:
        pairs = [outs[i] + outs[i + 1] for i in range(0, len(outs) - 1, 2)]
        outs = pairs + ([outs[-1]] if len(outs) % 2 else [])
    return leaves, outs[0]


def count_nodes(root) -> int:
    seen = {id(root)}
    stack = [root]
    while stack:
        for parent in stack.pop()._prev:
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    return len(seen)


def graph_seconds(V: type, blocks: int, depth: int, repeats: int) -> tuple[float, float, int]:
    """Median seconds to build (forward) and to backward the graph, and its node count."""
    gc.collect()
    forward, backward = [], []
    nodes = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        _, root = build_graph(V, blocks, depth)
        t1 = time.perf_counter()
        root.backward()
        t2 = time.perf_counter()
        forward.append(t1 - t0)
        backward.append(t2 - t1)
        nodes = count_nodes(root)
        del root
    return statistics.median(forward), statistics.median(backward), nodes


def bytes_per_node(V: type, blocks: int, depth: int) -> float:
    """Memory held by the graph (after forward and backward), divided by its nodes."""
    gc.collect()
    tracemalloc.start()
    _, root = build_graph(V, blocks, depth)
    root.backward()
    gc.collect()  # only what the graph keeps alive counts, not garbage awaiting collection
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held / count_nodes(root)


# ---- (d) the deepest chain -----------------------------------------------------------


def deepest_chain(V: type, ladder: list[int]) -> tuple[int, str]:
    """The longest relu chain (from the ladder) whose backward works, and why the next fails."""
    best, failure = 0, ""
    for n in ladder:
        x = V(0.5)
        y = x
        for _ in range(n):
            y = y.relu()
        try:
            y.backward()
        except RecursionError:
            failure = f"RecursionError at {n:,}"
            break
        finally:
            del y
            gc.collect()
        if x.grad != 1.0:
            failure = f"wrong gradient at {n:,}"
            break
        best = n
    return best, failure


# ---- the report ----------------------------------------------------------------------


def speed_ratio(refgrad_seconds: float, micrograd_seconds: float) -> str:
    r = micrograd_seconds / refgrad_seconds
    return f"{r:.1f}x faster" if r >= 1.0 else f"{1.0 / r:.1f}x slower"


def fmt_seconds(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1.0 else f"{s:.2f} s"


def main(argv: list[str] | None = None) -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="a smaller run, about a minute")
    args = parser.parse_args(argv)
    quick = args.quick

    print(f"Python {sys.version.split()[0]}, garbage collector on: {gc.isenabled()}")
    print(f"refgrad from {Path(refgrad.engine.__file__).parent}")
    print(f"micrograd from {Path(micrograd.engine.__file__).parent}  (0.1.0)")
    print(
        f"mode: {'--quick' if quick else 'full'}, load average {common.load_average(3, 2, ', ')}\n"
    )
    rows: list[tuple[str, str, str, str, str]] = []

    X, y = make_moons(100, noise=0.1, seed=SEED)

    # (a) one demo step
    steps = 3 if quick else 7
    ref_step = median_step_seconds(refgrad_demo_step, new_refgrad_model(), X, y, steps * 3)
    mg_step = median_step_seconds(micrograd_demo_step, new_micrograd_model(), X, y, steps)
    rows.append(
        (
            "(a) demo step: forward+backward+SGD",
            fmt_seconds(ref_step),
            fmt_seconds(mg_step),
            speed_ratio(ref_step, mg_step),
            ">= 15x (aim 30x)",
        )
    )
    print(f"(a) done: refgrad {fmt_seconds(ref_step)}, micrograd {fmt_seconds(mg_step)}")

    # (b) a ~100k-node graph
    blocks, depth = (250, 25) if quick else (1000, 25)
    repeats = 3 if quick else 5
    rf, rb, r_nodes = graph_seconds(refgrad.engine.Value, blocks, depth, repeats)
    mf, mb, m_nodes = graph_seconds(micrograd.engine.Value, blocks, depth, repeats)
    label = f"{r_nodes // 1000}k"
    rows.append(
        (
            f"(b) {label}-node graph: forward",
            fmt_seconds(rf),
            fmt_seconds(mf),
            speed_ratio(rf, mf),
            "",
        )
    )
    rows.append(
        (
            f"(b) {label}-node graph: backward",
            fmt_seconds(rb),
            fmt_seconds(mb),
            speed_ratio(rb, mb),
            "",
        )
    )
    rows.append(
        (
            f"(b) {label}-node graph: forward+backward",
            fmt_seconds(rf + rb),
            fmt_seconds(mf + mb),
            speed_ratio(rf + rb, mf + mb),
            "",
        )
    )
    print(f"(b) done: {r_nodes:,} refgrad nodes, {m_nodes:,} micrograd nodes")

    # (c) memory per node
    r_bytes = bytes_per_node(refgrad.engine.Value, blocks, depth)
    m_bytes = bytes_per_node(micrograd.engine.Value, blocks, depth)
    rows.append(
        (
            "(c) memory per graph node",
            f"{r_bytes:.0f} B",
            f"{m_bytes:.0f} B",
            f"{r_bytes / m_bytes:.2f}x",
            "<= 0.6x",
        )
    )
    print("(c) done")

    # (d) the deepest chain
    ladder = [100, 1_000, 10_000, 100_000] + ([] if quick else [1_000_000])
    r_deep, r_fail = deepest_chain(refgrad.engine.Value, ladder)
    m_deep, m_fail = deepest_chain(micrograd.engine.Value, ladder)
    rows.append(
        (
            "(d) deepest chain that backwards",
            f"{r_deep:,}",
            f"{m_deep:,}" + (f" ({m_fail})" if m_fail else ""),
            f"{r_deep / m_deep:,.0f}x" if m_deep else "-",
            f">= {ladder[-1]:,}",
        )
    )
    print(f"(d) done: refgrad {r_deep:,} {r_fail}, micrograd {m_deep:,} ({m_fail})")

    # (e) the full demo
    r_secs, r_loss, r_acc = full_demo(refgrad_demo_step, new_refgrad_model(), X, y)
    estimate = 100 * mg_step
    if not quick and estimate < 120.0:
        m_secs, _, m_acc = full_demo(micrograd_demo_step, new_micrograd_model(), X, y)
        m_time = f"{m_secs:.1f} s"
        m_accuracy = f"{m_acc:.0%}"
    else:
        m_secs = estimate
        m_time = f"~{m_secs:.0f} s (100 x (a))"
        m_accuracy = "not run"
    rows.append(
        (
            "(e) 100-step demo: training accuracy",
            f"{r_acc:.0%} (loss {r_loss:.4f})",
            m_accuracy,
            "",
            "100 %",
        )
    )
    rows.append(
        (
            "(e) 100-step demo: total time",
            f"{r_secs:.2f} s",
            m_time,
            speed_ratio(r_secs, m_secs),
            "",
        )
    )
    print("(e) done\n")

    print(f"load average at the end: {common.load_average(3, 2, ', ')} (on {os.cpu_count()} CPUs)")
    print("A busy machine shifts the ratios; run again when it is idle if they look odd.\n")
    header = ("metric", "refgrad", "micrograd 0.1.0", "ratio", "target")
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print(line)
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


if __name__ == "__main__":
    main()
