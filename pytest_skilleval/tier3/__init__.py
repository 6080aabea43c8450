"""Tier 3: agent behaviour — trials with and without a skill, trajectories, and skill-selection accuracy."""
