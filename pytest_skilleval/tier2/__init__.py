"""Tier 2: does a skill repeat itself (``dedup``), or another skill (``similarity``)? See docs/tier2.md.

``checks`` contributes the two checks; ``chunking`` splits Markdown by structure; ``embedders``
holds the offline backends; ``cache`` stores vectors; ``calibration`` maps each backend's cosine
onto the scale the bands are stated on; ``intra`` and ``inter`` do the two comparisons.
"""
