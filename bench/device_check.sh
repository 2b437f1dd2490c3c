#!/bin/bash
# The GPU backends' checks (issue 12) on a machine with a real GPU, in one short run (a machine
# with the NVIDIA driver but none of our build dependencies, e.g. a lent device machine).
#
#   bench/device_check.sh pack     here, after building build/: strips the GPU binaries, collects
#                                  their shared libraries (glibc and libstdc++ excepted) into
#                                  .dev/devpkg.tar.xz and fetches the Vulkan loader, glvnd and the
#                                  OpenCL ICD loader as Debian packages into .gl/ (both folders are
#                                  git-ignored through .git/info/exclude; carry them)
#   bench/device_check.sh run      there, from the repository root, with $OUT set: unpacks, points
#                                  the loaders at NVIDIA's ICDs, then runs STEPS (default: all of
#                                  env harness ops sweep tests) and writes each one's output to $OUT
#
# Steps: env (GPU, driver, ICDs), harness (kernels_backend_ops_test on cpu, opencl, vulkan), ops
# (bench_backend_ops --profile on vulkan and opencl at issue 12's shapes: the table plus the
# device time per kernel), sweep (bench_vulkan_ops --only gemv --serial at several lane counts:
# a lone GEMV dispatch's rate), tests (kernels_vulkan_test, kernels_opencl_test).
set -u
mode="${1:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ "$mode" = pack ]; then
  set -e
  grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
  grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo '/.gl/' >> .git/info/exclude
  stage=$(mktemp -d); mkdir -p "$stage/bin" "$stage/lib" .dev .gl
  for b in bench/bench_backend_ops bench/bench_vulkan_ops tests/kernels_backend_ops_test tests/kernels_vulkan_test \
           tests/kernels_opencl_test; do
    strip -o "$stage/bin/$(basename $b)" "build/$b"
  done
  # The device's own libstdc++/libgcc_s are newer and its driver needs them; glibc is the system's.
  for b in "$stage"/bin/*; do ldd "$b" | awk '$3 ~ /^\// {print $3}'; done | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so|ld-linux' |
    while read -r l; do cp -L "$l" "$stage/lib/"; done
  tar cJf .dev/devpkg.tar.xz -C "$stage" bin lib; rm -rf "$stage"
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  mkdir -p /tmp/amd64/partial; apt-get $o update > /dev/null
  (cd .gl && apt-get $o download libvulkan1 libglvnd0 ocl-icd-libopencl1)
  du -sh .dev .gl
  exit 0
fi
if [ "$mode" = -h ] || [ "$mode" = --help ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if [ "$mode" != run ] || [ -z "${OUT:-}" ]; then
  echo "usage: bench/device_check.sh pack | run (run needs \$OUT); --help says more" >&2
  exit 2
fi
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
mkdir -p /tmp/am && tar xJf .dev/devpkg.tar.xz -C /tmp/am
export LD_LIBRARY_PATH=/tmp/am/lib
B=/tmp/am/bin
STEPS="${STEPS:-env harness ops sweep tests}"
# The driver's ICD files may live only under its read-only mount.
if [ ! -e /usr/share/vulkan/icd.d/nvidia_icd.json ] && [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export VK_ICD_FILENAMES=$VK_DRIVER_FILES
fi
cl=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
[ -z "$cl" ] && cl=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib/libnvidia-opencl.so.1 2>/dev/null | head -1)
# Only NVIDIA's OpenCL: an image's PoCL would otherwise be picked first.
if [ -n "$cl" ]; then mkdir -p /tmp/icd && echo "$cl" > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd; fi
step() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
if step env; then
  { date; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    echo "vulkan icd: ${VK_DRIVER_FILES:-system}"; ls /usr/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d 2>&1
    echo "opencl library: ${cl:-none}"; ls /etc/OpenCL/vendors 2>&1; nproc
  } > "$OUT/env.txt" 2>&1
  cat "$OUT/env.txt"
fi
if step harness; then
  timeout 240 $B/kernels_backend_ops_test --gtest_brief=1 > "$OUT/harness.txt" 2>&1
  echo "harness rc=$?" | tee -a "$OUT/harness.txt"; grep -E "^backend|PASSED|FAILED|SKIPPED" "$OUT/harness.txt" | head -20
fi
if step ops; then
  for be in vulkan opencl; do
    timeout 150 $B/bench_backend_ops --backend $be --profile --min-time-s 0.1 --cases x4096 \
      --json "$OUT/ops_$be.json" > "$OUT/ops_$be.md" 2>&1
    echo "ops $be rc=$?"; cat "$OUT/ops_$be.md"
  done
fi
if step sweep; then
  for lanes in 0 16 64 128; do
    a=(--only gemv --serial); [ "$lanes" != 0 ] && a+=(--matvec-lanes "$lanes")
    echo "### lanes ${lanes/#0/built-in}, serial"; timeout 60 $B/bench_vulkan_ops "${a[@]}" 2>&1 | grep -E "GEMV|copy|lanes"
  done > "$OUT/sweep.txt" 2>&1
  cat "$OUT/sweep.txt"
fi
if step tests; then
  for t in kernels_vulkan_test kernels_opencl_test; do
    timeout 120 $B/$t --gtest_brief=1 > "$OUT/$t.txt" 2>&1
    echo "$t rc=$?" | tee -a "$OUT/$t.txt"; tail -3 "$OUT/$t.txt"
  done
fi
