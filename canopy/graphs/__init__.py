"""Graph definitions: the pipeline model, its validation and the JSON/TOML reader.

Kept apart from :mod:`canopy.ops.graphs` so the workflow side (which may import only
models) and every front end validate a definition with the same code and wording.
"""
