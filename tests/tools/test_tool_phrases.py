"""A failed call is told to the customer in the tool's own words (its ``phrases`` metadata), in their language.

Issue 26: a domain of tools alone has no phrases, so a tool error reached the customer as the model's
English, or as nothing for a customer who writes Chinese. A tool can carry its own words per error type.
"""

from __future__ import annotations

from lg_harness import Domain, Harness, Settings
from lg_harness.tools.errors import NotFoundError
from lg_harness.tools.registry import tool_meta
from tests.support import ScriptedModel, patient_design

WORDS = {"en": "I could not find that parcel.", "zh": "没有找到这个包裹。"}


@tool_meta(changes_state=False, phrases={"not_found": WORDS})
def track_parcel(parcel_id: str) -> dict:
    """Where a parcel is.

    Args:
        parcel_id: The parcel's id.
    """
    raise NotFoundError(f"No parcel {parcel_id} in the carrier's records.")


def test_a_failed_call_is_told_in_the_tools_own_words():
    domain = Domain(name="parcels", tools=(track_parcel,))
    spec = domain.registry().get("track_parcel")
    assert spec is not None
    key = spec.phrase_key("not_found")
    assert key == "track_parcel:not_found" and domain.phrase(key, "zh") == WORDS["zh"]
    model = ScriptedModel(calls=[{"name": "track_parcel", "args": {"parcel_id": "PX-1234"}, "id": "a",
                                  "type": "tool_call"}])
    with Harness(model, domain=domain, design=patient_design("harness-no:align_entities"),
                 settings=Settings(data_dir=None)) as h:
        result = h.send("t", "我的包裹 PX-1234 在哪里？", "u1")
    [call] = result.tool_calls
    assert call["error_type"] == "not_found"
    assert WORDS["zh"] in result.reply and "carrier's records" not in result.reply, result.reply
