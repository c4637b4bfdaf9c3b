"""Write docs/commands.md from the CLI's own help: every command, its arguments and options, defaults and
environment variables, as ``harness COMMAND --help`` states them. ``tests/project/test_docs.py`` fails when the
page and the CLI differ; then run ``python scripts/cli_reference.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

PAGE = Path(__file__).resolve().parents[1] / "docs" / "commands.md"

HEADER = """# Commands

Generated from the CLI's own help by `python scripts/cli_reference.py` (the test suite fails when the two
differ): every command, its arguments and its options. [Use](usage.md) shows them at work; `harness COMMAND
--help` prints the same in a terminal.
"""


def _is_argument(param: Any) -> bool:
    return getattr(param, "param_type_name", "") == "argument"


def _is_group(command: Any) -> bool:
    # typer vendors its own click: a group is whatever has subcommands
    return bool(getattr(command, "commands", None))


def _cell(text: Any) -> str:
    # a pipe would split the table, and <model> would read as an HTML tag
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _default(param: Any) -> str:
    if getattr(param, "is_flag", False) or param.required:
        return ""
    default = param.default
    if default is None or default == "" or callable(default):
        return ""
    return f"`{default}`"


def _names(param: Any) -> str:
    if _is_argument(param):
        return f"`{param.name.upper()}`" if param.name else ""
    return ", ".join(f"`{o}`" for o in [*param.opts, *getattr(param, "secondary_opts", [])])


def _row(param: Any) -> str:
    help_text = getattr(param, "help", None) or ""
    env = param.envvar if isinstance(param.envvar, str) else ", ".join(param.envvar or ())
    return (f"| {_names(param)} | {_cell(help_text)}{' (required)' if param.required else ''} | "
            f"{_default(param)} | {f'`{env}`' if env else ''} |")


def _params_table(params: list[Any]) -> list[str]:
    shown = [p for p in params if p.name != "help" and not getattr(p, "hidden", False)]
    if not shown:
        return []
    return ["| argument or option | meaning | default | env |", "| --- | --- | --- | --- |",
            *(_row(p) for p in shown), ""]


def _usage(path: list[str], command: Any) -> str:
    args = " ".join(p.name.upper() for p in command.params if _is_argument(p) and p.name)
    sub = " COMMAND" if _is_group(command) else ""
    return f"`harness {' '.join(path)}{sub}{' ' + args if args else ''} [OPTIONS]`"


def _section(path: list[str], command: Any, level: int) -> list[str]:
    lines = [f"{'#' * level} {' '.join(path)}", "", _usage(path, command), "",
             _cell(command.help or ""), "", *_params_table(command.params)]
    if _is_group(command):
        for name, sub in command.commands.items():
            lines += _section([*path, name], sub, level + 1)
    return lines


def render() -> str:
    from typer.core import TyperGroup

    from lg_harness.service.cli import app

    root = typer.main.get_command(app)
    if not isinstance(root, TyperGroup):  # an app with several commands is a group
        raise TypeError(f"the harness app is a {type(root).__name__}, not a group of commands")
    lines = [HEADER, "## harness", "", "`harness [OPTIONS] COMMAND`", "", _cell(root.help or ""),
             "", "Global options, given before the command:", "", *_params_table(root.params)]
    for name, command in root.commands.items():
        lines += _section([name], command, 2)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is stale: run python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
