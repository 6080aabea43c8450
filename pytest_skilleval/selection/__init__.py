"""Skill selection: did the agent load the right skill? Judge-rated accuracy per invoked skill,
deterministic expectations per case, and the ``--skilleval-trajectories`` items. Needs trajectories,
not Tier 3 trials, so it stands apart from ``tier3``."""
