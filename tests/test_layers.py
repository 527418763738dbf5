"""The layer list in docs/architecture.md, checked over the whole package: an import only ever points down.

Layers, bottom up (docs/architecture.md, "Layers"): timer/ and sim/ side by side (neither imports the other),
purgatory/, broker/, scenario/, network/, server/, controller/, clients/, record/, run/, real/, report/, calibrate/, sweep/,
console/. The top-level modules: ``kafkasim/__init__.py`` and ``__main__.py`` are the top (they may import
anything, lazily); ``_lazy.py`` and ``compiled.py`` are the bottom (anything may import them, they import
nothing of kafkasim).

Every import counts: module level, under ``if TYPE_CHECKING:``, inside functions, relative ones, and a
string that is exactly a kafkasim module path (the lazy re-export tables of ``__init__`` files, the
sweep's ``"module:function"`` runner path), since each is a dependency as real as an import statement.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "kafkasim"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("timer", "sim"),
    ("purgatory",),
    ("broker",),
    ("scenario",),
    ("network",),
    ("server",),
    ("controller",),
    ("clients",),
    ("record",),
    ("run",),
    ("real",),
    ("report",),
    ("calibrate",),
    ("sweep",),
    ("console",),
)
LEVEL = {package: level for level, group in enumerate(LAYERS) for package in group}
TOP = "<top>"  # kafkasim/__init__.py, kafkasim/__main__.py
BOTTOM = "_lazy"
BOTTOM_MODULES = {"_lazy", "compiled"}  # top-level modules at the bottom: they import nothing of kafkasim
LEVEL[TOP] = len(LAYERS)
LEVEL[BOTTOM] = -1
# Not yet built; every other layer is a package today.
NOT_YET_BUILT: set[str] = set()

SIMPY_LAYERS = {"sim", "network", "server", "controller", "clients", "run"}
# A scenario is plain data validated by pydantic: it needs no Kafka state machine and no component.
SCENARIO_MAY_IMPORT = {"scenario", "timer", "sim", BOTTOM}
# Components get frozen configuration objects built by run/build.py, never pydantic scenario models.
NO_SCENARIO_LAYERS = {"network", "server", "clients"}

_MODULE_PATH = re.compile(r"kafkasim(\.[A-Za-z_][A-Za-z0-9_]*)+(:[A-Za-z_][A-Za-z0-9_]*)?")


@dataclass(frozen=True)
class Import:
    file: str  # relative to the repository, e.g. kafkasim/broker/log.py
    line: int
    module: str  # what is imported, e.g. kafkasim.sim.clock, simpy.events, typer._click.exceptions

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_kafkasim_module(name: str, root: Path) -> bool:
    """Whether `kafkasim.a.b` is a module or package in the tree at `root` (so `from kafkasim.a import b`
    imports the module `b`, not a name defined in `a`)."""
    rel = Path(*name.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def _top_lazy_table(root: Path) -> dict[str, str]:
    """``kafkasim/__init__.py``'s lazy re-exports (name -> module), to resolve `from kafkasim import name`."""
    table: dict[str, str] = {}
    init = root / "__init__.py"
    if not init.is_file():
        return table
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    table[str(key.value)] = value.value
    return table


