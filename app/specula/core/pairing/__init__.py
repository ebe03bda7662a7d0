"""Which models go together: the one decision on drafts, the badges, the suggested pairs.

``drafts.judge`` decides whether a draft suits a target (llama.cpp accepts the
pair and the draft is smaller); ``library_pairs``, ``library_drafts``,
``hub_drafts``, ``choices.draft_choices``, ``badges`` and ``suggestions`` all ask
it, so no two views can disagree. ``names`` tells sizes and families from
names and headers.
"""
