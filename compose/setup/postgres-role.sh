#!/bin/bash
# Runs once, when the postgres container initialises its data directory: creates the role
# hourglass (no superuser, no CREATEDB, no CREATEROLE) owning the schema hourglass, with the
# grants of docs/operating.md ("Permissions"). hourglass creates its tables in that schema.
set -euo pipefail
psql -v ON_ERROR_STOP=1 -v password="$HOURGLASS_PG_PASSWORD" --username "$POSTGRES_USER" --dbname hourglass <<'SQL'
CREATE ROLE hourglass LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';
GRANT CONNECT ON DATABASE hourglass TO hourglass;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE SCHEMA hourglass AUTHORIZATION hourglass;
SQL
echo "postgres-setup: role hourglass owns schema hourglass"
