"""Tier 1 checks: deterministic, static, no model. Each module here is one check and a plugin
that contributes it through ``pytest_skilleval_checks``; the package is scanned, not listed."""
