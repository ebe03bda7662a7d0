"""No import circle anywhere in app/: a module that imports, directly or through others,
a module that imports it back is one that cannot be read or tested alone.

The graph is grimp's (the library import-linter is built on), and it counts imports under
``TYPE_CHECKING`` too: a circle that only the type checker follows is still a circle a reader
has to follow.
"""

from __future__ import annotations

import grimp

from tests.import_circles import circles


def test_circles_finds_a_circle_through_three_modules() -> None:
    """The finder itself, on a made-up graph with one circle of three and a tail."""
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z", "a.w"):
        graph.add_module(module)
    for importer, imported in [("a.x", "a.y"), ("a.y", "a.z"), ("a.z", "a.x"),
                               ("a.w", "a.x")]:
        graph.add_import(importer=importer, imported=imported)
    assert circles(graph) == [["a.x", "a.y", "a.z"]]


def test_no_import_circle_in_the_app() -> None:
    graph = grimp.build_graph("specula", "specula_tools", include_external_packages=False)
    assert circles(graph) == []
