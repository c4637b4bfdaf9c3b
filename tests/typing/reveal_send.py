"""What a user's type checker sees of the public API (checked by pyright in tests/project/test_typing.py, never run).

Each ``reveal_type`` below is matched against the type pyright reports; a lazy export that turned into
``Any``, or a result that turned back into a ``dict``, fails the test.
"""

from typing import reveal_type

from lg_harness import Harness, HarnessError, RunError, Settings, UsageError

harness = Harness("sim:clean", domain="shop", design="harness", settings=Settings(data_dir=None))
result = harness.send("t1", "Where is my order ORD-10001?", "U001")
reveal_type(harness)  # expect: Harness
reveal_type(result)  # expect: SendResult
reveal_type(result.reply)  # expect: str
reveal_type(result.usage.model_calls)  # expect: int
reveal_type(result.tool_calls)  # expect: list[ToolCallResult]
reveal_type(harness.finish("t1"))  # expect: SendResult
reveal_type(harness.complete("t1"))  # expect: SendResult | None
reveal_type(harness.human_reply("t1", "Done: refunded."))  # expect: SendResult
usage_is_harness: type[HarnessError] = UsageError
run_is_harness: type[HarnessError] = RunError
