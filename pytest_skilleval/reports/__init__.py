"""Reports written by the controller at session end: BENCHMARK.md cards, results.json, summaries."""
