#!/bin/sh
# One-shot run by the `temporal-schema` service (temporalio/admin-tools): creates
# Temporal's two databases if missing and brings their schemas to the version this
# admin-tools release ships. Safe to run on every `docker compose up`: an existing
# database is kept, and setup-schema/update-schema skip what is already applied.
# Adapted from temporalio/samples-server, compose/scripts/setup-postgres.sh.
set -eu

: "${POSTGRES_SEEDS:?POSTGRES_SEEDS (the Postgres host) is required}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD (read by temporal-sql-tool) is required}"
DB_PORT=${DB_PORT:-5432}
SCHEMA_DIR=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}

sql_tool() {
    temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" \
        -u "$POSTGRES_USER" "$@"
}

for pair in temporal:temporal visibility:temporal_visibility; do
    schema=${pair%%:*}
    database=${pair#*:}
    # `create` fails on a database that exists; that is the normal case from the second
    # start on, and a real connection problem fails setup-schema just below.
    sql_tool --db "$database" create 2>/dev/null || echo "database $database exists"
    sql_tool --db "$database" setup-schema -v 0.0
    sql_tool --db "$database" update-schema -d "$SCHEMA_DIR/$schema/versioned"
done
echo "Temporal schemas are up to date"
