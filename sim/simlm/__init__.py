"""simlm: a simulated chat model behind the OpenAI chat-completions format.

It is the model under test in offline comparisons, so it shares nothing with the harness it judges: it
imports no harness, domain or classifier code (a test checks), and reads only what an OpenAI-compatible
request carries. It is domain-general: it picks tools by the similarity of the user's words to the tools'
names, descriptions and parameters, fills arguments from the conversation by the schemas, and answers
from tool results by their shape. Its faults come from a profile file whose rates cite their sources.

    from simlm import Provider, profile
    body = Provider(profile("prior"), seed=0).complete({"messages": [...], "tools": [...]})
"""

from simlm.faults import (
           CLEAN,
           Dice,
           FaultProfile,
           default_profile_name,
           has_profile,
           load_profiles,
           profile,
           profile_names,
)
from simlm.provider import Provider, SimTimeout, count_tokens

__all__ = ["CLEAN", "Dice", "FaultProfile", "Provider", "default_profile_name", "SimTimeout", "count_tokens", "has_profile", "load_profiles", "profile",
           "profile_names"]
