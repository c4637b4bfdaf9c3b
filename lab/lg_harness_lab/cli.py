"""The lab's commands of ``harness``: ``compare``, ``bench`` and ``calibrate``.

They measure designs (the evaluation, the benchmarks, the calibration probes), so they live in the lab and join
the ``harness`` command when the lab is installed: the lab registers :func:`register` in the ``lg_harness.commands``
entry point group (``lab/pyproject.toml``), which ``lg_harness.service.cli`` reads. Without the lab these commands
say how to install it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from lg_harness.errors import HarnessError
from lg_harness.service.cli import (
    DURABILITY,
    STORAGE,
    DebugOpt,
    DomainOpt,
    JsonOpt,
    ModelOpt,
    cli_command,
    domain_spec,
    emit_json,
    err,
    out,
)
from lg_harness.service.cli import app as harness_app

QUICK_LIMIT = 36


@cli_command
def compare(designs: Annotated[str, typer.Option(help="comma-separated presets, design files (.yaml, .toml, or "
                                                 "file.py:DESIGN with parts as Python objects) or specs such as "
                                                 "harness-no:<knob>, harness-with:<role>=<variant>")] =
            "naive,framework-default,custom-lightweight,state-machine,layered,harness",
            scenarios: Annotated[str, typer.Option(help="'builtin' or a scenario file/folder")] = "builtin",
            seeds: Annotated[int, typer.Option(min=1, help="runs per scenario, each with its own model seed")] = 1,
            limit: Annotated[int | None, typer.Option(min=1, help="only the first K scenarios (a spread subset)")]
            = QUICK_LIMIT,
            full: Annotated[bool, typer.Option("--full", help="every scenario, 3 seeds")] = False,
            split: Annotated[str, typer.Option(help="dev | test | heldout | all, or several (test,heldout: each "
                                               "split's report in --out/<split>/ and headline.md side by side; tune "
                                               "on dev only)")] = "test",
            ablations: Annotated[bool, typer.Option("--ablations", help="add harness with each knob off alone, "
                                                    "and the part swaps the claims need")] = False,
            profiles: Annotated[str | None, typer.Option(help="comma-separated sim profiles: one comparison per "
                                                         "profile in --out/<profile>/, and sensitivity.md")] = None,
            sweep: Annotated[str | None, typer.Option(help="comma-separated fitted rates, or 'default' (call_after_"
                                                      "result,repeat_after_error,skip_call,invent_missing): the sim "
                                                      "with each at both ends of its 95% interval, one comparison "
                                                      "per variant in --out/<variant>/, and sensitivity.md")] = None,
            model: ModelOpt = "sim", out_dir: Annotated[Path, typer.Option("--out", help="output folder")] =
            Path("out/compare"), workers: Annotated[int, typer.Option(min=1)] = 2, domain: DomainOpt = None,
            model_timeout: Annotated[float | None, typer.Option(min=1, help="every design's per-call deadline "
                                                                "in s (a local CPU model needs more than 15)")] = None,
            agreement: Annotated[str | None, typer.Option(help="a sim spec (e.g. sim): run the same cells on it "
                                                          "and on --model, in --out/sim and --out/real, and write "
                                                          "agreement.md (success side by side, cells with the same "
                                                          "verdict)")] = None,
            json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """A/B the designs on the same scenarios: results.json, report.md and plots in --out (resumable)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from lg_harness.core.design import load_design
    from lg_harness.core.domain import load_domain
    from lg_harness_lab.evals.ablations import ABLATED, ablation_specs
    from lg_harness_lab.evals.compare import run_compare, write_outputs
    from lg_harness_lab.evals.headline import split_records, write_headline
    from lg_harness_lab.evals.metrics import aggregate
    from lg_harness_lab.evals.scenario import load_scenarios, parse_splits, select_split, spread
    from lg_harness_lab.evals.scenario_sets import scenario_sets
    from lg_harness_lab.evals.sensitivity import write_sensitivity, write_sweep

    if full:
        seeds, limit = max(seeds, 3), None
    domain = domain_spec(domain)
    pack = load_domain(domain)
    sets = scenario_sets(pack)
    everything = load_scenarios(sets[scenarios] if scenarios in sets else Path(scenarios))
    splits = parse_splits(split)
    # the split first, so a quick subset never mixes in dev scenarios; --limit applies to each split
    suites = {sp: (spread(chosen, limit) if limit else chosen) for sp in splits
              for chosen in [select_split(everything, sp)]}
    if empty := [sp for sp, chosen in suites.items() if not chosen]:
        raise HarnessError(f"no scenarios in the {', '.join(empty)} split of {scenarios}; try --split all")
    suite = list({s.id: s for chosen in suites.values() for s in chosen}.values())
    names = [d.strip() for d in designs.split(",") if d.strip()]
    if ablations:
        names += [n for n in [ABLATED, *ablation_specs(ABLATED)] if n not in names]
    variants = _sweep(sweep, model, domain) if sweep else []
    runs = _runs(model, out_dir, profiles, variants, agreement)
    kept: dict[str, list[dict[str, Any]]] = {}
    command = "harness " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["compare"] else "harness compare"
    done: dict[str | None, dict[str, Any]] = {}
    for profile, spec, folder in runs:
        with Progress(TextColumn(f"compare {profile or ''}".strip()), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, disable=json_out) as progress:
            bar = progress.add_task("cells", total=None)
            records = run_compare(names, suite, seeds=seeds, model=spec, out_dir=folder, workers=workers,
                                  domain=domain, model_timeout_s=model_timeout,
                                  on_done=lambda n, total, bar=bar, progress=progress:
                                  progress.update(bar, completed=n, total=total))
        order = [load_design(n).name for n in names]
        kept[str(profile)] = records
        parts = {sp: aggregate(part, suites[sp], split=sp, order=order)
                 for sp, part in split_records(records, suites).items()}
        files = write_outputs(parts[splits[0]], folder, command) if len(splits) == 1 else \
            [f for sp in splits for f in write_outputs(parts[sp], folder / sp, command)]
        if len(splits) > 1 or (folder / "headline.md").exists():  # a split run here before joins the table
            files.append(write_headline(folder, command, parts))
        # the first split is the one the terminal table, --json and the sensitivity ranking show
        done[profile] = {"summary": parts[splits[0]], "cells": len(records), "out": folder, "files": files}
    named = {p: d["summary"] for p, d in done.items() if p is not None}  # every run, with profiles or a sweep
    sensitivity = write_sensitivity(named, out_dir, command) if profiles else []
    if variants:
        sensitivity = write_sweep(named, variants, out_dir, command)
    if agreement:
        from lg_harness_lab.evals.agreement import rows, verdicts, write_agreement

        by_id = {s.id: s for s in suite}
        found = rows(verdicts(kept["real"], by_id), verdicts(kept["sim"], by_id), order)
        sensitivity = [write_agreement(found, out_dir, command, model, agreement)]
    if json_out:
        docs = {p: {"out": str(d["out"]), "files": [str(f) for f in d["files"]], "cells": d["cells"], "split": split,
                    "n_scenarios": d["summary"]["n_scenarios"], "metrics": d["summary"]["metrics"]}
                for p, d in done.items()}
        emit_json(docs[None] if not (profiles or variants or agreement) else
                  {"out": str(out_dir), "files": [str(f) for f in sensitivity], "profiles": docs})
        return
    for profile, d in done.items():
        for table in summary_tables(d["summary"], out.width, profile):
            out.print(table)
        where = d["out"] / "report.md" if len(splits) == 1 else d["out"] / "headline.md"
        out.print(f"{d['cells']} cells over {len(suite)} {split} scenarios x {seeds} seed(s); report: {where}; "
                  f"results.json and plots in {d['out']}" + ("" if len(splits) == 1 else "/<split>/"))
    if sensitivity:
        out.print(f"{'sim against the real model' if agreement else 'ranking per profile'}: {sensitivity[0]}")


