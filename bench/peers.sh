#!/usr/bin/env bash
# Runs the shared peer harness (../shared/bench/peers/run.sh) with sqc as one
# more worker: PyTorch FP32/INT8, ONNX Runtime FP32/INT8 (+ without AMX) and
# `sqc bench --serve` (modes int8 and int8-vnni) timed interleaved, call by
# call, on the same random-weight models; prints and saves the table.
#
# usage: bench/peers.sh CONFIG [CONFIG...]     CONFIG: bert-base bert-large distilbert minilm-l6 | all
#   smoke run (~1-2 min after the first install):
#     ROUNDS=1 THREADS=1 SHAPES=1x32 ENGINES_CHECK=0 bench/peers.sh minilm-l6
#
# Every knob of run.sh passes through (ROUNDS, THREADS, SHAPES, MIN_REPS,
# TARGET_S, ENGINES_CHECK, AMX_AB, CACHE, OUT, SKIP_INSTALL, ...); see the
# header of run.sh. Also:
#   PEERS_DIR   the harness (default: ../shared/bench/peers beside the repo)
#   SQC_BIN     an sqc binary to use instead of building one
#   SQC_ARGS    more `sqc bench` flags for the worker, e.g. '--attention int8' (INT8 attention on
#               the GEMM kernels: AMX tiles where there are some) or '--act dynamic'
#
# sqc is built into a fresh temporary directory; results go to $OUT (default
# $TMPDIR/peers-results/<timestamp>) and exports to $CACHE (default
# /tmp/peers-cache). Nothing is written into the harness folder or the repo.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS_DIR="${PEERS_DIR:-$ROOT/../shared/bench/peers}"

if [ $# -lt 1 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
if [ ! -x "$PEERS_DIR/run.sh" ]; then
  echo "peers.sh: no peer harness at $PEERS_DIR (expected ../shared/bench/peers beside the repo; set PEERS_DIR)" >&2
  exit 2
fi
PEERS_DIR="$(cd "$PEERS_DIR" && pwd)"
case "$PEERS_DIR/" in
  "$ROOT"/*) echo "peers.sh: the harness must not live inside the repo ($PEERS_DIR)" >&2; exit 2 ;;
esac

# Results and exports stay outside the harness folder, whatever the caller set.
export OUT="${OUT:-${TMPDIR:-/tmp}/peers-results/$(date +%Y%m%d-%H%M%S)}"
export CACHE="${CACHE:-/tmp/peers-cache}"
for d in "$OUT" "$CACHE"; do
  case "$(realpath -m "$d")/" in
    "$PEERS_DIR"/*) echo "peers.sh: $d is inside the harness folder; choose another OUT/CACHE" >&2; exit 2 ;;
  esac
done

if [ -n "${SQC_BIN:-}" ]; then
  BIN="$(realpath "$SQC_BIN")"
else
  TMP="$(mktemp -d "${TMPDIR:-/tmp}/sqc-peers-bin.XXXXXX")"
  trap 'rm -rf "$TMP"' EXIT
  BIN="$TMP/sqc"
  echo "peers.sh: building sqc into $TMP" >&2
  (cd "$ROOT" && go build -o "$BIN" ./cmd/sqc)
fi

# coord.py substitutes {config} and {threads}; the worker's stderr goes to $OUT/run.log.
export SQC_WORKER="$BIN bench --serve --config {config} --threads {threads}${SQC_ARGS:+ $SQC_ARGS}"
echo "peers.sh: SQC_WORKER='$SQC_WORKER'; results in $OUT" >&2
"$PEERS_DIR/run.sh" "$@"
