"""Tests of ``llm/`` (``lg_harness.llm``)."""
