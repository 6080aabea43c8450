"""Trigger evaluation: does an agent load this skill when it should, and leave it alone when it should not?

A trigger mode beside Tier 3, built from its parts (staging, gateway, agent adapters, sandbox,
trajectory parsers):

- :mod:`.sets` — a skill's trigger set (``evals/triggers.{json,yaml,jsonl}``, or its routing-labelled
  eval cases), located problems for the ``evals`` check;
- :mod:`.rivals` — the other skills installed beside it, nearest descriptions first, by digest;
- :mod:`.scripted` — the keyless scripted "model" (loads a skill only when it is listed and the
  query matches that skill's script) and the gateway cut-off that ends a trial at its decision;
- :mod:`.detect` — triggered = this skill's own installed copy was loaded, through the parsers;
- :mod:`.trial` — one trigger trial (query × agent × run) → :class:`.record.TriggerRecord`;
- :mod:`.items` / :mod:`.plugin` — pytest items ``<skill>::triggers::<query>[<agent>-r<k>]``;
- :mod:`.metrics` / :mod:`.report` — recall, precision, F1, accuracy with Wilson intervals;
- :mod:`.probe` — the model-only probe (one chat call per query with the listing each agent sends).
"""
