#!/bin/sh
# Run by the postgres image's entrypoint on the FIRST start only (an empty data volume):
# creates Canopy's store database and the unprivileged user that owns it. Canopy creates
# and migrates its tables itself on first use. Changing CANOPY_DB_PASSWORD later does not
# change the user's password: use ALTER ROLE (docs/operations.md).
set -eu

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v db="${CANOPY_DB_NAME:-canopy}" \
    -v user="${CANOPY_DB_USER:-canopy}" \
    -v password="${CANOPY_DB_PASSWORD:?CANOPY_DB_PASSWORD is required}" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
SQL
