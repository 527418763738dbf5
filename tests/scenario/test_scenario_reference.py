"""docs/scenario-reference.md is what docs/make_scenario_reference.py writes from today's scenario schema."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "make_scenario_reference.py"
REFERENCE = ROOT / "docs" / "scenario-reference.md"


def generator() -> ModuleType:
    return load_script(SCRIPT)


def test_the_scenario_reference_is_up_to_date() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == generator().current_text(), (
        "docs/scenario-reference.md is stale: run `uv run python docs/make_scenario_reference.py` to update it"
    )


def test_the_reference_lists_every_key_of_the_schema_with_its_default_and_range() -> None:
    import json

    from kafkasim.scenario import scenario_json_schema_text

    schema = json.loads(scenario_json_schema_text())
    text = REFERENCE.read_text(encoding="utf-8")
    for name, definition in [("", schema), *schema["$defs"].items()]:
        section = text if not name else text.split(f'<a id="{generator().anchor(name)}"></a>')[1].split("<a id=")[0]
        for key in definition.get("properties", {}):
            assert f"| `{key}` |" in section, (name, key)
    row = next(line for line in text.splitlines() if line.startswith("| `num.io.threads` |"))
    assert re.fullmatch(r"\| `num.io.threads` \| integer \|  \| `8` \| 1 to 1000 \| Request handler threads .*", row)
    row = next(line for line in text.splitlines() if line.startswith("| `replica.lag.time.max.ms` |"))
    assert "| ms | `30000` | 1 to 1000000000000 ms |" in row
    assert "[docs/scenario-reference.md](docs/scenario-reference.md)" in (ROOT / "README.md").read_text()
