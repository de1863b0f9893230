#!/usr/bin/env bash
# Runs the shared peer harness (../shared/bench/peers/run.sh) with sqc as one
# more worker: PyTorch FP32/INT8, ONNX Runtime FP32/INT8 (+ without AMX) and
# `sqc bench --serve` (modes int8, int8-vnni, int8-attn32: FP32 attention, and on AMX int8-sepepi:
# the GEMM epilogues outside the kernel call, int8-fincol and int8-finrow: the GEMMs with a fused
# LayerNorm in either block order) timed interleaved, call by call, on the same random-weight
# models; prints and saves the table, then the medians of paired ratios of each sqc mode to ONNX
# Runtime INT8 (with and without AMX) and PyTorch FP32, and of sqc int8 to int8-sepepi, int8-fincol
# and int8-finrow, per shape (bench/pairs, $OUT/pairs.txt).
#
# usage: bench/peers.sh CONFIG [CONFIG...]     CONFIG: bert-base bert-large distilbert minilm-l6 | all
#   smoke run (~1-2 min after the first install):
#     ROUNDS=1 THREADS=1 SHAPES=1x32 ENGINES_CHECK=0 bench/peers.sh minilm-l6
#
# Every knob of run.sh passes through (ROUNDS, THREADS, SHAPES, MIN_REPS,
# TARGET_S, ENGINES_CHECK, AMX_AB, CACHE, OUT, SKIP_INSTALL, ...); see the
# header of run.sh. Also:
#   PEERS_DIR   the harness (default: ../shared/bench/peers beside the repo, or
#               beside the main checkout when run from a git worktree elsewhere)
#   SQC_BIN     an sqc binary to use instead of building one
#   SQC_ARGS    more `sqc bench` flags for the worker, e.g. '--attention fp32' (FP32 attention
#               matmuls instead of the default INT8 ones) or '--act dynamic'
#
# Then, per config, the real-length comparison (bench/realbatch): GLUE SST-2's dev sentences in
# batches of 32 in arrival order, ONNX Runtime INT8 (and without AMX, with AMX_AB=1) padding each
# batch to its longest, sqc int8 and int8-vnni on the real tokens only (the in-process engine, and
# the generated package's Run as sqc-gen), and sqc int8 padded; medians
# of paired ratios to ort/int8, in $OUT/realbatch-<config>/table.txt. Knobs:
#   REAL_LENGTHS=1  0 skips it          REAL_ONLY=0  1 skips the fixed-shape table (run.sh)
#   REAL_ROUNDS=3   REAL_BATCH=32       REAL_THREADS (default: the last of THREADS, or 2)
#   REAL_TEXT, REAL_VOCAB  the sentences and the vocab.txt counting their tokens (default ../shared/data)
#   REAL_GENERATED=1  also time the generated package's Run (sqc-gen/int8: `sqc compile` of the same
#               random weights, built by bench/genworker, which takes SQC_ARGS' --act and --attention)
# REAL_ONLY needs the harness's exports in $CACHE and its onnxruntime-node (a run.sh run makes them);
# where they are missing it exports with the harness's scripts, without run.sh's OpenBLAS
# SKYLAKEX setting, so this part also runs on CPUs without AVX-512 (where run.sh's torch dies).
#
# Last, with ACCEPTANCE=1 (default where the CPU has AMX; 0 skips), issue 12's acceptance: the AMX GEMM
# benchmark and `sqc roofline --json` (bert-base, 8x128 and 1x128, 2 threads) into $OUT, then
# bench/acceptance's table of every bar (pass, FAIL or not measured) in $OUT/acceptance.txt.
#
# sqc is built into a fresh temporary directory; results go to $OUT (default
# $TMPDIR/peers-results/<timestamp>) and exports to $CACHE (default
# /tmp/peers-cache). Nothing is written into the harness folder or the repo.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# ../shared beside the repo; from a git worktree elsewhere (benchmarks run
# from a worktree of a commit), beside the main checkout.
SHARED="$ROOT/../shared"
if [ ! -d "$SHARED" ] && common=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null); then
  SHARED="$(dirname "$common")/../shared"
fi
PEERS_DIR="${PEERS_DIR:-$SHARED/bench/peers}"

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

# Issue 12's acceptance (ACCEPTANCE=1, the default on AMX CPUs), once everything else has run: the
# AMX GEMMs against the tile peak (go test -bench 'QGEMM$/amx', 1 thread, amx and amx-separate; and
# with cold weights at M = 128, BenchmarkQGEMMColdWeights, into qgemm-cold.txt) and
# `sqc roofline --json` of bert-base at 8x128 and 1x128 on 2 threads, into $OUT, then bench/acceptance
# prints every bar with its figure.
acceptance() {
  local want=0
  grep -qw amx_int8 /proc/cpuinfo && want=1
  [ "${ACCEPTANCE:-$want}" = 1 ] || return 0
  case " $* " in *" bert-base "*|*" all "*) ;; *) echo "peers.sh: acceptance: bert-base was not run" >&2; return 0 ;; esac
  echo "peers.sh: acceptance: timing the AMX GEMMs and the roofline into $OUT" >&2
  mkdir -p "$OUT"
  (cd "$ROOT" && go test ./runtime/qgemm -run '^$' -bench 'QGEMM$/amx' -cpu 1 -count 1) > "$OUT/qgemm-bench.txt" || true
  # M = 128 with the weights out of cache, as at one sequence (1 and 2 threads): amx against amx-pfb
  # and the other candidates, for the 1x128 latency bar. Not a bar itself.
  (cd "$ROOT" && go test ./runtime/qgemm -run '^$' -bench 'QGEMMColdWeights/amx' -count 1) > "$OUT/qgemm-cold.txt" || true
  for b in 8 1; do
    "$BIN" roofline --config bert-base --batch "$b" --seq 128 --threads 2 --json > "$OUT/roofline-bert-base-${b}x128.json" || true
  done
  echo
  (cd "$ROOT" && go run ./bench/acceptance --config bert-base --threads 2 "$OUT") | tee "$OUT/acceptance.txt"
}

