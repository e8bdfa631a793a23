"""Ordering tasks by their dependencies."""

import heapq


class CycleError(Exception):
    """The dependencies form a cycle; `cycle` lists it, first task repeated at the end."""

    def __init__(self, cycle):
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


def order(deps):
    """Every task of `deps` (task -> tasks it needs first), each after its dependencies.

    Among the valid orders, the alphabetically smallest (Kahn's algorithm with a heap).
    """
    needs = {task: set(ds) for task, ds in deps.items()}
    for ds in deps.values():
        for dep in ds:
            needs.setdefault(dep, set())
    needed_by = {task: set() for task in needs}
    for task, ds in needs.items():
        for dep in ds:
            needed_by[dep].add(task)
    waiting = {task: len(ds) for task, ds in needs.items()}
    ready = [task for task, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        task = heapq.heappop(ready)
        result.append(task)
        for other in needed_by[task]:
            waiting[other] -= 1
            if waiting[other] == 0:
                heapq.heappush(ready, other)
    if len(result) < len(needs):
        raise CycleError(_find_cycle({t for t, n in waiting.items() if n > 0}, needs))
    return result


def _find_cycle(stuck, needs):
    """A cycle among the `stuck` tasks, from its alphabetically first task."""
    path, seen = [], {}
    task = min(stuck)
    while task not in seen:
        seen[task] = len(path)
        path.append(task)
        task = min(dep for dep in needs[task] if dep in stuck)
    cycle = path[seen[task]:]
    first = cycle.index(min(cycle))
    cycle = cycle[first:] + cycle[:first]
    return cycle + [cycle[0]]
