"""Print the import cycles of a Python package (module-level, function-local and TYPE_CHECKING imports).

Usage, from the project root (exit status 1 if any of the three graphs below has a cycle):
    python tools/import_graph.py src/lsmlake            # the cycles (strongly connected components)
    python tools/import_graph.py src/lsmlake --local    # also every function-local and TYPE_CHECKING import
    python tools/import_graph.py src/lsmlake --edges    # also every edge inside the package, with its kind

Each import is found with `ast` (nothing is imported or run) and has one kind:
  module   runs when the module loads (top level, also inside top-level try/if/class bodies)
  local    inside a function body or a lambda; also a load by name, `importlib.import_module("pkg.x")` or
           `__import__`, anywhere. A load whose name is not a literal (`import_module(TABLE[name])`) is
           taken to reach every "pkg.x" or "pkg.x:attr" string in the module's dict literals.
  typing   under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)
`from pkg.a import b` is an edge to pkg.a.b when that is a module, else to pkg.a. A submodule import adds
no edge to its parent package's __init__ (grimp and import-linter count the same way).
Three graphs are reported: module imports; module + local (what can run); module + local + typing.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

KINDS = ("module", "local", "typing")
LOADERS = ("import_module", "__import__")


class Edge(NamedTuple):
    """One import of a package module by another."""

    target: str
    kind: str
    line: int


Graph = dict[str, list[Edge]]


def discover(package_dir: Path) -> dict[str, Path]:
    """Module name -> file, for every .py file under the package directory."""
    root = package_dir.resolve()
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _strings(node: ast.AST) -> Iterator[str]:
    """The string constants in an expression (a dict value may be a tuple of them)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def lazy_targets(tree: ast.Module, top: str) -> list[str]:
    """Module names that a load by computed name may reach: "top.x" or "top.x:attr" strings in dict values."""
    found = {
        text.partition(":")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for value in node.values
        if value is not None
        for text in _strings(value)
        if text.startswith(f"{top}.") and " " not in text
    }
    return sorted(found)


class Collector(ast.NodeVisitor):
    """Collects the imports of one module that point into its own top-level package."""

    def __init__(self, module: str, is_package: bool, known: set[str], lazy: Sequence[str]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.known = known
        self.lazy = lazy
        self.top = module.split(".")[0]
        self.func_depth = 0
        self.typing_depth = 0
        self.edges: list[Edge] = []

    def _kind(self) -> str:
        if self.func_depth:
            return "local"
        return "typing" if self.typing_depth else "module"

    def _add(self, target: str, line: int, kind: str | None = None) -> None:
        """An edge to the longest known module that prefixes `target` (none to the module itself)."""
        parts = target.split(".")
        while parts and ".".join(parts) not in self.known:
            parts.pop()
        dest = ".".join(parts)
        if dest and dest != self.module:
            self.edges.append(Edge(dest, kind or self._kind(), line))

    def _resolve_relative(self, level: int, name: str | None) -> str:
        base = self.package.split(".")
        if level > 1:
            base = base[: len(base) - (level - 1)]
        return ".".join([*base, name] if name else base)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.func_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.func_depth -= 1

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.visit_FunctionDef(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.func_depth += 1
        self.generic_visit(node)
        self.func_depth -= 1

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.typing_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.typing_depth -= 1
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == self.top:
                self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._resolve_relative(node.level, node.module) if node.level else node.module or ""
        if base.split(".")[0] != self.top:
            return
        for alias in node.names:
            full = f"{base}.{alias.name}"
            self._add(full if full in self.known else base, node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in LOADERS and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if arg.value.split(".")[0] == self.top:
                    self._add(arg.value, node.lineno, "local")
            else:
                for target in self.lazy:
                    self._add(target, node.lineno, "local")
        self.generic_visit(node)


def collect(modules: dict[str, Path]) -> Graph:
    """Every module's imports of other modules of the package."""
    known = set(modules)
    graph: Graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        top = name.split(".")[0]
        collector = Collector(name, path.name == "__init__.py", known, lazy_targets(tree, top))
        collector.visit(tree)
        graph[name] = collector.edges
    return graph


def sccs(nodes: Sequence[str], adj: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the components of more than one module (or with a self-loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(adj.get(start, ()))))]
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(adj.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component: list[str] = []
                    while not component or component[-1] != v:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                    if len(component) > 1 or v in adj.get(v, ()):
                        out.append(sorted(component))
    return sorted(out, key=lambda c: (-len(c), c))


def report(graph: Graph, kinds: tuple[str, ...], title: str) -> int:
    """Print the cycles of the graph of the given import kinds, each edge with kind:line; their count."""
    adj: dict[str, set[str]] = defaultdict(set)
    tags: dict[tuple[str, str], list[str]] = defaultdict(list)
    for src, edges in graph.items():
        for edge in edges:
            if edge.kind in kinds:
                adj[src].add(edge.target)
                tag = f"{edge.kind}:{edge.line}"
                if tag not in tags[(src, edge.target)]:
                    tags[(src, edge.target)].append(tag)
    components = sccs(sorted(graph), adj)
    print(f"== {title}: {len(components)} cycle(s)")
    for i, component in enumerate(components, 1):
        members = set(component)
        print(f"-- SCC {i} ({len(component)} modules): {', '.join(component)}")
        for src in component:
            for dst in sorted(adj[src] & members):
                print(f"     {src} -> {dst}  [{', '.join(tags[(src, dst)])}]")
    return len(components)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the graph's counts and cycles; 1 if any graph has a cycle, else 0."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("package_dir", type=Path)
    parser.add_argument("--edges", action="store_true", help="print every edge inside the package")
    parser.add_argument("--local", action="store_true", help="list function-local and TYPE_CHECKING imports")
    args = parser.parse_args(argv)
    modules = discover(args.package_dir)
    graph = collect(modules)
    counts = {k: sum(1 for edges in graph.values() for e in edges if e.kind == k) for k in KINDS}
    print(f"{len(modules)} modules; edges: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    if args.edges:
        for src in sorted(graph):
            for target, kind, line in sorted(set(graph[src])):
                print(f"EDGE {kind:6} {src} -> {target}  (line {line})")
    if args.local:
        for src in sorted(graph):
            for target, kind, line in sorted(set(graph[src]), key=lambda e: (e.line, e.target)):
                if kind != "module":
                    print(f"{kind.upper():6} {src}:{line} -> {target}")
    cycles = [
        report(graph, ("module",), "module-level imports"),
        report(graph, ("module", "local"), "module-level + function-local imports"),
        report(graph, KINDS, "module-level + function-local + TYPE_CHECKING imports"),
    ]
    return 1 if any(cycles) else 0


if __name__ == "__main__":
    sys.exit(main())
