#!/usr/bin/env bash
# Weft quickstart: installs what is missing (apt, when run as root), configures, then
#   bash cluster/quickstart.sh run    builds the `weft` program only and runs the main job on a
#                                     generated sample volume
#   bash cluster/quickstart.sh test   builds everything, runs the whole test suite through ctest, then
#                                     the CPU suite again with sanitizers and every fuzz harness
#                                     (docs/reliability.md)
# Both configure the same build folder, so `test` after `run` rebuilds nothing of `weft`.
# Environment: BUILD_DIR (default build), JOBS (default: all cores), WEFT_CUDA (AUTO|ON|OFF).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
mode=${1:-}
if [[ $mode != run && $mode != test ]]; then
  echo "usage: bash cluster/quickstart.sh run|test" >&2
  exit 2
fi
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}

packages=(build-essential cmake ninja-build pkg-config git libopenmpi-dev openmpi-bin libhdf5-dev
          libboost-program-options-dev libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfftw3-dev
          libpng-dev libtiff-dev zlib1g-dev libgtest-dev python3 python3-numpy python3-scipy python3-h5py
          python3-dev pybind11-dev python3-pybind11)
# `test` also runs the Python package's tests (pytest, with and without mpi4py).
[[ $mode == test ]] && packages+=(python3-pytest python3-mpi4py)
# `test` also builds the CPU suite with sanitizers and the fuzzers (clang's libFuzzer), and checks
# `weft graph`'s pictures with graphviz's dot (docs/views.md).
[[ $mode == test ]] && packages+=(clang libclang-rt-14-dev graphviz)
# `test` also builds bench/taskbench's StarPU peer (StarPU 1.3: 14 packages, 3.4 MB to fetch, 29 MB
# installed on Debian 12); without it the bench runs Weft and the threads alone.
[[ $mode == test ]] && packages+=(libstarpu-dev)
missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "quickstart: installing ${#missing[@]} packages with apt: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "quickstart: missing packages: ${missing[*]} (run as root to install them with apt)" >&2
  fi
else
  echo "quickstart: packages present"
fi

cuda_args=()
[[ -n ${WEFT_CUDA:-} ]] && cuda_args+=(-DWEFT_CUDA="$WEFT_CUDA")
[[ -z ${CMAKE_CUDA_COMPILER:-} && -x /usr/local/cuda/bin/nvcc ]] && cuda_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The configure output goes to a log, shown only if it fails.
echo "quickstart: configuring $build (CUDA ${WEFT_CUDA:-AUTO}; log in $build/configure.log)"
mkdir -p "$build"
if ! cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" >"$build/configure.log" 2>&1; then
  cat "$build/configure.log" >&2
  exit 1
fi
grep -q "CUDA implementations ON" "$build/configure.log" && cuda=on || cuda=off
if [[ $mode == run ]]; then
  # Only the program and the libraries it links; tests, benchmarks and examples are left for `test`.
  echo "quickstart: building the weft program ($jobs jobs, CUDA $cuda)"
  cmake --build "$build" -j "$jobs" --target weft
else
  echo "quickstart: building everything ($jobs jobs, CUDA $cuda)"
  cmake --build "$build" -j "$jobs"
fi

# mpirun refuses root unless told; CI and containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [[ $mode == test ]]; then
  status=0
  echo "quickstart: the test suite through ctest ($build)"
  (cd "$build" && ctest --output-on-failure -j "$jobs" --timeout 900) || status=1
  # The CPU suite again under AddressSanitizer and UndefinedBehaviorSanitizer, then every fuzz
  # harness for a bounded time (docs/reliability.md). WEFT_SANITIZERS=OFF or WEFT_FUZZ=OFF skip them.
  if [[ ${WEFT_SANITIZERS:-ON} != OFF ]]; then
    echo "quickstart: the CPU test suite with AddressSanitizer and UndefinedBehaviorSanitizer ($build-asan)"
    cmake -S . -B "$build-asan" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
      -DCMAKE_C_FLAGS_RELEASE=-O1 -DWEFT_CUDA=OFF -DWEFT_SANITIZE=ON -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_EXAMPLES=OFF
    cmake --build "$build-asan" -j "$jobs"
    (cd "$build-asan" &&
      LSAN_OPTIONS=suppressions=$here/tests/sanitizers/lsan.supp UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      OMPI_MCA_mca_base_component_disable_dlclose=1 ctest --output-on-failure -j "$jobs" --timeout 900 -LE gpu) || status=1
  fi
  if [[ ${WEFT_FUZZ:-ON} != OFF ]] && command -v clang++ >/dev/null; then
    echo "quickstart: the fuzz harnesses, ${WEFT_FUZZ_SECONDS:-12} s each ($build-fuzz)"
    CC=clang CXX=clang++ cmake -S . -B "$build-fuzz" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DWEFT_CUDA=OFF \
      -DWEFT_FUZZ=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_EXAMPLES=OFF
    cmake --build "$build-fuzz" -j "$jobs" --target weft_fuzzers
    bash fuzz/run.sh "$build-fuzz" "${WEFT_FUZZ_SECONDS:-12}" || status=1
  fi
  exit $status
fi

out=${OUTPUT_DIR:-weft-output}
mkdir -p "$out"
if "$build/apps/weft" --help | grep -q granulometry; then
  sample="$out/sample.h5"
  if [[ ! -f $sample ]]; then
    echo "quickstart: generating a 128^3 sample volume ($sample)"
    "$build/apps/weft" granulometry --generate-sample "$sample" --sample-size 128
  fi
  echo "quickstart: granulometry of the sample with balls ($out/granulometry)"
  "$build/apps/weft" granulometry --input "$sample:/exchange/data" --element ball --output "$out/granulometry"
  echo "quickstart: curve in $out/granulometry (curve.csv, curve.svg, granulometry.h5)"
else
  echo "quickstart: the demo graph, 1000 tokens"
  "$build/apps/weft" demo --tokens 1000
fi
