"""The lab of lg-harness: the evaluation (``evals``), the peer frameworks (``peers``) and the benchmarks
(``benchmarks``) that measure designs, and the ``harness`` commands that run them (``cli``)."""