def imports_of(path: Path, root: Path = PACKAGE_DIR) -> list[Import]:
    """Every module `path` imports, wherever the import statement is."""
    source = path.read_text()
    tree = ast.parse(source, filename=str(path))
    file = path.relative_to(root.parent).as_posix()
    this = _module_name(path, root)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    top_lazy = _top_lazy_table(root)

    def from_top(name: str) -> str:
        # `from kafkasim import x`: a subpackage/module, a lazily re-exported name, or the top's own names.
        if _is_kafkasim_module(f"kafkasim.{name}", root):
            return f"kafkasim.{name}"
        if name in ("__version__", "KAFKA_VERSION"):
            # The package's version and the Kafka release it models are metadata any module may read; Python
            # imports kafkasim/__init__.py before any submodule anyway.
            return "kafkasim._version"
        return top_lazy.get(name, "kafkasim")

    found: list[Import] = []
    binds_kafkasim = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "kafkasim":  # resolved below through the attributes it is used for
                    binds_kafkasim |= alias.asname is None
                    continue
                found.append(Import(file, node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                if module == "kafkasim":
                    found.append(Import(file, node.lineno, from_top(alias.name)))
                elif module.startswith("kafkasim.") and _is_kafkasim_module(f"{module}.{alias.name}", root):
                    found.append(Import(file, node.lineno, f"{module}.{alias.name}"))
                else:
                    found.append(Import(file, node.lineno, module))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_PATH.fullmatch(node.value)
              and _is_kafkasim_module(node.value.partition(":")[0], root)):
            found.append(Import(file, node.lineno, node.value.partition(":")[0]))
    if binds_kafkasim:
        # `import kafkasim` then `kafkasim.name`: the dependency is on what `name` resolves to.
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "kafkasim":
                found.append(Import(file, node.lineno, from_top(node.attr)))
    return sorted(set(found), key=lambda imp: (imp.line, imp.module))


def layer_of_file(path: Path, root: Path = PACKAGE_DIR) -> str:
    parts = path.relative_to(root).parts
    if len(parts) > 1:
        return parts[0]
    return BOTTOM if path.stem in BOTTOM_MODULES else TOP


def layer_of_module(module: str) -> str | None:
    """The layer a kafkasim module belongs to; None for anything outside kafkasim."""
    parts = module.split(".")
    if parts[0] != "kafkasim":
        return None
    if len(parts) == 1 or parts[1] in ("__init__", "__main__"):
        return TOP
    if parts[1] == "_version" or parts[1] in BOTTOM_MODULES:
        return BOTTOM
    return parts[1]


def upward_imports(root: Path = PACKAGE_DIR) -> list[str]:
    """Every import that points up (or sideways between timer/ and sim/), as `file:line: a -> b (module)`."""
    bad: list[str] = []
    for path in sorted(root.rglob("*.py")):
        source_layer = layer_of_file(path, root)
        for imp in imports_of(path, root):
            target_layer = layer_of_module(imp.module)
            if target_layer is None or target_layer == source_layer:
                continue
            if target_layer not in LEVEL:
                bad.append(f"{imp.where}: {source_layer} -> {target_layer} ({imp.module}): "
                           f"{target_layer!r} is not in the layer list")
            elif LEVEL[target_layer] >= LEVEL[source_layer]:
                bad.append(f"{imp.where}: {source_layer} -> {target_layer} ({imp.module})")
    return bad


def _all_imports() -> list[tuple[str, Import]]:
    return [(layer_of_file(p), imp) for p in sorted(PACKAGE_DIR.rglob("*.py")) for imp in imports_of(p)]


# --- the checker itself ----------------------------------------------------------------------------------


def test_the_checker_sees_every_kind_of_import(tmp_path: Path) -> None:
    root = tmp_path / "kafkasim"
    for package in ("timer", "sim", "broker", "run", "record"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
        (root / package / "thing.py").write_text("")
    (root / "__init__.py").write_text('_LAZY = {"run_scenario": "kafkasim.run.thing"}\n')
    (root / "_lazy.py").write_text("")
    (root / "broker" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import kafkasim.timer.thing\n"  # down: fine
        "from ..sim import thing\n"  # down: fine
        "from kafkasim._lazy import x\n"  # bottom: fine
        "if TYPE_CHECKING:\n"
        "    from kafkasim.record.thing import R\n"  # up, type-level
        "def f():\n"
        "    from ..run import thing\n"  # up, inside a function, relative
        "    from kafkasim import run_scenario\n"  # up, through the top's lazy table
        "RUNNER = 'kafkasim.run.thing:main'\n"  # up, an import path in a string
        "from kafkasim import __version__\n"  # the version: fine
        "from kafkasim import KAFKA_VERSION\n"  # the Kafka release modelled: fine
        "SCHEMA = 'kafkasim.schema.json'\n"  # a file name, not a module
        "import kafkasim\n"
        "V = kafkasim.__version__\n"  # fine
        "R = kafkasim.run_scenario\n"  # up, through the top's lazy table
    )
    (root / "timer" / "sideways.py").write_text("from kafkasim.sim import thing\n")
    (root / "sim" / "sideways.py").write_text("import kafkasim.timer\n")
    assert upward_imports(root) == [
        "kafkasim/broker/bad.py:6: broker -> record (kafkasim.record.thing)",
        "kafkasim/broker/bad.py:8: broker -> run (kafkasim.run.thing)",
        "kafkasim/broker/bad.py:9: broker -> run (kafkasim.run.thing)",
        "kafkasim/broker/bad.py:10: broker -> run (kafkasim.run.thing)",
        "kafkasim/broker/bad.py:16: broker -> run (kafkasim.run.thing)",
        "kafkasim/sim/sideways.py:1: sim -> timer (kafkasim.timer)",
        "kafkasim/timer/sideways.py:1: timer -> sim (kafkasim.sim.thing)",
    ]


# --- the rules -------------------------------------------------------------------------------------------


def test_every_package_is_in_the_layer_list() -> None:
    packages = {p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").is_file()}
    assert packages - set(LEVEL) == set(), "a new package must be placed in docs/architecture.md's layer list (and here)"
    assert set(LEVEL) - {TOP, BOTTOM} - packages == NOT_YET_BUILT, "a layer in the list has no package"


# Upward imports known today, being fixed on another branch of issue 11: (file, imported module) -> why.
# The test fails on any other upward import, and on one of these once it is gone (remove it from here then).
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def test_no_import_points_up_the_layers() -> None:
    bad = upward_imports()
    known = {entry for entry in bad if (entry.split(":")[0], entry.split("(")[-1].rstrip(")")) in KNOWN_UPWARD}
    assert not sorted(set(bad) - known), (
        "imports that point up docs/architecture.md's layer list:\n" + "\n".join(sorted(set(bad) - known))
    )
    gone = {key for key in KNOWN_UPWARD
            if not any(entry.startswith(f"{key[0]}:") and entry.endswith(f"({key[1]})") for entry in known)}
    assert not gone, f"fixed, remove from KNOWN_UPWARD: {sorted(gone)}"


def test_simpy_is_imported_only_by_the_simpy_layers() -> None:
    bad = [f"{imp.where}: {layer} imports {imp.module}" for layer, imp in _all_imports()
           if imp.module.split(".")[0] == "simpy" and layer not in SIMPY_LAYERS]
    assert not bad, (f"SimPy may be imported only in {sorted(SIMPY_LAYERS)} (timer/, purgatory/ and broker/ are "
                     "SimPy-free):\n" + "\n".join(bad))


def test_no_private_module_of_another_library_is_imported() -> None:
    stdlib = sys.stdlib_module_names
    bad = [f"{imp.where}: {imp.module}" for _, imp in _all_imports()
           if imp.module.split(".")[0] not in stdlib and imp.module.split(".")[0] != "kafkasim"
           and any(part.startswith("_") for part in imp.module.split(".")[1:])]
    assert not bad, "private modules of other libraries (use their public API):\n" + "\n".join(bad)


def test_scenario_imports_only_itself_and_the_bottom_layers() -> None:
    bad = [f"{imp.where}: scenario -> {target} ({imp.module})" for layer, imp in _all_imports()
           if layer == "scenario" and (target := layer_of_module(imp.module)) is not None
           and target not in SCENARIO_MAY_IMPORT]
    assert not bad, f"scenario/ may import only {sorted(SCENARIO_MAY_IMPORT)}:\n" + "\n".join(bad)


def test_components_never_import_the_scenario_models() -> None:
    bad = [f"{imp.where}: {layer} -> scenario ({imp.module})" for layer, imp in _all_imports()
           if layer in NO_SCENARIO_LAYERS and layer_of_module(imp.module) == "scenario"]
    assert not bad, ("network/, server/ and clients/ get frozen configuration objects built by run/build.py, "
                     "never pydantic scenario models:\n" + "\n".join(bad))


# --- import circles ---------------------------------------------------------------------------------------

MAX_CIRCLE = 3
# Circles of more modules than MAX_CIRCLE still in the house, each with its reason (remove one when it is
# broken; the test fails on a listed circle that is gone, so the list stays true).
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


def import_circles(root: Path = PACKAGE_DIR) -> list[frozenset[str]]:
    """The strongly connected components of more than one module in the import graph (every import counts,
    as for the layers), by Tarjan's algorithm."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        graph[_module_name(path, root)] = {imp.module for imp in imports_of(path, root)}
    for module, targets in graph.items():
        graph[module] = {t for t in targets if t in graph and t != module}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(frozenset(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def test_the_circle_finder_finds_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "kafkasim"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("")
    (package / "a" / "x.py").write_text("from kafkasim.a import y\n")
    (package / "a" / "y.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kafkasim.a import z\n")
    (package / "a" / "z.py").write_text("import kafkasim.a.x\n")
    assert import_circles(package) == [frozenset({"kafkasim.a.x", "kafkasim.a.y", "kafkasim.a.z"})]


def test_no_import_circle_of_more_than_three_modules() -> None:
    circles = import_circles()
    big = [sorted(c) for c in circles if len(c) > MAX_CIRCLE and c not in KNOWN_CIRCLES]
    assert not big, f"import circles of more than {MAX_CIRCLE} modules: {big}"
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in circles]
    assert not gone, f"listed circles that are gone (take them off KNOWN_CIRCLES): {gone}"