# coord.py substitutes {config} and {threads}; the worker's stderr goes to $OUT/run.log.
export SQC_WORKER="$BIN bench --serve --config {config} --threads {threads}${SQC_ARGS:+ $SQC_ARGS}"
echo "peers.sh: SQC_WORKER='$SQC_WORKER'; results in $OUT" >&2
if [ "${REAL_ONLY:-0}" != 1 ]; then
  "$PEERS_DIR/run.sh" "$@"
  # Medians of paired ratios (call i of sqc against call i of each peer in the same round).
  if [ -s "$OUT/results.jsonl" ]; then
    echo
    echo "paired ratios (medians over calls run side by side; also in $OUT/pairs.txt):"
    (cd "$ROOT" && go run ./bench/pairs "$OUT/results.jsonl") | tee "$OUT/pairs.txt"
  fi
fi

[ "${REAL_LENGTHS:-1}" = 1 ] || { acceptance "$@"; exit 0; }
CONFIGS=("$@")
[ "${CONFIGS[0]}" = all ] && CONFIGS=(bert-base bert-large distilbert minilm-l6)
THREADS_LIST=(${THREADS:-1 2})
REAL_THREADS="${REAL_THREADS:-${THREADS_LIST[-1]}}"
REAL_TEXT="${REAL_TEXT:-$SHARED/data/glue-sst2/dev.tsv}"
REAL_VOCAB="${REAL_VOCAB:-$SHARED/data/vocab/bert-base-uncased-vocab.txt}"
for f in "$REAL_TEXT" "$REAL_VOCAB"; do
  [ -s "$f" ] || { echo "peers.sh: $f is missing (set REAL_TEXT / REAL_VOCAB, or REAL_LENGTHS=0)" >&2; exit 2; }
done
NODE_MODULES="$CACHE/node/node_modules"
[ -d "$NODE_MODULES/onnxruntime-node" ] || {
  echo "peers.sh: no onnxruntime-node in $NODE_MODULES: run once without REAL_ONLY=1 (run.sh installs it)" >&2; exit 2; }
RB_TMP="$(mktemp -d "${TMPDIR:-/tmp}/sqc-realbatch-bin.XXXXXX")"
trap 'rm -rf "${TMP:-}" "$RB_TMP"' EXIT
(cd "$ROOT" && go build -o "$RB_TMP/realbatch" ./bench/realbatch)
for c in "${CONFIGS[@]}"; do
  if [ ! -s "$CACHE/$c.int8.onnx" ]; then
    echo "peers.sh: exporting $c into $CACHE with the harness's export_onnx.py and quantize_onnx.py" >&2
    (export PYTHONPATH="$PEERS_DIR" PYTHONDONTWRITEBYTECODE=1
     [ -s "$CACHE/$c.fp32.onnx" ] || /usr/bin/python3 "$PEERS_DIR/export_onnx.py" "$c" "$CACHE"
     /usr/bin/python3 "$PEERS_DIR/quantize_onnx.py" "$CACHE/$c.fp32.onnx" "$CACHE/$c.int8.onnx") >&2
  fi
  ort="NODE_PATH=$NODE_MODULES node $PEERS_DIR/bench_ort.js --serve --config {config} --threads {threads} --dir {cache} --modes int8"
  workers=(--worker "ort=$ort")
  if [ "${AMX_AB:-1}" = 1 ] && grep -qw amx_int8 /proc/cpuinfo && [ -s "$CACHE/bin/noamx.so" ]; then
    workers+=(--worker "ort-noamx=NOAMX=deny LD_PRELOAD=$CACHE/bin/noamx.so $ort --mode-suffix -noamx")
  fi
  workers+=(--worker "sqc=$SQC_WORKER")
  if [ "${REAL_GENERATED:-1}" = 1 ]; then
    gen="$RB_TMP/gen-$c"
    echo "peers.sh: generating and building the $c package's worker into $gen" >&2
    # shellcheck disable=SC2086 # SQC_ARGS is a list of flags
    (cd "$ROOT" && go run ./bench/genworker --config "$c" --out "$gen" --max-batch "${REAL_BATCH:-32}" ${SQC_ARGS:-}) >/dev/null
    workers+=(--worker "sqc-gen=$gen/worker --threads {threads}")
  fi
  "$RB_TMP/realbatch" --text "$REAL_TEXT" --vocab "$REAL_VOCAB" --batch "${REAL_BATCH:-32}" \
    --config "$c" --threads "$REAL_THREADS" --cache "$CACHE" --rounds "${REAL_ROUNDS:-3}" \
    "${workers[@]}" --padded sqc/int8 --reference ort/int8 --out "$OUT/realbatch-$c"
done
acceptance "$@"
