"""Routing: which node follows ``intent``, ``collect``, ``action`` and ``self_check``, all in this package.

Read it top to bottom:

1. ``routers``  the routes every design takes: a pure function per routed node, returning a ``Literal`` of
                node names the graph reads its edges from.
   ``route``    a design's own rules over them (``LIGHTWEIGHT_RULES``: the hand-built agent's, in the rule
                language), and ``next_node``.
2. ``guards``   the pure predicates the routers and rules read: quotas, brakes, whether a handoff is allowed.
3. ``counters`` the tool loop's per-message counters (rounds, calls, time) that the brakes check, and the
                one place that moves them.
4. ``rules``    the rule language: its grammar, ``compile_rules`` and ``RuleSet`` (compiled rules as
                LangGraph conditional-edge functions). Its parts, each small:
   ``facts``    the values a rule may name, from the state, the guards and the knobs;
   ``parser``   rule text into ``Rule`` values, every name checked; ``tokens`` its tokenizer;
   ``expr``     the expression tree and its evaluator; ``errors`` what compiling and routing raise.

Which *intent* a message has (keyword rules, the embedding classifier, the fallback) is the intent node's
job (``lg_harness/nodes/intent.py``, ``lg_harness/nodes/classify.py``); this package routes on its result, ``intent_kind``.
Nothing here imports a LangGraph graph, so the light commands (``harness designs``) stay light.
"""
