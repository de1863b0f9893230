#!/usr/bin/env bash
# The full load test of the generated-package server (the issue's
# acceptance run): 64 closed-loop vegeta clients for 60 s, mixed-length
# SST-2 dev sentences (from ../shared when present), against the real
# server process on 127.0.0.1. Prints throughput, p50/p99 latency, status
# codes and peak RSS; fails on any error or any answer that differs from
# the same request sent alone. CI runs the same test for 3 s.
#
#   examples/server/loadtest.sh [DURATION [CLIENTS]]
set -euo pipefail
cd "$(dirname "$0")"
duration=${1:-60s}
clients=${2:-64}
go test -count=1 -timeout 30m -run 'TestLoad$' -v . -args \
  -load.duration "$duration" -load.clients "$clients" -load.texts 872 2>&1 | grep -v '^=== RUN'
