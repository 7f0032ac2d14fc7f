"""The alembic head revision, as a constant the CLI's fast lane can read without alembic.

A test checks it equals the head of ``canopy/store/migrations``; bump it with every new
migration.
"""

HEAD_REVISION = "0012"
