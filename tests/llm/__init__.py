"""Tests of ``lg_harness/llm/`` (``lg_harness.llm``)."""
