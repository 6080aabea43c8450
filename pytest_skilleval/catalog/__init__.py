"""Catalog-level reading and aggregation of published benchmark results (cards, benchmarks.json)."""
