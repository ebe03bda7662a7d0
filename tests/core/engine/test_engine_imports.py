"""The engine's import graph has no cycle that import-linter's contracts cannot see.

``acyclic_siblings`` (pyproject.toml) keeps sibling modules free of cycles; it does not
look at a module importing a package it sits in (``drafters/model.py`` importing
``specula.core.engine.drafters`` for a patch point), which is a cycle too, since the
package's ``__init__`` imports the module. Patch points live in the module that owns
the function, and tests patch that module.
"""

from __future__ import annotations

import grimp


def _imports_of_own_package(graph: grimp.ImportGraph, root: str) -> list[tuple[str, str]]:
    """(module, package) for every module under ``root`` importing a package it belongs to."""
    found = []
    for module in sorted(graph.find_descendants(root) | {root}):
        for imported in graph.find_modules_directly_imported_by(module):
            if module.startswith(imported + "."):
                found.append((module, imported))
    return found


def test_no_engine_module_imports_its_own_package() -> None:
    graph = grimp.build_graph("specula", include_external_packages=False)
    assert _imports_of_own_package(graph, "specula.core.engine") == []


def test_the_check_sees_a_module_importing_its_package() -> None:
    """Power: a graph holding the old ``drafters.model -> drafters`` import is caught."""
    graph = grimp.ImportGraph()
    for m in ("p", "p.drafters", "p.drafters.model", "p.drafters.base"):
        graph.add_module(m)
    graph.add_import(importer="p.drafters", imported="p.drafters.model")
    graph.add_import(importer="p.drafters.model", imported="p.drafters.base")
    assert _imports_of_own_package(graph, "p") == []
    graph.add_import(importer="p.drafters.model", imported="p.drafters")
    assert _imports_of_own_package(graph, "p") == [("p.drafters.model", "p.drafters")]
