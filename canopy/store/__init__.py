"""Persistence: the store (one row runner over the stdlib ``sqlite3`` driver and psycopg),
alembic migrations, and the shared queries.

SQLite file under ``CANOPY_HOME`` by default (WAL, foreign keys on); Postgres when
``CANOPY_DB_URL`` says so.
"""
