"""Canopy and Temporal: the client settings, the embedded dev server and the daemon."""
