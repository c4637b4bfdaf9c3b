"""The house's layers, read by grimp from every import statement, those inside functions included.

The graph (assembly, nodes, memory, tools, core, llm, obs) never imports the service around it (storage
backends for many workers, leases, HTTP, CLI, evaluation, peers, benchmarks); the domain packs run on the graph
alone (their scenario generators are evaluation tools); simlm imports nothing of the harness; no module
imports itself round a cycle; nothing of the library imports the lab; and every library package is a folder of
lg_harness/ (one path, one import name).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("layers_script", ROOT / "scripts" / "layers.py")
assert spec is not None and spec.loader is not None, "scripts/layers.py is missing"
layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layers)

GRAPH = layers.LAYERS["graph"][1]
SERVICE = layers.LAYERS["service"][1] + layers.LAYERS["lab"][1]  # what the graph must never reach
LIBRARY = ("core", "graphs", "nodes", "memory", "tools", "llm", "obs", "domains", "service")
# Cycles the code still has, which this list may only lose (none left: evals reaches the peers' cells through
# the lg_harness.cell_runners entry point, so only peers import evals).
KNOWN_MODULE_CYCLES: list[set[str]] = []
KNOWN_PACKAGE_CYCLES: list[set[str]] = []


@pytest.fixture(scope="module")
def graph():
    return layers.import_graph()


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan), each a set."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def module_imports(graph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def test_grimp_sees_every_package_and_the_imports_inside_functions(graph):
    assert {layers.package_name(p) for layers_ in layers.LAYERS.values() for p in layers_[1]} <= graph.modules
    assert "lg_harness.service.http" in graph.modules and "lg_harness.graphs.app" in graph.modules
    # service.cli imports the Harness inside a command, so `harness --help` stays light
    assert graph.direct_import_exists(importer="lg_harness.service.cli", imported="lg_harness.graphs.app")
    # the layer check below can fail: the service does reach the graph
    assert graph.find_shortest_chain(importer="lg_harness.service", imported="lg_harness.graphs", as_packages=True)


def test_the_graph_never_imports_the_service_around_it(graph):
    chains = {(g, s): graph.find_shortest_chain(importer=layers.package_name(g), imported=layers.package_name(s),
                                                as_packages=True)
              for g in GRAPH for s in (*SERVICE, "domains")}
    bad = {pair: chain for pair, chain in chains.items() if chain is not None}
    assert not bad, f"the graph layer reaches the service (register through an entry point instead): {bad}"


def test_domain_packs_run_on_the_graph_alone(graph):
    """A pack (its domain, tools, backends, everything under lg_harness/domains/) imports only the graph: the scenario
    generators live in the lab (lab/lg_harness_lab/evals/generators/)."""
    packs = [m for m in graph.modules if m.startswith("lg_harness.domains.")]
    service = tuple(layers.package_name(s) + "." for s in SERVICE)
    bad = {m: sorted(d for d in graph.find_upstream_modules(m) if d.startswith(service)) for m in packs}
    assert not {m: found for m, found in bad.items() if found}


def test_the_simulated_model_imports_nothing_of_the_harness(graph):
    outside = {(m, i) for m in graph.modules if m.split(".")[0] == "simlm"
               for i in graph.find_modules_directly_imported_by(m) if i.split(".")[0] == "lg_harness"}
    assert not outside


def test_no_module_imports_itself_round_a_cycle(graph):
    found = cycles(module_imports(graph))
    new = [sorted(c) for c in found if c not in KNOWN_MODULE_CYCLES]
    gone = [sorted(c) for c in KNOWN_MODULE_CYCLES if c not in found]
    assert not new, f"import cycles (deferred imports count): {new}"
    assert not gone, f"fixed, so remove from KNOWN_MODULE_CYCLES: {gone}"


def test_no_package_imports_itself_round_a_cycle(graph):
    found = cycles(layers.package_imports(graph))
    new = [sorted(c) for c in found if c not in KNOWN_PACKAGE_CYCLES]
    gone = [sorted(c) for c in KNOWN_PACKAGE_CYCLES if c not in found]
    assert not new, f"package cycles: {new}"
    assert not gone, f"fixed, so remove from KNOWN_PACKAGE_CYCLES: {gone}"


def test_the_cycle_check_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    """A cycle made only by a deferred import is still a cycle."""
    package = tmp_path / "cyclic_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic_probe import b\n")
    (package / "b.py").write_text("def later():\n    from cyclic_probe import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = grimp.build_graph("cyclic_probe", cache_dir=None)
    assert cycles(module_imports(probe)) == [{"cyclic_probe.a", "cyclic_probe.b"}]


def test_the_committed_diagram_is_what_the_code_draws(graph):
    diagram = layers.block(layers.mermaid(layers.package_imports(graph)))
    for path in layers.FILES:
        assert layers.committed(path) == diagram, (
            f"{path.relative_to(ROOT)}: the layers diagram is stale; run python scripts/layers.py --write")


@pytest.mark.parametrize("folder", LIBRARY)
def test_each_library_package_is_a_folder_of_the_library(folder):
    """``lg_harness/<folder>`` is a real folder (no links to follow): a file has one path and one import name."""
    path = ROOT / "lg_harness" / folder
    assert path.is_dir() and not path.is_symlink() and (path / "__init__.py").is_file()
    assert not (ROOT / folder).exists(), f"{folder}/ at the top of the repository: it lives in lg_harness/{folder}/"


def test_nothing_in_the_library_imports_the_lab(graph):
    """The library installs alone (its wheel holds no lab module): no module of lg_harness reaches lg_harness_lab."""
    chain = graph.find_shortest_chain(importer="lg_harness", imported="lg_harness_lab", as_packages=True)
    assert chain is None, f"the library imports the lab: {chain}"
    # the check can fail: the lab does reach the library
    assert graph.find_shortest_chain(importer="lg_harness_lab", imported="lg_harness", as_packages=True)


def test_the_service_and_the_peers_register_through_entry_points():
    """How the graph reaches Postgres and the core reaches peer designs without importing them."""
    from importlib.metadata import entry_points

    stores = {ep.name: ep.value for ep in entry_points(group="lg_harness.stores")}
    designs = {ep.name: ep.value for ep in entry_points(group="lg_harness.designs")}
    assert stores["postgresql"] == stores["postgres"] == "lg_harness.service.postgres:open_postgres"
    assert designs["peer"] == "lg_harness_lab.peers:peer_design"


def test_a_database_url_of_no_registered_scheme_names_the_ones_there_are(tmp_path):
    from lg_harness.errors import HarnessError
    from lg_harness.graphs.storage import open_stores

    with pytest.raises(HarnessError, match=r"must start with postgres:// or postgresql://, got 'mysql://"):
        open_stores(tmp_path, "mysql://harness@127.0.0.1/harness")


def test_a_design_name_of_no_registered_source_lists_the_sources():
    from lg_harness.core.design import load_design
    from lg_harness.errors import HarnessError

    assert load_design("peer:langchain").name == "peer:langchain"
    with pytest.raises(HarnessError, match=r"unknown design 'nope:x'; .*from packages: peer:<name>"):
        load_design("nope:x")
