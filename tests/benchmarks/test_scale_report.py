from typing import Any

from benchmarks.scale import summarize, table
from benchmarks.scale_report import load


def _row(seed: int, gap: float, cycle: float, chosen: str) -> dict[str, Any]:
    return {
        "size": "S",
        "preset": "hard",
        "seed": seed,
        "nodes": 64,
        "jobs_running": 10,
        "jobs_pending": 5,
        "cycle": cycle,
        "greedy_cycle": 0.1,
        "paired": cycle / 0.1,
        "gap": gap,
        "gap_to_bound": gap,
        "vs_greedy": 1.0 + gap,
        "packing_loss": 0.0,
        "chosen": chosen,
        "optimal": chosen == "cpsat",
        "violations": 0,
    }


def test_the_table_gives_median_and_worst_and_who_made_the_plan() -> None:
    rows = [
        _row(1001, 0.0, 0.2, "cpsat"),
        _row(1002, 0.01, 0.4, "cpsat"),
        _row(1003, 0.03, 0.3, "greedy"),
    ]
    line = table(summarize(rows)).splitlines()[2]
    assert "| 0.300 / 0.400 s (0.5 s) |" in line
    assert "| x3.00 / x4.00 |" in line
    assert "| 1.00% / 3.00% |" in line
    assert "| 2/3 | cpsat 2, greedy 1 |" in line


def test_a_later_file_replaces_the_same_instance(tmp_path: Any) -> None:
    import json

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(
        json.dumps({"rows": [_row(1001, 0.5, 0.2, "greedy"), _row(1002, 0.0, 0.2, "cpsat")]})
    )
    b.write_text(json.dumps({"rows": [_row(1001, 0.0, 0.2, "cpsat")]}))
    rows = load([a, b])
    assert sorted((r["seed"], r["chosen"]) for r in rows) == [(1001, "cpsat"), (1002, "cpsat")]
