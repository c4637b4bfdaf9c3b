"""Context benchmark: input tokens per message and checkpoint size per context strategy, over long threads.

For each working-context strategy (``full``, ``time_window``, ``anchored``, ``summary_only``,
``structured_only``, ``hybrid``) the ``harness`` preset runs one scripted customer conversation of user
U001 on ``Harness`` with a SQLite checkpointer in a temporary data dir, and the run records:

1. Input tokens of the message (all its model calls, ``usage.input_tokens``) at turns 1, 10, 20, 30, 40 of
   the 40-turn script, and their ratio last/first. A measured turn with no model call (an acknowledgement
   answered without the model) is reported from the nearest turn that had one, and the table says so.
   Each sampled message is also sent once as the first message of a new thread, without long-term
   memory: its cost with no conversation behind it. The ratio says what the history adds to that message; the raw figures also
   move with the message itself (turn 20 lists orders: more tool schemas and a longer result than turn 1).
2. The size of the thread's latest checkpoint at turns 10, 50, 100, 200 of the same script repeated to
   200 turns: ``length(checkpoint) + length(metadata)`` of the thread's newest row in the ``checkpoints``
   table plus the ``writes`` rows of that checkpoint. This is what a resume loads, so it is the figure that
   must stay flat; the whole database grows with every checkpoint ever written and is reported beside it.

The script repeats, so the first 40 turns of the 200-turn thread are the 40-turn conversation: one thread
per strategy gives both figures (same messages, same deterministic model, half the run time).

Run ``python -m benchmarks.bench_context`` (or ``harness bench context``).
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.printing import print_report
from domains.shop.backend import ShopDB
from graphs.app import Harness
from graphs.design import Design, load_design

STRATEGIES = ("full", "time_window", "anchored", "summary_only", "structured_only", "hybrid")
USER = "U001"
THREAD = "bench-context"
# A quota stops a thread on purpose; here it would stop the thread being measured. The preset's 400k input
# tokens and 200 tool calls per thread run out long before turn 200, so the benchmark lifts them for all.
UNLIMITED = 10**9
# Targets from the issue, reported and never asserted (the model and the machine decide the figures).
HYBRID_MAX_GROWTH = 2.0
FULL_MIN_GROWTH = 10.0
FLAT_CHECKPOINT = 1.5
RECALL_QUESTION = "Which order number did I give you at the very start?"

# One customer's conversation: an order in turn 1, a standing request in turn 2, then products, coupons,
# their own orders and acknowledgements, and questions about the start near the end. Reading tools only,
# so repeating the script to 200 turns changes nothing in the shop. Placeholders come from the shop DB.
SCRIPT = (
    "Hi, I'm still waiting for my order {shipped}. Where is it?",
    "Please don't transfer me to a human, I'd rather sort this out here with you.",
    "Do you sell wireless bluetooth headphones?",
    "Which coupons can I use right now?",
    "ok, thanks",
    "What's the status of {pending}?",
    "Show me my orders please",
    "Tell me more about {product_a}",
    "Any portable speakers under 50 dollars?",
    "What was in my order {delivered}?",
    "great",
    "Do you have a gaming headset?",
    "Is there a coupon for electronics?",
    "Where is my order {pending_2}?",
    "Which of my orders are still pending?",
    "Does {product_b} come in other colors?",
    "thanks a lot",
    "I'm looking for a fast charger for my phone",
    "What's the status of {cancelled}?",
    "Which of my orders have been delivered?",
    "Any discount codes for new customers?",
    "Tell me about {product_c}",
    "ok",
    "Has {shipped} shipped yet? What's the tracking number?",
    "Do you have smart speakers?",
    "Which of my orders were cancelled?",
    "What coupons do you have?",
    "Is {product_a} in stock?",
    "got it, thanks",
    "What did my order {pending} contain?",
    "Do you have true wireless earbuds?",
    "Show my recent orders",
    "Any coupons for orders over 100?",
    "Where is my order {delivered}?",
    "ok great",
    "Do you sell 5G smartphones?",
    "What's the status of {pending_2}?",
    RECALL_QUESTION,
    "Thanks. Which coupons could I still use?",
    "Where is {shipped} now?",
)
RECALL_TURN = SCRIPT.index(RECALL_QUESTION) + 1
FIRST_ORDER = "shipped"  # the placeholder of the order given in turn 1, the recall question's answer


# ------------------------------------------------------------------------------------------- the script


def customer_facts(shop: ShopDB, user_id: str = USER) -> dict[str, str]:
    """The user's own orders by status and three product ids, to fill the script's placeholders."""
    orders = shop.query("SELECT id, status FROM orders WHERE user_id = ? ORDER BY created_at DESC, id DESC",
                        (user_id,))
    by_status: dict[str, list[str]] = {}
    for row in orders:
        by_status.setdefault(row["status"], []).append(row["id"])
    newest = orders[0]["id"]
    products = [r["id"] for r in shop.query("SELECT id FROM products ORDER BY id LIMIT 3")]

    def pick(status: str, index: int = 0) -> str:
        # Not every user has every status; any of their own orders keeps the script valid.
        found = by_status.get(status, [])
        return found[index] if len(found) > index else newest

    return {"shipped": pick("shipped"), "pending": pick("pending"), "pending_2": pick("pending", 1),
            "delivered": pick("delivered"), "cancelled": pick("cancelled"),
            "product_a": products[2], "product_b": products[0], "product_c": products[1]}


def script_messages(facts: dict[str, str], count: int, script: Sequence[str] = SCRIPT) -> list[str]:
    """The first ``count`` messages of the script, repeated from the start as often as needed."""
    return [script[i % len(script)].format(**facts) for i in range(count)]


def sample_turns(total: int, fractions: Sequence[float]) -> list[int]:
    """Turns at the given fractions of ``total`` (at least turn 1), in order, without repeats."""
    return sorted({max(1, round(total * f)) for f in fractions})


TOKEN_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)  # turns 1, 10, 20, 30, 40 of 40
BYTE_FRACTIONS = (0.05, 0.25, 0.5, 1.0)  # turns 10, 50, 100, 200 of 200


# ------------------------------------------------------------------------------------------- designs


def lift_quotas(design: Design) -> Design:
    """The design with per-thread and per-message quotas out of the way of a long measured thread."""
    return design.model_copy(update={"knobs": design.knobs.model_copy(update={
        "session_quota_input_tokens": UNLIMITED, "session_quota_tool_calls": UNLIMITED,
        "turn_quota_input_tokens": UNLIMITED})})


def design_for(strategy: str, turns: int) -> Design:
    """The ``harness`` preset with the given context strategy; ``full`` keeps every message of the thread."""
    base = load_design("harness")
    knobs: dict[str, Any] = {}
    if strategy == "full":
        # Every turn adds a handful of messages; a window larger than the whole thread trims nothing.
        knobs["window_messages"] = max(base.knobs.window_messages, 20 * turns)
    design = base.model_copy(update={"name": f"harness/{strategy}",
                                     "variants": {**base.variants, "context": strategy},
                                     "knobs": base.knobs.model_copy(update=knobs)})
    return lift_quotas(design)


# ------------------------------------------------------------------------------------------- measures


def _read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def latest_checkpoint_bytes(path: Path, thread_id: str) -> int:
    """Bytes of the thread's newest checkpoint row (checkpoint + metadata blobs) and its pending writes."""
    conn = _read_only(path)
    try:
        row = conn.execute(
            "SELECT checkpoint_id, length(checkpoint) + length(metadata) FROM checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1", (thread_id,)
        ).fetchone()
        if row is None:
            return 0
        writes = conn.execute(
            "SELECT COALESCE(SUM(length(value)), 0) FROM writes "
            "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?", (thread_id, row[0])
        ).fetchone()[0]
        return int(row[1]) + int(writes)
    finally:
        conn.close()


