#!/usr/bin/env bash
# Takes a fresh Debian 12 machine to a built tree in build/.
# Idempotent: installs only what is missing (quietly), then configures and builds.
#   ops/setup.sh            install + configure + build
#   ops/setup.sh --tests    the same, plus the test-only packages (what `ctest` and .ci/run need
#                           beyond a user's build: clang + libFuzzer for the sanitizer/fuzz build,
#                           Chromium, Slurm + munge with their services disabled, PyTorch for
#                           the reference checks)
#   JOBS=N ops/setup.sh     build parallelism (default: 2)
set -euo pipefail

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown argument '$arg' (expected --tests)" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

packages=(
  build-essential cmake ninja-build pkg-config git
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libsodium-dev
  libsqlite3-dev sqlite3 libsimdjson-dev
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
#   slurm-wlm munge           a real single-node Slurm for the sbatch recipe's test
#                             (tests/deploy/; 8 packages, 3.6 MB download, 13 MB installed, 18 s
#                             here); the test starts and stops its own daemons, so the packages'
#                             services are disabled below
#   python3-torch python3-numpy  the float64 PyTorch references that tests/reference/ holds each
#                             family's f32 graph to (Debian's 1.13; 171 packages, 146 MB download,
#                             620 MB installed with --no-install-recommends)
# >>> Later issues append their test-only packages here (one line each, with why).
test_packages=(
  clang libclang-rt-14-dev llvm-14
  chromium python3
  slurm-wlm munge
  python3-torch python3-numpy
)
# The services those packages bring. Debian's postinst enables all three and starts munged at
# once (slurmd and slurmctld wait for an /etc/slurm/slurm.conf). The tests run their own
# daemons and nothing may run as a service (DECISIONS.md), so setup disables and stops each one
# that this run installed; one that was already installed (a real cluster node) is left as it
# was. Not a policy-rc.d: that file is the whole machine's (containers ship their own), and it
# would only keep the services from starting, not from being enabled at the next boot.
test_services=(munge slurmctld slurmd)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

new_services=()
if ((with_tests)); then
  packages+=("${test_packages[@]}")
  for s in "${test_services[@]}"; do installed "$s" || new_services+=("$s"); done
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for s in "${new_services[@]}"; do
  installed "$s" || continue
  echo "setup: disabling the $s service (the tests start their own)"
  if command -v systemctl >/dev/null; then   # works offline too, and updates the SysV links
    "${sudo_cmd[@]}" systemctl disable --quiet "$s.service" 2>/dev/null || true
  else
    "${sudo_cmd[@]}" deb-systemd-helper disable "$s.service" || true
    "${sudo_cmd[@]}" update-rc.d "$s" disable >/dev/null 2>&1 || true
  fi
  if [ -d /run/systemd/system ]; then
    "${sudo_cmd[@]}" systemctl stop "$s.service" || true
  elif [ -x "/etc/init.d/$s" ]; then         # no systemd (a container): the SysV script
    "${sudo_cmd[@]}" "/etc/init.d/$s" stop >/dev/null 2>&1 || true
  fi
done

jobs=${JOBS:-2}
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build -j "$jobs"
