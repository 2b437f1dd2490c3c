#!/usr/bin/env bash
# Takes a fresh Debian 12 machine to a built tree in build/.
# Idempotent: installs only what is missing (quietly), then configures and builds.
#   ops/setup.sh            install + configure + build
#   JOBS=N ops/setup.sh     build parallelism (default: 2)
set -euo pipefail

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
