"""Hatch build hook: compile kafkasim's hot modules with mypyc when the wheel is built.

The modules listed under ``[tool.hatch.build.targets.wheel.hooks.custom] compile`` in pyproject.toml are
compiled to C extensions (mypyc, then the machine's C compiler). They stay importable as the same modules:
an extension module shadows the ``.py`` beside it. When compiling is impossible (no C compiler, a mypyc
error) the build says why on stderr and the package stays pure Python, which behaves identically (CI runs
the engine's golden outputs through both). ``KAFKASIM_PURE=1`` in the environment asks for the pure build.

* A regular wheel (``pip install .``, ``uv build``) carries the extensions and is tagged for the platform.
* An editable install (what ``uv run`` makes of the checkout) puts them beside the sources, as setuptools'
  ``build_ext --inplace`` does, and records what it built in ``kafkasim/_compiled.json``; uv rebuilds the
  install whenever a source changes (``[tool.uv] cache-keys``), so a compiled module never outlives its
  source, and ``kafkasim.compiled.stale_sources()`` lists any that did (a checkout run without uv).

The C sources and object files are kept in ``build/mypyc/`` of the checkout, so a rebuild after an edit
recompiles only what changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MANIFEST = "kafkasim/_compiled.json"
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _say(message: str) -> None:
    print(f"kafkasim build: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _sources(root: Path, patterns: list[str]) -> list[str]:
    """The .py files named by ``patterns`` (files or directories), relative to ``root``, sorted.

    A package's ``__init__.py`` stays interpreted: it only re-exports, and a compiled one whose group library
    lives inside the package gets a wrong ``__path__`` (mypyc places it as if the library were top level).
    """
    found: set[str] = set()
    for pattern in patterns:
        path = root / pattern
        if path.is_dir():
            found.update(str(p.relative_to(root)) for p in path.rglob("*.py") if p.name != "__init__.py")
        elif path.is_file():
            found.add(pattern)
        else:
            raise ValueError(f"pyproject.toml: tool.hatch.build.targets.wheel.hooks.custom.compile: {pattern!r} "
                             "is neither a file nor a directory of the checkout")
    return sorted(found)


def _groups(sources: list[str]) -> dict[str, list[str]]:
    """The sources by kafkasim's subpackage (``kafkasim/timer/x.py`` -> ``timer``)."""
    groups: dict[str, list[str]] = {}
    for src in sources:
        parts = Path(src).parts
        groups.setdefault(parts[1] if len(parts) > 2 else "top", []).append(src)
    return groups


