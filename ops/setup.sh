#!/usr/bin/env bash
# Takes a fresh Debian 12 machine to a built tree in build/.
# Idempotent: installs only what is missing (quietly), then configures and builds.
#   ops/setup.sh            install + configure + build
#   ops/setup.sh --tests    the same, plus the test-only packages (what `ctest` and .ci/run need
#                           beyond a user's build: clang + libFuzzer for the sanitizer/fuzz build)
#   JOBS=N ops/setup.sh     build parallelism (default: 2)
set -euo pipefail

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    -h|--help) sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown argument '$arg' (expected --tests)" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

packages=(
  build-essential cmake ninja-build pkg-config git
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libsodium-dev
  libsqlite3-dev sqlite3
  libspdlog-dev libfmt-dev
  libhwloc-dev
  libopenblas-dev
  ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtinyxml2-dev
  procps iproute2
)

# Test-only packages, installed by --tests only. Users never pay for them.
#   clang libclang-rt-14-dev  clang 14 and its compiler-rt: ASan/UBSan runtimes and libFuzzer
#                             (libclang_rt.fuzzer) for build-clang (.ci/run)
#   llvm-14                   llvm-symbolizer, so sanitizer reports name files and lines
#   chromium                  headless browser for tests/browser/ (the HTML dashboard's DOM and
#                             console checked in a real browser; 25 packages, 124 MB download)
#   python3                   runs the browser test's driver (standard library only)
# >>> Later issues append their test-only packages here (one line each, with why). Measured on
# >>> Debian 12 with --no-install-recommends: python3-torch pulls 171 packages, 146 MB download
# >>> (620 MB installed). slurm-wlm + munge are expected here too.
test_packages=(
  clang libclang-rt-14-dev llvm-14
  chromium python3
)
if ((with_tests)); then
  packages+=("${test_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=${JOBS:-2}
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build -j "$jobs"
