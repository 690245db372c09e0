"""Tables and plots of ``benchmarks/scale.py`` results (docs/benchmarks.md, section 1).

Reads one or more JSON files the scale benchmark wrote (rows of one instance each), prints one
markdown table of medians and worst cases per size and preset, and draws the PNGs into docs/img:
the gap to the best known, the cycle time against its target and the paired ratio to the
greedy-only cycle, one point per instance.

    .venv/bin/python -m benchmarks.scale_report benchmarks/results/scale-*.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.scale import GAP_MEDIAN, GAP_WORST, TARGETS, summarize, table
from solver_sched.synthetic import PRESETS, SIZES

IMG = Path(__file__).resolve().parent.parent / "docs" / "img"


def load(paths: list[Path]) -> list[dict[str, Any]]:
    """Rows of every file; a later file's row replaces an earlier one of the same instance."""
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    for p in paths:
        for r in json.loads(p.read_text())["rows"]:
            rows[(r["size"], r["preset"], r["seed"])] = r
    return list(rows.values())


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    sizes = [s for s in SIZES if any(r["size"] == s for r in rows)]
    presets = [p for p in PRESETS if any(r["preset"] == p for r in rows)]
    made = []
    specs: list[tuple[str, str, Callable[[dict[str, Any]], float], str]] = [
        ("gap", "gap to the best known (%)", lambda r: 100 * r["gap"], "scale-gap.png"),
        ("cycle", "cycle / target", lambda r: r["cycle"] / TARGETS[r["size"]], "scale-cycle.png"),
        ("paired", "cycle / greedy-only cycle", lambda r: r["paired"], "scale-paired.png"),
    ]
    for key, label, value, name in specs:
        fig, axes = plt.subplots(
            1, len(sizes), figsize=(max(6.0, 3.2 * len(sizes)), 4.0), sharey=True
        )
        axes = axes if len(sizes) > 1 else [axes]
        for ax, size in zip(axes, sizes, strict=True):
            for i, p in enumerate(presets):
                ys = [value(r) for r in rows if r["size"] == size and r["preset"] == p]
                if not ys:
                    continue
                xs = [i + 0.25 * ((k % 5) - 2) / 2 for k in range(len(ys))]
                ax.scatter(xs, ys, s=9, alpha=0.6)
                ax.hlines(statistics.median(ys), i - 0.35, i + 0.35, color="black", lw=1.5)
            if key == "gap":
                ax.axhline(100 * GAP_MEDIAN, color="orange", ls="--", lw=1)
                ax.axhline(100 * GAP_WORST, color="red", ls="--", lw=1)
            if key == "cycle":
                ax.axhline(1.0, color="red", ls="--", lw=1)
            ax.set_xticks(range(len(presets)), presets, rotation=60, ha="right", fontsize=8)
            ax.set_title(f"{size} ({SIZES[size]:,} nodes)", fontsize=9)
        axes[0].set_ylabel(label)
        fig.suptitle(f"{label}: one point per instance, bar = median", fontsize=9)
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--img", type=Path, default=IMG)
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    rows = load(args.results)
    print(table(summarize(rows)))
    if not args.no_plots:
        for path in plots(rows, args.img):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
