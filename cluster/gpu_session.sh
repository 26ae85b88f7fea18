#!/usr/bin/env bash
# GPU runs on a machine with NVIDIA GPUs (the GPU tests and the issues' benchmarks), in steps that
# each fit a short session. Each step keeps one log, $OUT/<step>.log (default OUT: ./gpu-out), and
# copies the results file it wrote to $OUT/results. Run from the repository root after the
# machine's own environment setup.
#   bash cluster/gpu_session.sh build              configure and build everything into $BUILD (/tmp/b)
#   bash cluster/gpu_session.sh tests [REGEX]      ctest -L gpu [-R REGEX], one at a time
#   bash cluster/gpu_session.sh flow               flow_bench (bench/results/flow.json; the shared pairs
#                                                  from $WEFT_SHARED_DATA/flow, given at the build)
#   bash cluster/gpu_session.sh flow-farm          flow_bench --farm 40 (bench/results/flow_farm.json)
#   bash cluster/gpu_session.sh saliency-ranks N   mpirun -np N saliency_bench --scaling (saliency.json)
#   bash cluster/gpu_session.sh granulometry ARGS  granulometry_bench ARGS with the python3 on PATH for the
#                                                  scipy / CuPy peers (granulometry.json)
#   bash cluster/gpu_session.sh slabs [N [TAG]]    granulometry_slabs_bench, one rank, or N ranks
#                                                  (GPUS=1,2,4 and REPEATS=2 by default; TAG: results key
#                                                  slabs_2048[_ranksN]_TAG; WEFT_HALO_HANDOVER and
#                                                  WEFT_HOST_TURNS, where set, go to every rank)
#   bash cluster/gpu_session.sh filters ARGS...    filters_bench ARGS (its json into $OUT)
# Results files are written into bench/results of this tree (copy them back from $OUT/results);
# set WEFT_COMMIT to the commit being measured where git cannot tell it (a copied tree).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${BUILD:-/tmp/b}
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out/results"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
step=${1:-}
shift || true
save() { cp bench/results/"$1" "$out/results/" 2>/dev/null || true; }
case $step in
  build)
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${WEFT_SHARED_DATA:+-DWEFT_SHARED_DATA="$WEFT_SHARED_DATA"} \
      >/tmp/gpu-session-configure.log
    start=$(date +%s)
    cmake --build "$build" >/tmp/gpu-session-build.log 2>&1 || { cp /tmp/gpu-session-build.log "$out/build.log"; tail -30 "$out/build.log"; exit 1; }
    echo "build: $(($(date +%s) - start)) s; $(nvidia-smi -L | wc -l) GPU(s): $(nvidia-smi -L | head -1)"
    ;;
  tests)
    (cd "$build" && ctest -L gpu ${1:+-R "$1"} --output-on-failure --timeout 300 2>&1 | tee "$out/tests.log" |
       grep -E "Test +#|tests passed|Failed|FAILED|through (NCCL|CUDA IPC)|max difference")
    ;;
  flow)
    "$build/bench/flow/flow_bench" 2>&1 | tee "$out/flow.log" | tail -30
    save flow.json
    ;;
  flow-farm)
    "$build/bench/flow/flow_bench" --farm 40 2>&1 | tee "$out/flow_farm.log" | tail -8
    save flow_farm.json
    ;;
  saliency-ranks)
    mpirun -np "${1:-4}" "$build/bench/saliency/saliency_bench" --scaling 2>&1 | tee "$out/saliency_ranks.log" | tail -14
    save saliency.json
    ;;
  granulometry)
    "$build/bench/granulometry/granulometry_bench" --python "$(command -v python3)" "$@" 2>&1 |
      tee "$out/granulometry.log" | tail -12
    save granulometry.json
    ;;
  slabs)
    args=(--gpus "${GPUS:-1,2,4}" --repeats "${REPEATS:-2}" ${2:+--tag "$2"})
    if [[ -n ${1:-} ]]; then
      pass=()
      for v in WEFT_HALO_HANDOVER WEFT_HOST_TURNS; do [[ -n ${!v+x} ]] && pass+=(-x "$v"); done
      mpirun -np "$1" "${pass[@]}" "$build/bench/granulometry/granulometry_slabs_bench" "${args[@]}" 2>&1 |
        tee "$out/slabs_ranks${1}${2:+_$2}.log" | tail -14
    else
      "$build/bench/granulometry/granulometry_slabs_bench" "${args[@]}" 2>&1 | tee "$out/slabs${2:+_$2}.log" | tail -14
    fi
    save granulometry.json
    ;;
  filters)
    WEFT_RESULTS_DIR="$out/results" "$build/bench/filters/filters_bench" "$@" 2>&1 | tee -a "$out/filters.log" | tail -40
    ;;
  *)
    sed -n 2,20p "${BASH_SOURCE[0]}"
    exit 2
    ;;
esac
