#!/bin/sh
# One-shot run by the `temporal-namespace` service (temporalio/admin-tools) once the
# server is healthy: creates TEMPORAL_NAMESPACE if missing, then registers each of
# CANOPY_SEARCH_ATTRIBUTES ("Name=Type ...") that the namespace lacks. Safe to re-run.
# Adapted from temporalio/samples-server, compose/scripts/create-namespace.sh.
set -eu

: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS is required}"
: "${CANOPY_SEARCH_ATTRIBUTES:?CANOPY_SEARCH_ATTRIBUTES is required}"
NAMESPACE=${TEMPORAL_NAMESPACE:-default}
RETENTION=${NAMESPACE_RETENTION:-720h}
ATTEMPTS=${SETUP_ATTEMPTS:-30}
PAUSE=${SETUP_PAUSE_SECONDS:-5}

# The temporal CLI against our server (it would read TEMPORAL_ADDRESS by itself too).
operator() {
    temporal operator "$@" --address "$TEMPORAL_ADDRESS"
}

# Retries "$@" until it succeeds, ATTEMPTS times at most: the frontend accepts
# connections a little before every service behind it answers.
retry() {
    attempt=1
    until "$@"; do
        if [ "$attempt" -ge "$ATTEMPTS" ]; then
            echo "gave up after $ATTEMPTS attempts: $*" >&2
            return 1
        fi
        attempt=$((attempt + 1))
        sleep "$PAUSE"
    done
}

ensure_namespace() {
    operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1 \
        || operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION"
}

retry operator cluster health
retry ensure_namespace
echo "namespace $NAMESPACE is ready"

for attribute in $CANOPY_SEARCH_ATTRIBUTES; do
    name=${attribute%%=*}
    type=${attribute#*=}
    if operator search-attribute list --namespace "$NAMESPACE" | grep -qw "$name"; then
        echo "search attribute $name exists"
    else
        retry operator search-attribute create --namespace "$NAMESPACE" \
            --name "$name" --type "$type"
        echo "search attribute $name ($type) registered"
    fi
done
