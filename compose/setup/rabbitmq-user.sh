#!/bin/sh
# Creates (or updates) the RabbitMQ user hourglass with no tags and exactly the permissions of
# docs/operating.md ("Permissions") on the vhost /, through the management API. Idempotent.
set -eu
umask 077
body_file=$(mktemp)
trap 'rm -f "$body_file"' EXIT
api() {
  # Passwords reach curl on stdin and in a private file, never on a command line (ps shows it).
  method=$1 path=$2
  printf '%s' "$3" >"$body_file"
  printf 'user = "admin:%s"\n' "$RABBITMQ_ADMIN_PASSWORD" |
    curl -fsS -K - -X "$method" -H 'content-type: application/json' \
         --data-binary @"$body_file" "$RABBITMQ_API$path" >/dev/null
}
password_json=$(printf '%s' "$HOURGLASS_AMQP_PASSWORD" | sed 's/\\/\\\\/g; s/"/\\"/g')
api PUT /users/hourglass "{\"password\": \"$password_json\", \"tags\": \"\"}"
api PUT /permissions/%2F/hourglass \
  '{"configure": "^hourglass\\..*$", "write": "^(hourglass\\..*|amq\\.default)$", "read": "^hourglass\\..*$"}'
echo "rabbitmq-setup: user hourglass has configure ^hourglass\\..*, write ^(hourglass\\..*|amq\\.default), read ^hourglass\\..* on /"
