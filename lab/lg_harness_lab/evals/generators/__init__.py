"""Seeded scenario generators of the two bundled packs (the lab's: they write the packs' scripted scenarios
from the packs' own seeded databases; the packs import nothing of the evaluation).

    python -m lg_harness_lab.evals.generators.shop --seed 11 --out lab/lg_harness_lab/packs/shop/scenarios/generated.jsonl
    python -m lg_harness_lab.evals.generators.helpdesk --seed 5 --out lab/lg_harness_lab/packs/helpdesk/scenarios/generated.jsonl
"""
