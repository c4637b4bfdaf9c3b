"""``harness compare``: run designs x scenarios x seeds in parallel processes, resumably.

Each finished cell is appended to ``cells.jsonl`` in the output folder as soon as it is done, so an
interrupted comparison continues where it stopped. A cell is reused only when its fingerprint (the design
as data, the scenario, the seed and the model) matches: editing a preset, a design file or a scenario
reruns the cells it touches instead of mixing old and new results. Changes to the harness's code are not
in the fingerprint; after one, use a new ``--out`` folder. Metrics, the report and the plots are computed
from those records afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lg_harness.core.design import Design, load_design
from lg_harness.errors import HarnessError
from lg_harness_lab.evals import cell_health

CELLS = "cells.jsonl"


@dataclass(frozen=True)
class Task:
    design: dict[str, Any]
    scenario: dict[str, Any]
    seed: int
    model: str
    domain: str = "shop"
    source: str | None = None  # a .py design file the worker loads the design from (its parts are Python objects)

    @property
    def cell(self) -> str:
        return f"{self.design['name']}|{self.scenario['id']}|{self.seed}"

    @property
    def fingerprint(self) -> str:
        """What the cell's result depends on, besides the code: a finished cell is reused only if it matches."""
        inputs = {"design": self.design, "scenario": self.scenario, "seed": self.seed, "model": self.model}
        if self.domain != "shop":  # so the shop's cells of earlier runs keep their fingerprints
            inputs["domain"] = self.domain
        if self.source:
            inputs["source"] = self.source
        if self.model.startswith("sim"):  # "sim" names whatever profile is the default: pin the profiles' text
            from simlm.faults import profiles_digest

            inputs["profiles"] = profiles_digest()
        return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _design_of(task: Task) -> Design:
    """The design a task carries. One whose parts are Python objects (a .py design file) travels as its dump,
    which names them: it is loaded again from its file, with the knobs the comparison set on it."""
    if task.source:
        from lg_harness.core.design import load_design
        from lg_harness.core.knobs import Knobs

        found = load_design(task.source)
        return found.model_copy(update={"name": task.design["name"], "knobs": Knobs.model_validate(task.design["knobs"])})
    return Design.model_validate(task.design)


def _work(task: Task) -> dict[str, Any]:
    # Runs in a worker process (or in-process with one worker): import here so the parent stays light.
    from lg_harness_lab.evals.runner import run_cell
    from lg_harness_lab.evals.scenario import Scenario

    design = _design_of(task)
    scenario = Scenario.model_validate(task.scenario)
    try:
        record = run_cell(design, scenario, task.seed, task.model, task.domain)
    except Exception as err:  # noqa: BLE001 - one broken cell must not sink the comparison
        record = {"cell": task.cell, "design": design.name, "scenario": scenario.id, "seed": task.seed,
                  "tags": scenario.tags, "lang": scenario.lang, "turns": [], "fault_events": [],
                  "crash": f"{type(err).__name__}: {err}"}
    if task.domain != record.get("domain"):  # a domain from a file or a server: scoring loads it by its spec
        record["domain_spec"] = task.domain
    return {**record, "fingerprint": task.fingerprint}


def _quiet_worker() -> None:
    """In worker processes only: the run records have everything, so logs would be noise."""
    import logging

    logging.getLogger("harness").setLevel(logging.CRITICAL)


def read_cells(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / CELLS
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by an interrupted run: that cell runs again
    return records


def plan_tasks(designs: Iterable[Design], scenarios: list[Any], seeds: int, model: str,
               domain: str = "shop") -> list[Task]:
    """Every cell; long scenarios first so the last minutes are not one slow worker."""
    ordered = sorted(scenarios, key=lambda s: -(len(s.turns) or 3 * len(s.goal.tasks if s.goal else [])))
    return [Task(d.model_dump(), s.model_dump(), seed, model, domain, d.source)
            for s in ordered for d in designs for seed in range(seeds)]


def run_compare(designs: list[str], scenarios: list[Any], *, seeds: int, model: str, out_dir: Path,
                workers: int | None = None, on_done: Callable[[int, int], None] | None = None,
                domain: str = "shop", model_timeout_s: float | None = None) -> list[dict[str, Any]]:
    """Run the missing cells and return all records of this comparison (old and new).

    ``domain`` is a spec ``load_domain`` reads (a pack name, ``module:attr`` or a file), so worker
    processes can load it too. ``model_timeout_s`` sets every design's per-call deadline alike (a model on
    a CPU answers in tens of seconds, not the 15 s a hosted one is given).
    """
    resolved = [load_design(d) for d in designs]
    if model_timeout_s is not None:
        resolved = [d.model_copy(update={"knobs": d.knobs.model_copy(update={"model_timeout_s": model_timeout_s})})
                    for d in resolved]
    names = [d.name for d in resolved]
    if len(set(names)) != len(names):
        raise HarnessError(f"designs named twice: {', '.join(names)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    planned = plan_tasks(resolved, scenarios, seeds, model, domain)
    wanted = {t.fingerprint for t in planned}
    # The newest record of each matching fingerprint (a cell may have been written twice by racing runs).
    # Failed cells (a crash, a model that gave no answer) are kept in the file but never reused.
    previous = list({r["fingerprint"]: r for r in read_cells(out_dir)
                     if r.get("fingerprint") in wanted and not cell_health.failed(r)}.values())
    done = {r["fingerprint"] for r in previous}
    tasks = [t for t in planned if t.fingerprint not in done]
    total, finished = len(planned), len(previous)
    if on_done:
        on_done(finished, total)
    records = list(previous)
    fresh: list[dict[str, Any]] = []
    try:
        with (out_dir / CELLS).open("a", encoding="utf-8") as sink:
            for record in _execute(tasks, workers or min(2, os.cpu_count() or 1)):
                sink.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
                sink.flush()
                records.append(record)
                fresh.append(record)
                finished += 1
                if not model.startswith(("sim", "paced")):  # a real model: say what the cell cost as it goes
                    from lg_harness_lab.evals.cost import cell_line

                    print(cell_line(record), file=sys.stderr, flush=True)
                if on_done:
                    on_done(finished, total)
                cell_health.check_early(fresh[:cell_health.EARLY_CELLS], model, out_dir / CELLS)
    except KeyboardInterrupt:
        raise HarnessError(f"interrupted: {finished} of {total} cells are saved in {out_dir / CELLS}; run the same "
                           "command again to go on from there (finished cells are not rerun)") from None
    return records


def _execute(tasks: list[Task], workers: int) -> Iterable[dict[str, Any]]:
    if workers <= 1 or len(tasks) <= 1:
        yield from (_work(t) for t in tasks)
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_quiet_worker)
    try:
        pending = set()
        queue = iter(tasks)
        for task in queue:  # keep a bounded number in flight so results stream back in order of finish
            pending.add(pool.submit(_work, task))
            if len(pending) >= workers * 4:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(_work, nxt))
    finally:  # stopped early or interrupted: drop the cells not started yet instead of running them
        pool.shutdown(wait=True, cancel_futures=True)


def write_outputs(summary: dict[str, Any], out_dir: Path, command: str) -> list[Path]:
    """``results.json``, ``report.md`` and the plots of one comparison, in that order."""
    from lg_harness_lab.evals.plots import write_plots
    from lg_harness_lab.evals.report import write_json, write_report

    plots = write_plots(summary, out_dir)  # first, so the report can link them
    return [write_json(summary, out_dir), write_report(summary, out_dir, command, plots), *plots]