def _ccache(root: Path, out: Path, extensions: list[Any]) -> dict[str, str]:
    """The environment that compiles through ccache (https://ccache.dev), when the machine has it and
    ``KAFKASIM_NO_CCACHE`` is unset: a fresh checkout (CI's, a git worktree) then reuses the objects of any
    earlier build of the same C instead of compiling ~40 MB of it again (100 s on 2 cores).

    Each compile must look the same from any checkout and any build environment: ccache rewrites the absolute
    paths under ``root`` into relative ones (``CCACHE_BASEDIR``), and mypyc's runtime headers, which its C
    includes from the build environment uv creates afresh for every build, are copied under ``out`` (their
    times kept, so that ccache's direct mode can trust them)."""
    if os.environ.get("KAFKASIM_NO_CCACHE", "") not in ("", "0") or shutil.which("ccache") is None:
        return {}
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    if "ccache" in cc:
        return {}
    from mypyc.build import include_dir

    runtime = str(Path(include_dir()).resolve())
    copy = out / "lib-rt"
    shutil.copytree(runtime, copy, copy_function=shutil.copy2, dirs_exist_ok=True)
    for ext in extensions:
        ext.include_dirs = [str(copy) if str(Path(d).resolve()) == runtime else d for d in ext.include_dirs]
    return {"CC": f"ccache {cc}", "CCACHE_BASEDIR": str(root.resolve()), "CCACHE_NOHASHDIR": "1"}


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    old = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _remove_in_place(root: Path) -> None:
    """Delete the extensions an earlier editable build put beside the sources (and its manifest)."""
    manifest = root / MANIFEST
    if not manifest.exists():
        return
    built = json.loads(manifest.read_text())
    for ext in built.get("extensions", []):
        with contextlib.suppress(FileNotFoundError):
            (root / ext).unlink()
    manifest.unlink()


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"
    _scratch: Path | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        editable = version == "editable"
        if editable:
            _remove_in_place(root)
        if os.environ.get("KAFKASIM_PURE", "") not in ("", "0"):
            _say("KAFKASIM_PURE is set: building the pure-Python package")
            return
        patterns = list(self.config.get("compile", []))
        if not patterns:
            return
        excluded = set(_sources(root, list(self.config.get("exclude", []))))
        sources = [src for src in _sources(root, patterns) if src not in excluded]
        # The editable build keeps its C and objects in the checkout (a rebuild recompiles only what changed).
        if editable:
            out = root / "build" / "mypyc"
        else:
            out = self._scratch = Path(tempfile.mkdtemp(prefix="kafkasim-mypyc-"))
        started = time.monotonic()
        try:
            try:
                built = self._compile(root, sources, out)
            except (Exception, SystemExit):
                if not editable:
                    raise
                # mypyc's incremental state can trip over a change of the module list: once more, afresh.
                shutil.rmtree(out, ignore_errors=True)
                built = self._compile(root, sources, out)
        except (Exception, SystemExit) as exc:  # mypyc exits on a type error; any failure: the pure package
            why = f"{type(exc).__name__}: {exc}"
            _say(f"could not compile with mypyc ({why}); building the pure-Python package, "
                 "which behaves identically but runs slower")
            if editable:
                # uv shows a build's stderr only when the build fails, and this one does not: the manifest keeps
                # why, and every `kafkasim` command and the test suite's summary say it (kafkasim.compiled). No
                # sources' digests: nothing compiled can be stale.
                _write_manifest(root, {"extensions": [], "fallback": why})
            return
        _say(f"compiled {len(sources)} modules with mypyc in {time.monotonic() - started:.0f} s")
        if editable:
            self._install_in_place(root, out, built, sources)
        else:
            for rel in built:
                build_data["force_include"][str(out / "lib" / rel)] = rel
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        if self.target_name == "wheel" and version == "editable":
            _compile_bytecode(Path(self.root) / "kafkasim")

    def _compile(self, root: Path, sources: list[str], out: Path) -> list[str]:
        """Build the extensions into ``out``; return their paths relative to it."""
        from mypyc.build import mypycify
        from setuptools import Distribution
        from setuptools.command.build_ext import build_ext

        out.mkdir(parents=True, exist_ok=True)
        with _cwd(root):
            extensions = mypycify(
                # Type errors in modules the compiled ones import but the build lacks the dependencies of
                # (an "unused" ignore where a library is missing) are the project's mypy run's business.
                ["--no-warn-unused-ignores", *sources],
                opt_level="3",
                # One group (one C file, one shared library) per package: the groups compile in parallel,
                # and an edit recompiles only its own package's group.
                separate=[(group, f"kafkasim._native_{package}") for package, group in _groups(sources).items()],
                target_dir=str(out / "c"),
            )
            launcher = _ccache(root, out, extensions)

            def build(environment: dict[str, str]) -> Any:
                command = build_ext(Distribution({"name": "kafkasim", "ext_modules": extensions}))
                command.build_lib = str(out / "lib")
                command.build_temp = str(out / "temp")
                command.parallel = os.cpu_count() or 1
                command.ensure_finalized()
                with _environment(environment):
                    command.run()  # an extension whose sources did not change since the last build is not rebuilt
                return command

            try:
                command = build(launcher)
            except (Exception, SystemExit) as exc:
                if not launcher:
                    raise
                # ccache itself failing (a cache directory it cannot write) is no reason for the pure package.
                _say(f"compiling through ccache failed ({type(exc).__name__}: {exc}); compiling without it")
                command = build({})
            lib = (out / "lib").resolve()
            return sorted(str(Path(command.get_ext_fullpath(ext.name)).resolve().relative_to(lib))
                          for ext in extensions)

    def _install_in_place(self, root: Path, out: Path, built: list[str], sources: list[str]) -> None:
        """Copy the extensions beside the sources (each file replaced atomically)."""
        extensions = []
        for rel in built:
            target = root / rel
            tmp = target.with_suffix(".tmp")
            shutil.copy2(out / "lib" / rel, tmp)
            os.replace(tmp, target)
            extensions.append(rel)
        _write_manifest(root, {"extensions": extensions, "sources": {src: _digest(root / src) for src in sources}})


def _write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """What an editable build compiled (and from which sources), or why it compiled nothing; atomically."""
    tmp_manifest = root / (MANIFEST + ".tmp")
    tmp_manifest.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    os.replace(tmp_manifest, root / MANIFEST)


def _compile_bytecode(package: Path) -> None:
    """Write the bytecode of an editable install's sources beside them (``__pycache__``), as an installer does
    for a wheel's (pip by default, uv with ``compile-bytecode``): the interpreter then reads it even where
    PYTHONDONTWRITEBYTECODE keeps it from writing its own, instead of compiling every module on every start.
    An edited source is compiled afresh at its next import, as always. Never fails the build."""
    import compileall

    started = time.monotonic()
    try:
        ok = compileall.compile_dir(str(package), quiet=1, workers=0)
    except Exception as exc:  # a read-only checkout: the interpreter compiles at import, as without this
        _say(f"could not write kafkasim's bytecode ({type(exc).__name__}: {exc})")
        return
    if ok:
        _say(f"wrote kafkasim's bytecode in {time.monotonic() - started:.1f} s")
    else:
        _say("could not write some of kafkasim's bytecode (compileall's messages above)")
