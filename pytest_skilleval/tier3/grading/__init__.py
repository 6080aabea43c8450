"""Grading of one agent trial: typed assertions, deterministic metrics, then the judge."""
