"""Tier 3: agent behaviour — trials with and without a skill, graded; trajectories and selection live in their own packages."""