def _runs(model: str, out_dir: Path, profiles: str | None, variants: list[dict[str, Any]],
          agreement: str | None) -> list[tuple[str | None, str, Path]]:
    """(name, model spec, folder) of each comparison one ``harness compare`` makes."""
    from lg_harness_lab.evals.sensitivity import profile_model

    if agreement:
        if not agreement.startswith("sim") or model.startswith("sim"):
            raise HarnessError("--agreement SIM compares a sim spec with a real --model, e.g. --agreement sim "
                               "--model local:qwen2.5-coder-0.5b")
        return [("real", model, out_dir / "real"), ("sim", agreement, out_dir / "sim")]
    if variants:
        return [(v["slug"], profile_model(v["profile"]), out_dir / v["slug"]) for v in variants]
    if profiles:
        return [(p, profile_model(p), out_dir / p) for p in _profiles(profiles, model)]
    return [(None, model, out_dir)]


def _sweep(sweep: str, model: str, domain: str) -> list[dict[str, Any]]:
    """The profile variants of ``--sweep``: the domain's fitted profile, then each rate at both ends."""
    from lg_harness_lab.evals.runner import domain_profile
    from lg_harness_lab.evals.sensitivity import SWEPT, sweep_variants

    if model != "sim" and not model.startswith("sim:"):
        raise HarnessError("--sweep moves the simulated model's fitted rates; use --model sim (or sim:<profile>)")
    params = list(SWEPT) if sweep.strip() == "default" else [p.strip() for p in sweep.split(",") if p.strip()]
    from simlm import default_profile_name

    base = domain_profile(model, domain).partition(":")[2].split(":")[0]  # fitted@shop where measured per domain
    return sweep_variants(base or default_profile_name(), params)


