"""Authoring helpers: scaffold a new skill (`skilleval init`) and draft its eval cases (`skilleval create-eval-dataset`)."""
