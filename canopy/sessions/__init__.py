"""Interactive sessions: the names Canopy gives them and their transcripts."""
