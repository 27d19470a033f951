"""The tree shows the layers, and imports point down them (DESIGN.md, "Layers"; README, "Architecture").

Each module's layer is read off its path alone; an import from a lower layer to a higher one fails here,
naming the edge. ``../shared/tools/import_graph.py`` checks cycles, local imports and module length; this
checks the direction.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The records layer: plain data, the settings registry, the caches, the encodings table, the record writer.
RECORDS = {"ctxcore.errors", "ctxcore.records", "ctxcore.settings", "ctxcore.encodings", "ctxcore.memo",
           "ctxcore.serialize", "ctxcore.escape", "ctxcore.seal"}
LAYERS = ["records", "stages", "pipeline", "io", "analysis", "replay", "cli", "ui"]


def layer_of(module: str) -> str:
    """The layer a module is in, from its dotted name only.

    >>> layer_of("ctxcore.stages.dedup"), layer_of("ctxcore.io.formats.otlp"), layer_of("ctxcore.records")
    ('stages', 'io', 'records')
    """
    parts = module.split(".")
    if parts[0] in ("ctxui", "pages", "app"):
        return "ui"
    if module in RECORDS:
        return "records"
    if module == "ctxcore.pipeline":
        return "pipeline"
    if len(parts) > 2 and parts[1] in ("stages", "io", "analysis", "replay"):
        return parts[1]
    if len(parts) == 2 and parts[1] in ("stages", "io", "analysis", "replay"):
        return parts[1]                                   # the subpackage's own __init__
    if module in ("ctxcore", "ctxcore.cli", "ctxcore.__main__", "ctxcore.serve"):  # serve: the CLI's endpoint
        return "cli"
    raise KeyError(f"{module}: no layer; put it in a layer's folder, or name it in tests/test_layers.py")


def modules() -> dict[str, Path]:
    out = {}
    for top in ("ctxcore", "ctxui", "pages"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    out["app"] = ROOT / "app.py"
    return out


def imports(module: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, imported module) for every import of one of our modules, module-level and local alike."""
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] in ("ctxcore", "ctxui")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            subs = [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in known]
            out += [(node.lineno, s) for s in subs]
            if len(subs) < len(node.names) and prefix in known:
                out.append((node.lineno, prefix))
    return [(line, target) for line, target in out if target in known and target != module]


def violations(checked: dict[str, Path], known: set[str]) -> list[str]:
    """Every import from ``checked``'s modules into a higher layer, as FILE:LINE and the two layers."""
    found = []
    for module, path in checked.items():
        mine = LAYERS.index(layer_of(module))
        where = path if path.is_relative_to(ROOT) else ROOT.joinpath(*module.split(".")[:-1], module.split(".")[-1] + ".py")
        for line, target in imports(module, path, known):
            theirs = LAYERS.index(layer_of(target))
            if theirs > mine:
                found.append(f"{where.relative_to(ROOT)}:{line}: {module} ({LAYERS[mine]}) imports {target} "
                             f"({LAYERS[theirs]}), a higher layer")
    return found


def test_every_module_has_a_layer_read_off_its_path():
    assert {m: layer_of(m) for m in modules()}  # raises, naming the module, when one has none


def test_imports_point_down_the_layers():
    mods = modules()
    assert violations(mods, set(mods)) == []


def test_the_engine_never_imports_streamlit_or_the_ui():
    bad = []
    for module, path in modules().items():
        if not module.startswith("ctxcore"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            bad += [f"{module}: {n}" for n in names if n.split(".")[0] in ("streamlit", "ctxui", "pages")]
    assert bad == []


@pytest.mark.parametrize("module, source, expected", [
    # a stage that reaches up into io, and io that reaches up into analysis: both named with their line
    ("ctxcore.stages.order", "import os\nfrom ..io.reading import decode\n",
     ["ctxcore/stages/order.py:2: ctxcore.stages.order (stages) imports ctxcore.io.reading (io), a higher layer"]),
    ("ctxcore.io.loaded", "from ..analysis import explain\n",
     ["ctxcore/io/loaded.py:1: ctxcore.io.loaded (io) imports ctxcore.analysis.explain (analysis), a higher layer"]),
    ("ctxcore.records", "def f():\n    from .pipeline import build\n",
     ["ctxcore/records.py:2: ctxcore.records (records) imports ctxcore.pipeline (pipeline), a higher layer"]),
    # downward and sideways imports are fine
    ("ctxcore.analysis.sent", "from ..stages.tokens import get_tokenizer\nfrom .reach import normalise\n", []),
])
def test_an_upward_import_is_named_with_its_line(tmp_path, module, source, expected):
    fake = tmp_path.joinpath(*module.split(".")[:-1], module.split(".")[-1] + ".py")
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(source, encoding="utf-8")
    assert violations({module: fake}, set(modules())) == expected
