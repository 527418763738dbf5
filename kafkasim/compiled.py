"""Which of kafkasim's modules run compiled in this installation (mypyc; see hatch_build.py).

The build compiles the hot modules when the machine has a C compiler and leaves the package pure Python when
it has not; both behave identically. An extension module shadows the ``.py`` beside it, so a checkout whose
sources changed after its last build would run the old code: uv rebuilds on every change (pyproject.toml's
``[tool.uv] cache-keys``), and ``stale_sources`` names what a checkout run without uv left behind.
"""

from __future__ import annotations

import hashlib
import json
import sysconfig
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
EXT_SUFFIX: str = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
MANIFEST = PACKAGE_DIR / "_compiled.json"  # written by an editable build only


def compiled_modules() -> list[str]:
    """The dotted names of kafkasim's modules that have a compiled extension, sorted."""
    names = []
    for path in PACKAGE_DIR.rglob(f"*{EXT_SUFFIX}"):
        rel = path.relative_to(PACKAGE_DIR.parent)
        stem = rel.name[: -len(EXT_SUFFIX)]
        if stem.endswith("__mypyc"):  # the shared library of the group, not a module of kafkasim
            continue
        names.append(".".join((*rel.parent.parts, stem)))
    return sorted(names)


def stale_sources(manifest: Path = MANIFEST, root: Path = PACKAGE_DIR.parent) -> list[str]:
    """Sources (relative to the checkout) changed since an editable build compiled them; [] if none."""
    if not manifest.exists():
        return []
    recorded: dict[str, str] = json.loads(manifest.read_text()).get("sources", {})
    stale = []
    for rel, digest in recorded.items():
        path = root / rel
        if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            stale.append(rel)
    return sorted(stale)


def build_fallback(manifest: Path | None = None) -> str | None:
    """Why the last editable build compiled nothing and left the pure package (hatch_build.py records it: uv
    shows a build's messages only when the build fails, and this one did not), or None."""
    manifest = MANIFEST if manifest is None else manifest
    if not manifest.exists():
        return None
    why = json.loads(manifest.read_text()).get("fallback")
    return str(why) if why is not None else None


def describe() -> str:
    """One line for ``kafkasim --version`` and the test suite's header."""
    modules = compiled_modules()
    if not modules:
        why = build_fallback()
        if why is not None:
            return f"pure Python: the last build could not compile with mypyc ({why})"
        return "pure Python"
    stale = stale_sources()
    line = f"{len(modules)} modules compiled with mypyc"
    if stale:
        line += f"; {len(stale)} changed since (run `uv sync` to recompile)"
    return line
