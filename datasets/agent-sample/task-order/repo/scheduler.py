"""Ordering tasks by their dependencies."""


class CycleError(Exception):
    """The dependencies form a cycle; `cycle` lists it, first task repeated at the end."""

    def __init__(self, cycle):
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


def order(deps):
    """Every task of `deps` (task -> tasks it needs first), each after its dependencies."""
    result = []
    seen = set()

    def visit(task):
        if task in seen:
            return
        for dep in deps.get(task, ()):
            visit(dep)
        seen.add(task)
        result.append(task)

    for task in deps:
        visit(task)
    return result
