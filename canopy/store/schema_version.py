"""The alembic head revision, as a constant the store can check without importing alembic.

A test checks it equals the head of ``canopy/store/migrations``; bump it with every new
migration.
"""

HEAD_REVISION = "0018"