def _profiles(profiles: str, model: str) -> list[str]:
    """The sim profiles to run, each checked before any cell runs (a typo would crash every cell)."""
    from lg_harness.llm.factory import close_model, make_model
    from lg_harness_lab.evals.sensitivity import profile_model

    if model != "sim":
        raise HarnessError("--profiles runs the simulated model under each profile; leave --model out")
    names = [p.strip() for p in profiles.split(",") if p.strip()]
    if not names or len(set(names)) != len(names):
        raise HarnessError(f"--profiles needs distinct profile names, got '{profiles}'")
    for name in names:
        close_model(make_model(profile_model(name)))
    return names


def summary_tables(summary: dict[str, Any], width: int, profile: str | None = None) -> list[Table]:
    """The comparison in the terminal: every figure with its interval and n, split into as many tables as
    ``width`` needs so that no design name or figure is cut."""
    from lg_harness_lab.evals.formatting import CONSOLE_LEGEND, column_groups
    from lg_harness_lab.evals.report import console_rows

    title = f"pooled over {summary.get('n_scenarios', 0)} {summary.get('split') or ''} scenarios".replace("  ", " ")
    headers, rows = console_rows(summary)
    groups = column_groups(headers, rows, width)
    tables = []
    for k, columns in enumerate(groups):
        table = Table(title=(f"{title} (sim:{profile})" if profile else title) if k == 0 else None,
                      caption=CONSOLE_LEGEND if k == len(groups) - 1 else None, show_lines=True)
        for i in columns:
            table.add_column(headers[i], justify="left" if i == 0 else "right", no_wrap=True)
        for row in rows:
            table.add_row(*(row[i] for i in columns))
        tables.append(table)
    return tables


BENCHES = ("tools", "context", "graph", "serve", "chaos", "local")


