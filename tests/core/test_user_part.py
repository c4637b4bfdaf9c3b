"""A variant written by a user as a Python object (issue 44, must show): a new intent variant swapped into a
preset and run through ``harness compare``, with no registry of names edited."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lg_harness.core.design import PRESETS, load_design, with_variant
from lg_harness.core.parts import is_part
from lg_harness.graphs.runtime import default_runtime

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(sys.executable).with_name("harness")

USER_FILE = '''
from pathlib import Path

from lg_harness.core.design import PRESETS, with_variant
from lg_harness.nodes.intent import ClassifierIntent

SEEN = Path(__file__).with_name("seen.log")


class LoggingIntent:
    """The rules' intent, and a line per message in a file of mine: proof the graph ran my object."""

    name = "logging-rules"

    def build(self, deps):
        rules = ClassifierIntent(deps)

        def node(state, config):
            update = rules(state, config)
            with SEEN.open("a", encoding="utf-8") as out:
                out.write(f"{update.get('intent')}\\n")
            return update

        return node

    def warm(self, domain, embedder):
        SEEN.with_name("warmed.log").write_text(domain.name, encoding="utf-8")


DESIGN = with_variant(PRESETS["harness"], "intent", LoggingIntent())
'''


def test_a_part_is_swapped_in_without_a_name_registered():
    class Mine:
        name = "mine"

        def build(self, deps):
            return lambda state, config: {}

    design = with_variant(PRESETS["harness"], "intent", Mine())
    assert is_part(design.part("intent")) and design.variant("intent") == "mine"
    assert design.name == "harness-with:intent=mine" and design.model_dump()["variants"]["intent"] == "mine"
    assert "mine" not in default_runtime().variants.of("intent")
    with pytest.raises(ValueError, match="build"):
        PRESETS["harness"].model_copy().model_validate({"name": "x", "variants": {"intent": 3}})


@pytest.mark.slow
def test_a_users_intent_object_runs_through_harness_compare(tmp_path):
    design_file = tmp_path / "mine.py"
    design_file.write_text(textwrap.dedent(USER_FILE), encoding="utf-8")
    loaded = load_design(f"{design_file}:DESIGN")
    assert loaded.variant("intent") == "logging-rules" and loaded.source == f"{design_file}:DESIGN"
    out = tmp_path / "out"
    done = subprocess.run([str(HARNESS), "compare", "--designs", f"harness,{design_file}:DESIGN", "--limit", "2",
                           "--model", "sim:clean", "--workers", "1", "--out", str(out), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cells = [json.loads(line) for line in (out / "cells.jsonl").read_text(encoding="utf-8").splitlines()]
    mine = [c for c in cells if c["design"] == "harness-with:intent=logging-rules"]
    assert len(mine) == 2 and all(not c.get("crash") for c in mine)
    seen = (tmp_path / "seen.log").read_text(encoding="utf-8").split()
    assert len(seen) >= sum(len(c["turns"]) for c in mine)  # every message went through my object
    assert (tmp_path / "warmed.log").read_text(encoding="utf-8") == "shop"
    # the same cells as harness's own rules: my object changed nothing but the log
    by_design = {c["design"]: [t["intent"] for t in c["turns"]] for c in cells}
    assert by_design["harness-with:intent=logging-rules"] == by_design["harness"]


def test_whether_the_intent_step_needs_the_embedder_is_the_variants_own_word():
    """graphs.warm asks the intent variant (class or object) whether it compares messages with the domain's
    examples; no list of variant names decides it."""
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.graphs.warm import uses_embeddings

    variants = default_runtime().variants

    class Plain:
        name = "plain"

        def build(self, deps):
            return lambda state, config: {}

    class Embedding(Plain):
        name = "embedding"
        embeds_examples = True

    assert uses_embeddings(load_design("harness"), DOMAIN, None, variants)  # the classifier says it does
    assert not uses_embeddings(load_design("naive"), DOMAIN, None, variants)  # passthrough does not
    assert not uses_embeddings(with_variant(PRESETS["harness"], "intent", Plain()), DOMAIN, None, variants)
    assert uses_embeddings(with_variant(PRESETS["harness"], "intent", Embedding()), DOMAIN, None, variants)