def database_bytes(path: Path) -> int:
    """Logical size of a SQLite database: pages x page size, counting pages still in its WAL file."""
    conn = _read_only(path)
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        return int(pages * conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def nearest_measured(tokens: dict[int, int], turn: int) -> int:
    """The turn closest to ``turn`` (earlier first on a tie) whose message called the model."""
    called = [t for t, n in tokens.items() if n > 0]
    if not called:
        return turn
    return min(called, key=lambda t: (abs(t - turn), t))


# ------------------------------------------------------------------------------------------- one strategy


def run_thread(harness: Harness, messages: Sequence[str], byte_turns: Sequence[int],
               reply_turns: Sequence[int] = ()) -> dict[str, Any]:
    """Send the messages on one thread; tokens of every message, checkpoint sizes at ``byte_turns``,
    replies at ``reply_turns``."""
    path = harness.data_dir / "checkpoints.sqlite"
    run: dict[str, Any] = {"tokens_by_turn": {}, "checkpoint_bytes": {}, "db_bytes": {}, "replies": {},
                           "waiting_turns": 0}
    for turn, text in enumerate(messages, 1):
        result = harness.send(THREAD, text, USER)
        run["tokens_by_turn"][turn] = int(result["usage"]["input_tokens"])
        run["waiting_turns"] += bool(result["waiting_for_human"])
        if turn in reply_turns:
            run["replies"][turn] = result["reply"]
        if turn in byte_turns:
            run["checkpoint_bytes"][turn] = latest_checkpoint_bytes(path, THREAD)
            run["db_bytes"][turn] = database_bytes(path)
    return run


def fresh_tokens(strategy: str, messages: Sequence[str], turns: Sequence[int], model: str = "sim:clean") -> dict[int, int]:
    """Input tokens of each sampled message sent as the first message of its own thread, in a data dir
    without long-term memory: the message's cost with nothing behind it, as turn 1 had."""
    design = design_for(strategy, len(messages))
    design = design.model_copy(update={"knobs": design.knobs.model_copy(update={"long_term_memory": False})})
    with tempfile.TemporaryDirectory(prefix="bench-context-fresh-") as tmp, Harness(tmp, design, model) as harness:
        return {t: int(harness.send(f"{THREAD}-fresh-{t}", messages[t - 1], USER)["usage"]["input_tokens"])
                for t in turns}


def token_samples(tokens: dict[int, int], turns: Sequence[int]) -> tuple[dict[int, int], dict[int, int]]:
    """Tokens at each wanted turn, and the stand-in turn used where that turn made no model call."""
    samples, stand_ins = {}, {}
    for turn in turns:
        used = turn if tokens.get(turn, 0) > 0 else nearest_measured(tokens, turn)
        samples[turn] = tokens.get(used, 0)
        if used != turn:
            stand_ins[turn] = used
    return samples, stand_ins


def run_strategy(strategy: str, turns: int, long_turns: int, model: str) -> dict[str, Any]:
    """One strategy's thread in a fresh data dir, and its figures."""
    token_turns = sample_turns(turns, TOKEN_FRACTIONS)
    byte_turns = sample_turns(long_turns, BYTE_FRACTIONS)
    with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp, \
            Harness(tmp, design_for(strategy, max(turns, long_turns)), model) as harness:
        facts = customer_facts(harness.resources["shop"])
        recall = [RECALL_TURN] if turns >= RECALL_TURN else []
        start = time.perf_counter()
        run = run_thread(harness, script_messages(facts, max(turns, long_turns)), byte_turns, recall)
        seconds = time.perf_counter() - start
    fresh = fresh_tokens(strategy, script_messages(facts, max(token_turns)), token_turns, model)
    tokens, stand_ins = token_samples(run["tokens_by_turn"], token_turns)
    ckpt = run["checkpoint_bytes"]
    answer = run["replies"].get(RECALL_TURN)
    return {"tokens": tokens, "token_stand_ins": stand_ins, "token_ratio": _ratio(tokens, token_turns),
            "fresh_tokens": fresh, "over_fresh": {t: tokens[t] / fresh[t] for t in token_turns
                                                  if fresh[t] and t not in stand_ins},
            "checkpoint_bytes": ckpt, "checkpoint_ratio": _ratio(ckpt, byte_turns),
            "db_bytes": run["db_bytes"], "waiting_turns": run["waiting_turns"],
            "recall_reply": answer, "recall_ok": None if answer is None else facts[FIRST_ORDER] in answer,
            "tokens_by_turn": run["tokens_by_turn"], "seconds": seconds}


def _ratio(values: dict[int, int], turns: Sequence[int]) -> float:
    """Last sampled value over the first (0 when the first is 0)."""
    first = values[turns[0]]
    return values[turns[-1]] / first if first else 0.0


def run_bench_context(turns: int = 40, long_turns: int = 200, model: str = "sim:clean",
                      strategies: Sequence[str] = STRATEGIES) -> dict[str, Any]:
    """Run every strategy's thread and collect the figures.

    Args:
        turns: Length of the conversation whose input tokens are sampled (at 0, 1/4, 1/2, 3/4 and all of it).
        long_turns: Length of the thread whose checkpoint size is sampled (at 1/20, 1/4, 1/2 and all of it).
        model: Model spec; the default ``sim:clean`` has no faults, so every strategy sees the same replies
            to the same context.
        strategies: Which context strategies to run.

    Returns:
        ``turns``, ``long_turns``, ``model``, ``token_turns``, ``byte_turns``, ``checkpoint_measure`` (how
        checkpoint bytes are measured), and ``strategies``: per strategy ``tokens`` (turn -> input tokens of
        that message), ``token_stand_ins`` (turn -> the turn reported instead, when it made no model call),
        ``token_ratio`` (last/first sampled turn), ``fresh_tokens`` (turn -> the same message's tokens as the
        first message of a new thread), ``over_fresh`` (turn -> tokens / fresh tokens), ``checkpoint_bytes`` (turn -> bytes of the latest
        checkpoint), ``checkpoint_ratio`` (last/first), ``db_bytes`` (turn -> whole checkpoint database),
        ``waiting_turns`` (messages answered while waiting for a human), ``recall_reply`` and ``recall_ok``
        (the answer to the "what did I give you at the start" question and whether it names the turn-1
        order; None when ``turns`` ends before that question), ``tokens_by_turn``, ``seconds``.
    """
    figures: dict[str, Any] = {
        "turns": turns, "long_turns": long_turns, "model": model,
        "token_turns": sample_turns(turns, TOKEN_FRACTIONS), "byte_turns": sample_turns(long_turns, BYTE_FRACTIONS),
        "checkpoint_measure": "length(checkpoint)+length(metadata) of the thread's newest checkpoints row "
                              "+ length(value) of its writes rows",
        "strategies": {},
    }
    for strategy in strategies:
        figures["strategies"][strategy] = run_strategy(strategy, turns, long_turns, model)
    return figures


# ------------------------------------------------------------------------------------------- report


def _row(name: str, s: dict[str, Any], token_turns: list[int], byte_turns: list[int]) -> list[str]:
    tokens = [f"{s['tokens'][t]:,}" + ("*" if t in s["token_stand_ins"] else "") for t in token_turns]
    ckpt = [f"{s['checkpoint_bytes'][t]:,}" for t in byte_turns]
    # last/second sample: whether the growth has stopped once the history fills the working budget
    plateau = _ratio(s["tokens"], token_turns[1:]) if len(token_turns) > 1 else 1.0
    return [name, *tokens, f"x{s['token_ratio']:.1f}", f"x{plateau:.2f}", *ckpt, f"x{s['checkpoint_ratio']:.2f}"]


def format_table(f: dict[str, Any]) -> str:
    """Strategies by tokens at the sampled turns and latest-checkpoint bytes at the sampled turns."""
    tt, bt = f["token_turns"], f["byte_turns"]
    header = ["strategy", *(f"tok@{t}" for t in tt), f"{tt[-1]}/{tt[0]}", f"{tt[-1]}/{tt[min(1, len(tt) - 1)]}",
              *(f"ckpt@{t}" for t in bt), f"{bt[-1]}/{bt[0]}"]
    rows = [header] + [_row(name, s, tt, bt) for name, s in f["strategies"].items()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def notes(f: dict[str, Any]) -> list[str]:
    """What the table's marks mean, how bytes are measured, and anything that disturbed a thread."""
    out = [f"tokens: input tokens of all model calls of that user message ({f['model']}); "
           f"ckpt: bytes of the thread's latest checkpoint = {f['checkpoint_measure']}"]
    for name, s in f["strategies"].items():
        for turn, used in s["token_stand_ins"].items():
            out.append(f"* {name}: turn {turn} made no model call; tokens shown are turn {used}'s")
        if s["waiting_turns"]:
            out.append(f"! {name}: {s['waiting_turns']} messages were answered while waiting for a human")
    out.append("tokens over the same message sent on a fresh thread (what the conversation adds):")
    for name, s in f["strategies"].items():
        ratios = ", ".join(f"t{t} x{r:.2f}" for t, r in s["over_fresh"].items())
        out.append(f"  {name}: {ratios}; at most x{max(s['over_fresh'].values(), default=0):.2f}")
    out += recall_notes(f)
    db = {name: s["db_bytes"][f["byte_turns"][-1]] for name, s in f["strategies"].items()}
    out.append(f"whole checkpoint database at turn {f['byte_turns'][-1]}: "
               + ", ".join(f"{n} {b / 1e6:.1f} MB" for n, b in db.items()))
    return out


def recall_notes(f: dict[str, Any]) -> list[str]:
    """Each strategy's answer to the recall question, when the conversation reached it."""
    answers = {n: s for n, s in f["strategies"].items() if s["recall_ok"] is not None}
    if not answers:
        return []
    out = [f"recall at turn {RECALL_TURN} ({RECALL_QUESTION!r}, the answer is the order of turn 1):"]
    out += [f"  {n}: {'right' if s['recall_ok'] else 'WRONG'} - {s['recall_reply'][:90]}" for n, s in answers.items()]
    return out


def targets(f: dict[str, Any]) -> list[str]:
    """The issue's targets against this run's figures, each said plainly as met or NOT met."""
    lines = []
    s = f["strategies"]
    if "hybrid" in s:
        h = s["hybrid"]
        lines.append(_verdict(h["token_ratio"] <= HYBRID_MAX_GROWTH,
                              f"hybrid tokens within {HYBRID_MAX_GROWTH:g}x of turn 1: x{h['token_ratio']:.2f}"))
        lines.append(_verdict(h["checkpoint_ratio"] <= FLAT_CHECKPOINT,
                              f"hybrid checkpoint flat (last/first within {FLAT_CHECKPOINT:g}x): "
                              f"x{h['checkpoint_ratio']:.2f}"))
    if "full" in s:
        lines.append(_verdict(s["full"]["token_ratio"] > FULL_MIN_GROWTH,
                              f"full history grows past {FULL_MIN_GROWTH:g}x: x{s['full']['token_ratio']:.2f}"))
    return lines


def _verdict(met: bool, text: str) -> str:
    return f"{'met' if met else 'NOT MET'}: {text}"


def main() -> dict[str, Any]:
    """Run the benchmark, print the table, the notes and the targets, return the figures."""
    figures = run_bench_context()
    print_report(figures, format_table, notes, targets)
    return figures


if __name__ == "__main__":
    main()
