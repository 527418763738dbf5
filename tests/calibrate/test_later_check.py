"""The committed preset on a later day (kafkasim.calibrate.later_check): its section of docs/validation.md."""

from __future__ import annotations

import json
from pathlib import Path

from kafkasim.calibrate.held_out import BEGIN, END, JSON_FILE, latency_rows
from kafkasim.calibrate.later_check import CHECK_BEGIN, CHECK_END, TITLE, check_section, write_check_section

ROOT = Path(__file__).resolve().parents[2]


def _committed() -> dict:
    return json.loads((ROOT / JSON_FILE).read_text())


def _checked(data: dict) -> dict:
    rows = [dict(r, real_runs=[1.0, 2.0, 3.0], real_median=2.0, verdict="outside" if i == 0 else "within")
            for i, r in enumerate(latency_rows(data["predictions"]))]
    # A check's cores (held_out.PREDICTED_CORES): beside the predictions, not counted among them.
    rows.append({"configuration": rows[0]["configuration"], "statistic": "network threads cores", "predicted": 0.3,
                 "band": [0.3, 0.3], "real_median": 0.36, "real_runs": [0.35, 0.36, 0.4], "verdict": "outside"})
    return data | {"check": {"when": "2026-12-04T09:00:00Z", "runs": 3, "predictions": rows,
                             "quiet": {"max_foreign": 0.05, "attempts": 3, "set_aside": [], "kept_loaded": []}}}


def test_without_a_check_the_section_says_how_to_make_one() -> None:
    data = _committed()
    data.pop("check", None)
    text = check_section(data)
    assert text.startswith(CHECK_BEGIN + "\n" + TITLE) and text.endswith(CHECK_END)
    assert "No later check of this preset yet: `uv run python docs/make_calibration.py --check` makes one" in text


def test_a_check_is_told_with_its_table_and_its_count() -> None:
    data = _checked(_committed())
    text = check_section(data)
    n = len(latency_rows(data["predictions"]))
    assert (f"The preset fitted {data['when']} predicted the held-out configurations again beside 3 new real runs of "
            "each, made 2026-12-04T09:00:00Z") in text
    assert f"{n - 1} of {n} predictions are within, by the same rule." in text
    assert "No real run was made again" in text
    assert text.count("| 1, 2, 3 |") == n and text.count("| outside |") == 1
    assert "| network threads | 0.3 | 0.36 | 0.35, 0.36, 0.4 | 1.20 |" in text and "real/predicted 1.20-1.20" in text


def test_the_section_goes_after_the_calibration_one_then_replaces_itself(tmp_path: Path) -> None:
    page = tmp_path / "validation.md"
    page.write_text(f"# Validation\n\n{BEGIN}\n## Calibration\n{END}\n\n## Published measurements\n", encoding="utf-8")
    data = _committed()
    data.pop("check", None)
    write_check_section(page, data)
    text = page.read_text()
    assert text.index(END) < text.index(CHECK_BEGIN) < text.index("## Published measurements")
    write_check_section(page, _checked(data))
    again = page.read_text()
    assert again.count(CHECK_BEGIN) == 1 and "No later check" not in again and "## Published measurements" in again
