"""Benchmark sections run by scripts/bench.py. Each section module has ``run(ctx) -> dict[str, float]``:
it prints readable lines as it goes and returns named figures (ratios against a raw baseline measured in the
same run, medians of several rounds). The runner prints every figure in one JSON object as its last line."""
