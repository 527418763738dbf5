"""The README's scenario list, example and figures stay in step with what is shipped."""

from __future__ import annotations

import re
from pathlib import Path

from kafkasim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_links_every_shipped_scenario() -> None:
    linked = set(re.findall(r"\]\((scenarios/[^)]+\.yaml)\)", README))
    shipped = {f"scenarios/{p.name}" for p in (ROOT / "scenarios").glob("*.yaml")}
    assert shipped <= linked, f"scenarios missing from the README's list: {sorted(shipped - linked)}"
    assert all((ROOT / link).is_file() for link in linked), "the README links a scenario that does not exist"


def test_readme_example_scenario_is_valid() -> None:
    example = re.search(r"```yaml\n(.*?)```", README, re.S)
    assert example, "the README shows a scenario in a ```yaml block"
    scenario = load_scenario(example.group(1))
    assert scenario.topics[0].replication_factor == 3
    assert scenario.faults and scenario.faults[0].target == "follower-2"


def test_readme_cluster_example_is_valid() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", README, re.S)
    cluster = next(b for b in blocks if b.startswith("cluster:"))
    scenario = load_scenario("name: c\ndescription: README cluster example\nduration: 10s\n" + cluster)
    assert scenario.cluster is not None and scenario.broker_for(2).num_io_threads == 2
    assert scenario.topics[1].replication_factor == 2


def test_readme_images_exist() -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert images
    for image in images:
        assert (ROOT / image).is_file(), f"README shows {image}, which does not exist"
