#!/bin/sh
# The image's entry point (Dockerfile): `server`, `worker` and `migrate` run what the package
# scripts of those names run, with node directly: npm in between would print its banner before the
# JSON log lines and stand between the process and SIGTERM. `cli ...` runs an operator command;
# anything else runs as given (sh, node -e ...). test/ship/image.test.ts keeps these lines equal
# to package.json's scripts and runs them in a clean production install.
set -e
case "$1" in
  server) exec node dist/main.js ;;
  worker) exec node dist/worker.js ;;
  migrate) exec node dist/migrate.js ;;
  cli) shift; exec node dist/cli.js "$@" ;;
  *) exec "$@" ;;
esac