@cli_command
def bench(kind: Annotated[str, typer.Argument(help="tools | context | graph | serve (needs --database-url) | chaos | local (the real local model)")], domain: DomainOpt = None,
          json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Benchmarks that print figures as ratios against a baseline measured in the same run."""
    import importlib
    import io
    from contextlib import redirect_stdout

    if kind not in BENCHES:
        raise HarnessError(f"unknown benchmark '{kind}': use one of {', '.join(BENCHES)}")
    domain = domain_spec(domain)
    module = importlib.import_module(f"lg_harness_lab.benchmarks.bench_{kind}")
    storage: dict[str, Any] = dict(STORAGE) if kind in ("serve", "chaos") else {}  # the database the options name
    if kind == "chaos":  # crashes the harness as the options save it
        storage["durability"] = DURABILITY["mode"]
    if json_out:
        with redirect_stdout(io.StringIO()):  # the JSON document is the only thing on stdout
            figures = getattr(module, f"run_bench_{kind}")(domain=domain, **storage)
        emit_json({"bench": kind, "figures": figures})
    else:
        module.main(domain=domain, **storage)


def _calibrate_answers(models: str, per_lang: int, split: str, out_dir: Path, json_out: bool,
                       domain_specs: str = "shop,helpdesk") -> None:
    """``harness calibrate --answer-steps``: the answer-step probe table per model (evals.answer_probes)."""
    from lg_harness.core.domain import load_domain
    from lg_harness.llm.factory import make_model
    from lg_harness_lab.evals.answer_probes import (
        answer_probes,
        answer_table,
        run_answer_probes,
        write_report,
    )

    if split == "test":
        raise HarnessError("answer-step probes come from the dev split; use --split dev")
    loaded = [load_domain(d.strip()) for d in domain_specs.split(",") if d.strip()]
    domains = {d.name: d for d in loaded}
    probes = [p for d in loaded for p in answer_probes(d, split=split, per_lang=per_lang)]
    command = "harness " + " ".join(sys.argv[1:])
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = {}
    for spec in [m.strip() for m in models.split(",") if m.strip()]:
        rows_file = out_dir / f"rows-{spec.replace(':', '_')}.json"
        rows = json.loads(rows_file.read_text()) if rows_file.exists() else []
        rows = run_answer_probes(make_model(spec), probes, domains, rows,
                                 save=lambda r, f=rows_file: f.write_text(json.dumps(r, ensure_ascii=False, indent=0)),
                                 progress=lambda i, n, s=spec: err.print(f"{s}: {i}/{n}") if not json_out else None)
        tables[spec] = answer_table(rows)
        write_report(rows, out_dir, spec, command, len(probes))
    if json_out:
        emit_json({"out": str(out_dir), "probes": len(probes), "tables": tables})
        return
    for spec, table in tables.items():
        out.print(f"{spec}\n{table}")


@cli_command
def calibrate(models: Annotated[str, typer.Option("--models", help="comma-separated model specs, measured on the "
                                                  "same probes; the first is the one --write fits")] = "sim",
              per_kind: Annotated[int, typer.Option(min=1, help="scenarios per probe kind and domain")] = 10,
              split: Annotated[str, typer.Option(help="the scenarios probes come from (never 'test')")] = "dev",
              out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/calibration"),
              write: Annotated[bool, typer.Option("--write", help="write simlm/fitted.yaml from the first model")]
              = False,
              answer_rows: Annotated[Path | None, typer.Option("--answer-rows", help="with --write: the answer-step "
                                                               "probes' rows of the same model (harness calibrate "
                                                               "--answer-steps), fitted per presentation and "
                                                               "decoding")] = None,
              domains: Annotated[str, typer.Option("--domains", help="comma-separated domain specs whose scenarios "
                                                   "the probes come from")] = "shop,helpdesk",
              answer_steps: Annotated[bool, typer.Option("--answer-steps", help="only the answer-step probes: each "
                                                         "presentation of the results x free/constrained decoding")]
              = False,
              json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Measure models' faults with probes from the domains' dev scenarios; fit the sim's profile to one."""
    import datetime

    if answer_steps:
        _calibrate_answers(models, per_kind, split, out_dir, json_out, domains)
        return

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from lg_harness.core.domain import load_domain
    from lg_harness_lab.evals.calibrate import (
        by_domain_table,
        calibration_probes,
        fitted_yaml,
        run_probes,
        side_by_side,
        summarise,
        wrong_picks_table,
    )
    from simlm.faults import FITTED_FILE, load_profiles

    if split == "test":
        raise HarnessError("calibrating on the test split would tune the sim to the scenarios reports are on; "
                           "use --split dev")
    specs = [m.strip() for m in models.split(",") if m.strip()]
    command = "harness " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["calibrate"] else "harness calibrate"
    packs = [load_domain(d.strip()) for d in domains.split(",") if d.strip()]
    probes = calibration_probes(packs, split=split, per_kind=per_kind)
    if not probes:
        raise HarnessError(f"no probes: the {split} split of {domains} has no scenarios to probe with (a domain "
                           "needs a scenario set, Domain(scenarios=...))")
    out_dir.mkdir(parents=True, exist_ok=True)
    summaries = {}
    for spec in specs:
        rows_file = out_dir / f"rows-{spec.replace(':', '_')}.json"
        # Rows measured before on these probes are reused, an interrupted run goes on (delete to re-measure).
        rows = json.loads(rows_file.read_text()) if rows_file.exists() else []
        if len(rows) < len(probes):
            with Progress(TextColumn(f"calibrate {spec}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=err, disable=json_out) as progress:
                bar = progress.add_task("probes", total=len(probes), completed=len(rows))
                rows = run_probes(_probe_model(spec), probes,
                                  lambda i, n, bar=bar, progress=progress: progress.update(bar, completed=i),
                                  done=rows, save=lambda r, f=rows_file: f.write_text(json.dumps(r, ensure_ascii=False)))
        summaries[spec] = summarise(rows)
        if write and spec == specs[0]:  # written now, so later specs may measure sim:fitted beside it
            answers = json.loads(answer_rows.read_text(encoding="utf-8")) if answer_rows else []
            FITTED_FILE.write_text(fitted_yaml(summaries[spec], spec, command, datetime.date.today().isoformat(),
                                               answers), encoding="utf-8")
            load_profiles.cache_clear()
    table = side_by_side(summaries)
    first = summaries[specs[0]]
    per_domain = (f"\n## {specs[0]} per domain\n\nEach rate on each domain's probes, pooled, and whether the domains "
                  "differ (Newcombe's 95% interval of the difference excludes 0); where they do, the fitted profile "
                  f"carries each domain's own rate (`by_domain`).\n\n{by_domain_table(first)}\n") \
        if first.get("by_domain") else ""
    picks = json.loads((out_dir / f"rows-{specs[0].replace(':', '_')}.json").read_text(encoding="utf-8"))
    per_domain += f"\n## Where {specs[0]}'s wrong first picks went\n\n{wrong_picks_table(picks)}\n"
    (out_dir / "calibration.md").write_text(
        f"# Calibration probes\n\nCommand: `{command}`\n\n{len(probes)} probes from the {split} split of "
        f"{' and '.join(p.name for p in packs)}. Rates with Wilson 95% intervals and n.\n\n{table}\n{per_domain}",
        encoding="utf-8")
    (out_dir / "calibration.json").write_text(json.dumps(summaries, indent=1, default=str), encoding="utf-8")
    if json_out:
        emit_json({"out": str(out_dir), "probes": len(probes), "models": summaries,
                   "wrote": str(FITTED_FILE) if write else None})
        return
    out.print(table)
    out.print(f"{len(probes)} probes; {out_dir / 'calibration.md'}" + (f"; wrote {FITTED_FILE}" if write else ""))


def _probe_model(spec: str) -> Any:
    """The model the probes ask: a real one as it is; the sim as the profile variant of each probe's domain
    (``fitted@shop``), so its rates are compared with what was fitted on that domain."""
    from functools import cache

    from lg_harness.llm.factory import make_model
    from lg_harness_lab.evals.runner import domain_profile

    if not spec.startswith("sim"):
        return make_model(spec)
    return cache(lambda domain: make_model(domain_profile(spec, domain)))



def register(app: typer.Typer) -> None:
    """Add the lab's commands to ``harness`` (the ``lg_harness.commands`` entry point); once, whoever asks."""
    there = {c.callback for c in app.registered_commands}
    for command in (compare, bench, calibrate):
        if command not in there:
            app.command()(command)


# Imported before ``lg_harness.service.cli`` had read its entry points (this module imports it), the commands join
# here; imported by it, ``register`` runs again and adds nothing.
register(harness_app)
