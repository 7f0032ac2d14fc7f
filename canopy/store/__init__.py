"""Persistence: SQLAlchemy 2 models, alembic migrations, and the shared read queries.

SQLite file under ``CANOPY_HOME`` by default (WAL, foreign keys on); Postgres when
``CANOPY_DB_URL`` says so.
"""
