#!/usr/bin/env bash
# One command on a GPU machine: build for its GPU, run every test on cuda,
# run compute-sanitizer over the kernel suites, time every conv algorithm and
# pass against cuDNN (the defaults, then every version of the conv kernel
# families, strict and TF32), and time training against PyTorch on the same GPU.
#
#   scripts/gpu-deps.sh                     # first, on the CPU machine: the .debs
#   scripts/gpu-prebuild.sh                 # then, optionally: the binaries, built here
#   scripts/gpu-check.sh [--quick] [--prebuilt] OUT_DIR  # on the GPU machine
#   scripts/gpu-check.sh --sim [--build-dir DIR] OUT_DIR   # anywhere (CI)
#
# --quick  the first look of a lease: smaller time caps, the first layer set,
#          the GEMM rows at n = 4096, one training size, no kernel versions.
# --prebuilt  runs the binaries of .gpu-deps/prebuilt.tar.gz (gpu-prebuild.sh)
#          instead of building, when they were built from these sources and
#          load here (else it builds, saying why).
# --steps A,B  runs only the named steps (configure, build and devices always
#          run; the others: tests, ptx_jit, nccl, sanitizer, bench_conv, gemm, train,
#          kernel_versions, kernel_times), so that a lease's second call
#          measures what its first did not.
# --layers A,B  keeps only these layers (by name, within the sets) in
#          bench_conv and kernel_versions, so that a call can time every
#          version on the few layers a change is about.
# --sim    the same pipeline on the sim backend with tiny sizes, without
#          PyTorch, cuDNN, compute-sanitizer or Nsight Compute, so that it
#          cannot rot: CI runs it.
#
# OUT_DIR receives at most eight files (the device tool brings back eight):
#   summary.md, summary.json (machine, commit, GPU, driver, CUDA, clocks, each
#   step's status and time, the tables), ctest.xml (JUnit), sanitizer.log,
#   bench_conv.json (Google Benchmark), bench_gemm.json (Google Benchmark: every
#   GEMM version, strict and on the tensor cores in tf32 and bf16, against
#   cuBLAS in the same precision), train.jsonl (convkit and PyTorch, one JSON
#   line per run) and log.txt (everything the steps printed).
#   The TF32 run of the layer sets (step 6, bench_conv_tf32) and the
#   kernel-version sweep (step 7b) have no files of their own: they go into
#   bench_conv.json as sections, "tf32" (one Google Benchmark document) and
#   "kernel_versions": {"fp32": ..., "tf32": ..., "bf16": ...}, each a whole Google
#   Benchmark document. Merging keeps every result in one JSON that the
#   summary and a reader already open; an archive would have to be unpacked
#   before anyone could read it, and would hide bench_conv.json itself.
# Each step runs even when an earlier one failed, so a short lease yields all
# it can; the exit status is non-zero when any step failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

mode=gpu quick=0 prebuilt=0 only= build_dir= layers=
while [ $# -gt 1 ]; do
  case $1 in
    --sim) mode=sim ;;
    --quick) quick=1 ;;
    --prebuilt) prebuilt=1 ;;
    --steps) only=,$2,; shift ;;
    --layers) layers=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    *) echo "gpu-check: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ $# -eq 1 ] || { sed -n '2,30p' "$0" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
# Caps in seconds, so that a runaway cannot eat the lease: a test binary, the
# sanitizer step, bench_conv, bench_gemm, each training run, each kernel-version
# run, the kernel_times step, the ptx_jit run. --quick, the first look of a lease, has smaller ones.
test_cap_s=600 sanitizer_budget_s=300 bench_cap_s=300 gemm_cap_s=150 train_cap_s=300 versions_cap_s=150
kernel_times_budget_s=240 jit_cap_s=120
[ $quick = 1 ] && test_cap_s=150 sanitizer_budget_s=60 bench_cap_s=90 gemm_cap_s=45 train_cap_s=90
log=$out/log.txt steps=$out/steps.tsv
: >"$log"; : >"$steps"; rm -f "$out"/{ctest.xml,sanitizer.log,bench_conv.json,bench_conv_tf32.json,bench_gemm.json,train.jsonl,versions-fp32.json,versions-fp32-fft.json,versions-tf32.json,versions-tf32-wgmma.json,versions-bf16.json}
jobs=$(nproc)
[ -n "$build_dir" ] || build_dir=$root/build/gpu-check-$mode
device=cuda; [ $mode = sim ] && device=sim

# step NAME COMMAND...: runs it with its output in log.txt, records status and seconds.
failed=0
step() {
  local name=$1; shift
  if [ -n "$only" ] && [[ ,configure,build,devices,$only != *,$name,* ]]; then
    echo "=== $name: not asked for (--steps)" | tee -a "$log"; return 0
  fi
  local t0=$SECONDS
  echo "=== $name: $*" | tee -a "$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >>"$steps"
  echo "=== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
  [ $rc -eq 0 ] || failed=1
  return 0
}

# ---- 1. what this machine is
env_info() {
  echo "commit	$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "dirty	$(git -C "$root" status --porcelain 2>/dev/null | grep -vc '^??' || true)"
  echo "mode	$mode"
  echo "quick	$quick"
  echo "prebuilt	$prebuilt"
  echo "host_cpu	$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "host_cores	$jobs"
  echo "nvcc	$(nvcc --version 2>/dev/null | tail -n 1)"
  if [ $mode = gpu ]; then
    nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.sm,clocks.max.sm,clocks.mem \
      --format=csv,noheader | head -n 1 | tr -d '\n' | sed 's/^/gpu	/'; echo
    echo "cuda_driver_api	$(nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | cut -d' ' -f3)"
  fi
} >"$out/env.tsv"
env_info

# ---- 2. what the build needs: the .debs from scripts/gpu-deps.sh, unpacked
# into a private prefix; cuDNN from PyTorch's Python packages. The binaries
# find these libraries through the RUNPATH CMake gives them, so the
# environment (and PyTorch's libraries) stays as it is. Warnings are not
# errors here: the GPU machine's g++ may be newer than the one CI uses.
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVKIT_BUILD_EXAMPLES=OFF -DCONVKIT_WERROR=OFF)
if compgen -G "$root/.gpu-deps/*.deb" >/dev/null; then
  prefix=$root/build/gpu-deps-prefix
  mkdir -p "$prefix"
  for deb in "$root"/.gpu-deps/*.deb; do dpkg -x "$deb" "$prefix"; done
  # A -dev package may link to its runtime library by absolute path
  # (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13): point it into the prefix.
  find "$prefix" -type l -lname '/*' | while read -r link; do
    target=$(readlink "$link")
    [ -e "$prefix$target" ] && ln -sfn "$prefix$target" "$link"
  done
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  cmake_args+=(-DCMAKE_INCLUDE_PATH="$prefix/usr/include"
               -DCMAKE_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu;$prefix/lib/x86_64-linux-gnu")
fi
if [ $mode = gpu ]; then
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '.')
  # Compute capability 9.0 builds sm_90a, where the wgmma kernels exist, and
  # compute_80 PTX as the default build does (cmake/ConvkitCuda.cmake), which
  # the ptx_jit step makes the driver compile in place of the sm_90a code.
  [ "$arch" = 90 ] && arch="90a-real;80-virtual"
  cmake_args+=(-DCONVKIT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch")
  cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null)
  if [ -n "$cudnn" ] && [ -f "$cudnn/include/cudnn.h" ]; then
    lib=$(ls "$cudnn"/lib/libcudnn.so* 2>/dev/null | head -n 1)
    cmake_args+=(-DCONVKIT_CUDNN_INCLUDE="$cudnn/include" -DCONVKIT_CUDNN_LIBRARY="$lib")
  fi
fi

# ---- 3. build for this GPU only (sim: reuse a build when one is given), or
# take the binaries built before the lease. The prebuilt ones link the CUDA
# libraries, cuDNN and the .debs' libraries by name: the loader finds them in
# the CUDA toolkit, PyTorch's NVIDIA packages and the private prefix.
use_prebuilt() {
  local archive=$root/.gpu-deps/prebuilt.tar.gz dir
  [ -f "$archive" ] || { echo "no $archive: run scripts/gpu-prebuild.sh first"; return 1; }
  tar -xzf "$archive" -C "$root" || return 1
  dir=$(tar -tzf "$archive" | grep -m1 '/source-hash$') && dir=$root/${dir%/source-hash}
  if [ "$(cat "$dir/source-hash")" != "$("$root/scripts/source-hash.sh")" ]; then
    echo "the prebuilt binaries were built from other sources than these"; return 1
  fi
  local paths=("$dir/lib")
  [ -n "${prefix:-}" ] && paths+=("$prefix/usr/lib/x86_64-linux-gnu" "$prefix/lib/x86_64-linux-gnu")
  paths+=($(python3 -c 'import glob, nvidia, os
for p in nvidia.__path__: print("\n".join(sorted(glob.glob(os.path.join(p, "*", "lib")))))' 2>/dev/null))
  paths+=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib)
  local ld
  ld=$(IFS=:; echo "${paths[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "LD_LIBRARY_PATH=$ld"
  LD_LIBRARY_PATH=$ld "$dir/bin/convkit" devices || return 1
  LD_LIBRARY_PATH=$ld "$dir/bin/convkit" devices | grep -q '^cuda\(:[0-9]*\)\? *usable' ||
    { echo "the prebuilt CLI lists no cuda device"; return 1; }
  export LD_LIBRARY_PATH=$ld
  build_dir=$dir
}
# Not a step: a prebuilt set that cannot be used is no failure, the build is its fallback.
if [ $prebuilt = 1 ] && [ $mode = gpu ]; then
  echo "=== prebuilt: .gpu-deps/prebuilt.tar.gz" | tee -a "$log"
  if use_prebuilt >>"$log" 2>&1; then
    echo "=== prebuilt: using $build_dir" | tee -a "$log"
  else
    echo "=== prebuilt: not usable (log.txt says why): building here" | tee -a "$log"
    prebuilt=0
  fi
fi
if [ $prebuilt = 1 ]; then
  :
elif [ $mode = gpu ] || [ ! -f "$build_dir/CMakeCache.txt" ]; then
  [ $mode = sim ] && cmake_args+=(-DCONVKIT_CUDA=OFF)
  step configure cmake -S "$root" -B "$build_dir" "${cmake_args[@]}"
fi
# A GPU build is whole (a --quick rerun finds it built); sim builds what its steps use.
targets=(all)
[ $mode = sim ] && targets=(convkit_cli bench_conv bench_gemm test_backend test_gpu_gemm test_gpu_gemm_tensor_core test_ddp
  test_nccl_group)
[ $prebuilt = 1 ] || step build cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
cli=$build_dir/bin/convkit
step devices "$cli" devices

# ---- 4. the tests that run on cuda, with cuda required: every test binary
# runs its cuda instances (a *_cuda binary all of its tests) and the
# registry's tests, in one process per binary. Not CTest's process per test:
# on the H200 each process spent about 3 s starting CUDA, and 1,412 tests
# took 273 s on 16 cores (docs/results/nvidia-h200-2026-11-27). The CPU and
# sim tests are CI's. On sim, CTest runs the registry's tests, so that the
# step cannot rot.
run_tests() {
  if [ $mode = gpu ]; then run_test_binaries; return; fi
  ctest --test-dir "$build_dir" -j "$jobs" --timeout $test_cap_s \
    --output-on-failure --output-junit "$out/ctest.xml" -R '^Registry\.'
}
# run_test_binary BIN STEM: BIN's cuda tests (a *_cuda binary's all), its
# report in STEM.xml and STEM.log, its exit status in STEM.rc.
run_test_binary() {
  local filter="*cuda*:*Cuda*:*CUDA*:Registry.*"
  case $(basename "$1") in *_cuda) filter="*" ;; esac
  CONVKIT_TEST_REQUIRE_CUDA=1 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive timeout "$test_cap_s" "$1" \
    --gtest_filter="$filter" --gtest_brief=1 --gtest_output="xml:$2.xml" >"$2.log" 2>&1 </dev/null
  echo $? >"$2.rc"
}
# All binaries at once, each report kept; then one JUnit file in CTest's
# naming ("cuda." before a *_cuda binary's tests), with a failed case for a
# binary that crashed or timed out. The binaries, not CTest's lists, say what
# exists: the prebuilt binaries' lists were made where no GPU was.
# A binary that failed runs once more under CONVKIT_DISABLE_WGMMA=1: a kernel
# that faults leaves the CUDA context unusable and fails every later test of
# its process, and the wgmma kernels, written on sim, are the likeliest to.
# The rerun's cases join the report as "without_wgmma." ones; it does not
# change the step's status, which the first runs decide.
run_test_binaries() {
  local reports=$build_dir/gpu-check-reports bin stem
  rm -rf "$reports"; mkdir -p "$reports"
  export -f run_test_binary; export test_cap_s
  find "$build_dir/tests" -type f -perm -u+x -name 'test_*' ! -path '*/CMakeFiles/*' | sort >"$reports/binaries"
  xargs -P "$jobs" -I{} bash -c 'run_test_binary "$1" "$2/$(basename "$1")"' _ {} "$reports" <"$reports/binaries"
  while read -r bin; do
    stem=$reports/$(basename "$bin")
    [ "$(cat "$stem.rc")" = 0 ] || CONVKIT_DISABLE_WGMMA=1 run_test_binary "$bin" "$stem.without_wgmma"
  done <"$reports/binaries"
  cat "$reports"/*.log
  python3 - "$reports" "$out/ctest.xml" <<'PY'
import glob, os, sys, xml.etree.ElementTree as ET
reports, out = sys.argv[1], sys.argv[2]
root = ET.Element("testsuites")
bad = 0
ran = 0
# NAME.rc: a first run; NAME.without_wgmma.rc: the rerun of one that failed.
for rc_path in sorted(glob.glob(os.path.join(reports, "*.rc"))):
    name = os.path.basename(rc_path)[:-3]
    rerun = name.endswith(".without_wgmma")
    binary = name[:-len(".without_wgmma")] if rerun else name
    prefix = ("without_wgmma." if rerun else "") + ("cuda." if binary.endswith("_cuda") else "")
    rc = int(open(rc_path).read().strip() or 1)
    suite = ET.SubElement(root, "testsuite", name=name)
    failed_cases = 0
    xml_path = os.path.join(reports, name + ".xml")
    if os.path.exists(xml_path):
        for case in ET.parse(xml_path).getroot().iter("testcase"):
            case.set("name", prefix + case.get("classname", "") + "." + case.get("name", ""))
            failed_cases += case.find("failure") is not None
            suite.append(case)
    if rc != 0 and failed_cases == 0:
        case = ET.SubElement(suite, "testcase", name=prefix + binary + ".process")
        ET.SubElement(case, "failure", message=f"{name} exited with status {rc} (124: timed out)")
    if rerun:
        print(f"rerun of {binary} under CONVKIT_DISABLE_WGMMA=1: exit {rc}, {failed_cases} failed cases")
    else:
        ran += 1
        bad += rc != 0
ET.ElementTree(root).write(out)
print(f"test binaries: {ran} ran, {bad} failed")
sys.exit(1 if bad else 0)
PY
}
step tests run_tests

# ---- 4a. wgmma only where the GPU runs the build's sm_90a code: the
# tensor-core GEMM suite's wgmma tests again under CUDA_FORCE_PTX_JIT=1, where
# the driver ignores the machine code and compiles the build's PTX (compute_80,
# as every build but one for 90a alone makes), which has no wgmma.
# device_runs_wgmma must say no (NoWgmmaWhereTheDriverCompilesPtx must run
# and pass, not skip) and the wgmma tests skip instead of trapping.
# Lazy module loading keeps the driver to compiling the modules the filtered
# tests launch from: the probe's (one kernel file's PTX, an estimate of
# 10-30 s, not measured), capped at jit_cap_s. On sim, where no driver
# compiles anything, the refusal test runs plainly, so that the step cannot rot.
ptx_jit() {
  local bin=$build_dir/tests/gpu/gemm_tensor_core/test_gpu_gemm_tensor_core filter='*V6Refuses*' log rc
  [ $mode = gpu ] && bin+=_cuda filter='*Wgmma*:*V6Refuses*'
  log=$(CUDA_FORCE_PTX_JIT=1 CUDA_MODULE_LOADING=LAZY timeout $jit_cap_s "$bin" --gtest_filter="$filter" 2>&1)
  rc=$?
  printf '%s\n' "$log"
  [ $rc -eq 0 ] || return $rc
  if [ $mode = gpu ] && ! grep -q '^\[       OK \] GpuGemmTensorCore.NoWgmmaWhereTheDriverCompilesPtx' <<<"$log"; then
    echo "--- NoWgmmaWhereTheDriverCompilesPtx did not run and pass"; return 1
  fi
}
step ptx_jit ptx_jit

# ---- 4b. the NCCL group with one rank (docs/distributed.md): its tests,
# required to run (CONVKIT_TEST_REQUIRE_NCCL turns their skip into a
# failure), then a short `convkit train` on cuda under `mpirun -np 1`, which
# must report its gradients going over nccl. On sim the same stage runs the
# emulated group's tests and a one-rank staged run, so that it cannot rot.
# Without mpirun (or a build without MPI) the training run is skipped, saying
# so; the tests still run.
nccl_stage() {
  local rc=0 bin=$build_dir/tests/dist/test_nccl_group require=0
  [ $mode = gpu ] && require=1
  echo "--- $bin"
  CONVKIT_TEST_REQUIRE_NCCL=$require timeout $test_cap_s "$bin" --gtest_brief=1 || rc=1
  if [ $mode = sim ]; then
    echo "--- $build_dir/tests/dist/test_ddp (the emulated group)"
    "$build_dir/tests/dist/test_ddp" --gtest_filter='SimCommunicator.*:DeviceGroup.*' --gtest_brief=1 || rc=1
  fi
  if ! command -v mpirun >/dev/null || ! grep -q 'CONVKIT_HAVE_MPI 1' "$build_dir/include/convkit/version.h"; then
    echo "--- no mpirun, or a build without MPI: the one-rank training run is skipped"
    return $rc
  fi
  # A small Fashion-MNIST-shaped data set (IDX files), written here: the
  # GPU machine has no data sets.
  local data=$build_dir/gpu-check-data/fmnist train_out train_limit=256
  [ $mode = sim ] && train_limit=32  # two steps: sim runs the kernels on the CPU
  python3 - "$data" <<'PY' || return 1
import os, random, struct, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = random.Random(7)
for split, n in (("train", 256), ("t10k", 64)):
    labels = bytes(rng.randrange(10) for _ in range(n))
    images = bytes(min(255, 25 * labels[i // 784] + rng.randrange(30)) for i in range(n * 784))
    with open(f"{d}/{split}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + images)
    with open(f"{d}/{split}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels)
PY
  train_out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 mpirun -np 1 --oversubscribe \
    "$cli" train fmnist-cnn --data "fashion-mnist:$data" --device $device --epochs 1 --batch 16 \
    --limit $train_limit --test-limit $train_limit --progress none 2>&1)
  local train_rc=$?
  printf '%s\n' "$train_out"
  [ $train_rc -eq 0 ] || rc=1
  if [ $mode = gpu ] && ! grep -q '^gradients: nccl on cuda:0' <<<"$train_out"; then
    echo "--- the run did not report its gradients going over nccl"; rc=1
  fi
  return $rc
}
step nccl nccl_stage

# ---- 5. compute-sanitizer (memcheck, racecheck) over the cuda side of the
# kernel suites, on their small shapes: the cuda instances of the
# device-parameterised suites, and the nvcc builds (*_cuda) of the suites that
# call the launchers directly, filtered as their sim-check runs are
# (tests/gpu/*/CMakeLists.txt). Runs that would start after the step's time
# budget are listed as not run, which fails the step. On sim there is no
# compute-sanitizer: one suite runs plainly, to keep the step from rotting.
# A run that selects no test fails the step.
small_shapes='-*one_image_parallel*:*large_image*:*many_channels*:*kernel11x11*:*VersusV1*:*random1*:*random2*:*random5*:*random6*:*random7*:*random8*:*random9*:*ForAllSizesAndTransposes'
run_suite() {
  local log
  log=$("$@" 2>&1); local rc=$?
  printf '%s\n' "$log"
  if grep -q '0 tests from 0 test suites ran' <<<"$log"; then echo "no test ran: $*"; return 1; fi
  return $rc
}
sanitize() {
  local rc=0 bin tool filter start=$SECONDS
  # memcheck over every suite first, racecheck after: racecheck is ten times
  # slower (31 s against 2 s on the direct conv suite, H200), and a budget
  # that runs out should leave the cheap, broad check done.
  for tool in memcheck racecheck; do
    for bin in "$build_dir"/tests/gpu/*/test_*; do
      [ -x "$bin" ] || continue
      if [ $mode = sim ]; then
        [[ $bin == */test_gpu_gemm ]] && [ $tool = memcheck ] || continue
        echo "--- $bin (sim, no sanitizer)"
        run_suite "$bin" --gtest_brief=1 || rc=1
        continue
      fi
      case $bin in
        *_cuda) filter=$small_shapes ;;
        */test_gpu_gemm|*/test_gpu_im2col|*/test_gpu_conv_direct|*/test_gpu_conv_fft) continue ;;  # sim launchers
        *) filter='*/cuda*' ;;
      esac
      if [ $((SECONDS - start)) -ge $sanitizer_budget_s ]; then
        echo "--- NOT RUN (past the ${sanitizer_budget_s} s budget): $tool $bin"; rc=1; continue
      fi
      echo "--- compute-sanitizer --tool $tool $bin --gtest_filter=$filter"
      run_suite timeout $((sanitizer_budget_s - (SECONDS - start) + 60)) compute-sanitizer --tool "$tool" --error-exitcode 3 --print-limit 20 \
        "$bin" --gtest_filter="$filter" --gtest_brief=1 || rc=1
    done
  done >>"$out/sanitizer.log" 2>&1
  return $rc
}
step sanitizer sanitize

# ---- 6. every conv algorithm and pass against cuDNN's best, layer by layer
bench_sets=cifar10-cnn,resnet18-cifar
[ $quick = 1 ] && bench_sets=cifar10-cnn
bench_args=(--sets=$bench_sets --devices=$device --benchmark_min_time=0.05
            --benchmark_format=console --benchmark_out_format=json --benchmark_out="$out/bench_conv.json")
[ $mode = sim ] && bench_args=(--sets=cifar10-cnn --layers=conv1 --max-batch=1 --passes=fwd --devices=sim
                               --benchmark_out_format=json --benchmark_out="$out/bench_conv.json")
[ -n "$layers" ] && bench_args+=(--layers="$layers")
step bench_conv timeout $bench_cap_s "$build_dir/benchmarks/bench_conv" "${bench_args[@]}"
# The same layers with TF32 allowed (issue 18's per-pass goal is in both
# precision modes): every convkit algorithm as the setting runs it (the
# tensor-core implicit GEMM for im2col_gemm, winograd's products on the
# tensor-core GEMM in tf32, direct and fft strict) against
# cuDNN, which follows the setting. Its document joins bench_conv.json as the
# section "tf32" (as the version sweep's do). About 60 s on an H200 (estimate).
bench_conv_tf32() {
  local tf32=$out/bench_conv_tf32.json
  CONVKIT_ALLOW_TF32=1 timeout $bench_cap_s "$build_dir/benchmarks/bench_conv" \
    "${bench_args[@]/#--benchmark_out=*/--benchmark_out=$tf32}" || return 1
  python3 - "$out/bench_conv.json" "$tf32" <<'PY'
import json, os, sys
main_path, tf32_path = sys.argv[1:]
doc = json.load(open(main_path)) if os.path.exists(main_path) else {}
doc["tf32"] = json.load(open(tf32_path))
json.dump(doc, open(main_path, "w"), indent=1)
os.remove(tf32_path)
PY
}
step bench_conv_tf32 bench_conv_tf32

# ---- 6b. GEMM: every version (strict float32, and the tensor-core ones at
# float32_precision high and medium) against cuBLAS in the same precision, at
# n = 256 to 4096, each row checked on sampled entries against float64 first.
# Issue 18's GEMM goals are the 4096 rows. About 75 rows; on an H100 the
# slowest (v1 at 4096, ~0.1 s a product) take one timed iteration each, so an
# estimated 30-60 s, capped. On sim bench_gemm times no GPU row (sim times
# mean nothing): the step runs its cpu rows, so that it cannot rot.
gemm_args=(--benchmark_min_time=0.05 --benchmark_format=console --benchmark_out_format=json
           --benchmark_out="$out/bench_gemm.json")
[ $mode = sim ] && gemm_args+=(--benchmark_filter='BM_CpuMatmul/256')
[ $quick = 1 ] && gemm_args+=(--benchmark_filter='/4096/')
gemm() {
  timeout $gemm_cap_s "$build_dir/benchmarks/bench_gemm" "${gemm_args[@]}" || return 1
  # A row whose sampled check failed skips itself; the step fails with it.
  python3 - "$out/bench_gemm.json" <<'PY'
import json, sys
bad = [b["name"] + ": " + b.get("error_message", "") for b in json.load(open(sys.argv[1]))["benchmarks"]
       if b.get("error_occurred")]
for b in bad:
    print("FAILED:", b)
sys.exit(1 if bad else 0)
PY
}
step gemm gemm

# ---- 7. training throughput: convkit on cuda (strict, strict with batch norm
# pinned to version 3, tf32, and tf32 with the tensor-core conv family pinned
# to version 4) and cpu, PyTorch on the
# same GPU (strict and tf32); a layer profile of each strict run
runs="cifar10-cnn:128 cifar10-cnn:512 resnet18-cifar:128" steps_n=50 warmup=10 cpu_steps=3
[ $quick = 1 ] && runs="cifar10-cnn:128"
[ $mode = sim ] && runs="fmnist-cnn:2 cifar10-cnn-bn:2" steps_n=1 warmup=0 cpu_steps=1
train() {
  local run model batch lines profile
  for run in $runs; do
    model=${run%%:*} batch=${run##*:}
    # strict float32, then tf32 (float32 precision high): the same precision as
    # each of PyTorch's two runs below. The strict run then profiles as many
    # steps layer by layer (after its timing): the table goes to log.txt.
    # high-tc4 is tf32 with the tensor-core conv family pinned to version 4
    # (channels-last; the JSON line's pinned_kernels says so), which the
    # default tf32 run takes only once a GPU has measured it against v3.
    # highest-bn3 is strict with batch norm pinned to version 3 (its maps an
    # element at a time), beside the default's version 4 (16 bytes at a
    # time), which no GPU had run when it became the default.
    # The -tuned variants run conv benchmark mode (CONVKIT_CONV_BENCHMARK=1:
    # each pass of each layer timed over the algorithms and the kernel
    # versions worth timing, as PyTorch's cudnn.benchmark below; the JSON
    # line's conv_benchmark says so), and log each layer's plan to stderr.
    for variant in highest highest-bn3 high high-tc4 highest-tuned high-tuned; do
      precision=${variant%%-*}
      pin=(); [ $variant = high-tc4 ] && pin=(CONVKIT_KERNEL_CONV2D_IMPLICIT_GEMM_TENSOR_CORE=4)
      [ $variant = highest-bn3 ] && pin=(CONVKIT_KERNEL_BATCH_NORM=3)
      [ "${variant#*-}" = tuned ] && pin=(CONVKIT_CONV_BENCHMARK=1 CONVKIT_CONV_LOG=1)
      profile=; [ $variant = highest ] && profile=--profile
      lines=$(env ${pin[@]+"${pin[@]}"} timeout $train_cap_s "$cli" bench train "$model" --device $device --batch "$batch" \
        --steps $steps_n --warmup $warmup --optimizer sgd --float32-precision $precision --json $profile) || return 1
      printf '%s\n' "$lines"
      # A model without batch norm never asks for the family, so its bn3 run
      # is the strict run again (its JSON line names no pin): only the log has it.
      if [ $variant = highest-bn3 ] && ! tail -n 1 <<<"$lines" | grep -q '"pinned_kernels": "[^"]*batch_norm=3'; then
        continue
      fi
      tail -n 1 <<<"$lines" >>"$out/train.jsonl"
    done
    timeout $train_cap_s "$cli" bench train "$model" --device cpu --batch "$batch" --steps $cpu_steps --warmup 1 \
      --optimizer sgd --json | tail -n 1 >>"$out/train.jsonl" || return 1
  done
  if [ $mode = gpu ]; then
    timeout $train_cap_s python3 "$root/benchmarks/pytorch_train.py" --runs "${runs// /,}" --steps $steps_n --warmup $warmup \
      >>"$out/train.jsonl" || return 1
  fi
}
step train train

# ---- 7b. every version of the conv kernel families (bench_conv
# --kernel-versions), strict FP32 against the default version and against
# cuDNN's best in step 6, then the tensor-core family under
# CONVKIT_ALLOW_TF32=1 against cuDNN with TF32 allowed (cuDNN follows
# allow_tf32), and under CONVKIT_FLOAT32_PRECISION=medium in bf16 (cuDNN has
# no bf16 mode on float32 tensors, so its row there is its TF32 again).
# gemm's versions are left out: they are timed by bench_gemm,
# and change im2col_gemm only on its explicit path (conv2d_implicit_gemm v1,
# which is here with gemm's default). Not in --quick.
# Cost on an H100 (an estimate, not yet measured): both sets are 15 layers x
# 3 passes; about 575 FP32 rows run (direct and implicit GEMM 5 versions
# everywhere, FFT 4 and Winograd 2 on the stride-1 3x3 layers) and 135 rows
# each in TF32 and BF16 (2 versions and cuDNN). With --benchmark_min_time=0.01
# a row costs its setup (operand copies, the float64 check on the host, about
# 0.1 s) more than its timing, so about 75-105 s in all; the slow teaching versions
# (direct v1, implicit v2, FFT v1) take a few ms to tens of ms per pass on
# the big layers and at most a few iterations each, so they are kept. Each
# run is capped (versions_cap_s) so that a runaway cannot eat the lease,
# and the step runs after training, so that it cannot starve the steps that
# answer the issues' goals.
version_families=conv2d_direct,conv2d_implicit_gemm,conv2d_fft,conv2d_winograd
versions_args=(--sets=$bench_sets --devices=$device --benchmark_min_time=0.01 --benchmark_format=console
               --benchmark_out_format=json)
tf32_algos=im2col_gemm,cudnn
# The rows of the tensor-core conv family's wgmma version (5), by name.
wgmma_rows='@conv2d_implicit_gemm_tensor_core[.]v5/'
# FFT's own kind of layer, which the two sets lack: convnet-benchmarks L4 (7x7,
# 128 channels, 16 x 16), where the automatic choice takes fft. Every
# conv2d_fft version and cuDNN, merged into the fp32 rows (a few seconds).
fft_args=(--sets=convnet-benchmarks --layers=L4 --devices=$device --benchmark_min_time=0.01
          --benchmark_format=console --benchmark_out_format=json)
fft_algos=fft,cudnn
if [ $mode = sim ]; then
  versions_args=(--sets=cifar10-cnn --layers=conv1 --max-batch=1 --passes=fwd --devices=sim --benchmark_out_format=json)
  tf32_algos=im2col_gemm  # sim runs no vendor library
  fft_args=(--sets=convnet-benchmarks --layers=L4 --max-batch=1 --passes=fwd --devices=sim --benchmark_out_format=json)
  fft_algos=fft
fi
[ -n "$layers" ] && versions_args+=(--layers="$layers")
kernel_versions() {
  local rc=0 bin=$build_dir/benchmarks/bench_conv
  timeout $versions_cap_s "$bin" "${versions_args[@]}" --algos=direct,im2col_gemm,fft,winograd \
    --kernel-versions=$version_families --benchmark_out="$out/versions-fp32.json" || rc=1
  timeout $versions_cap_s "$bin" "${fft_args[@]}" --algos=$fft_algos --kernel-versions=conv2d_fft \
    --benchmark_out="$out/versions-fp32-fft.json" || rc=1
  # The wgmma version's rows run in a process of their own, after the others:
  # a kernel that faults leaves the CUDA context unusable and takes every
  # later row of its process with it, and wgmma is the newest code here.
  CONVKIT_ALLOW_TF32=1 timeout $versions_cap_s "$bin" "${versions_args[@]}" --algos=$tf32_algos \
    --kernel-versions=conv2d_implicit_gemm_tensor_core --benchmark_filter="-$wgmma_rows" \
    --benchmark_out="$out/versions-tf32.json" || rc=1
  CONVKIT_ALLOW_TF32=1 timeout $versions_cap_s "$bin" "${versions_args[@]}" --algos=$tf32_algos \
    --kernel-versions=conv2d_implicit_gemm_tensor_core --benchmark_filter="$wgmma_rows" \
    --benchmark_out="$out/versions-tf32-wgmma.json" || rc=1
  CONVKIT_FLOAT32_PRECISION=medium timeout $versions_cap_s "$bin" "${versions_args[@]}" --algos=$tf32_algos \
    --kernel-versions=conv2d_implicit_gemm_tensor_core --benchmark_out="$out/versions-bf16.json" || rc=1
  # The merge also fails the step where a version's row neither ran nor
  # skipped itself as unsupported (a wrong result, an error) or none ran.
  python3 - "$out" <<'PY' || rc=1
import json, os, sys
out = sys.argv[1]
main_path = os.path.join(out, "bench_conv.json")
doc = json.load(open(main_path)) if os.path.exists(main_path) else {}
doc["kernel_versions"] = {}
problems, ran = [], 0
for precision in ("fp32", "tf32", "bf16"):
    path = os.path.join(out, f"versions-{precision}.json")
    if not os.path.exists(path):
        problems.append(f"no {precision} run")
        continue
    run = doc["kernel_versions"][precision] = json.load(open(path))
    os.remove(path)
    # FFT's layer (fp32) and the wgmma version (tf32), each run apart:
    # their rows join the precision's.
    for part, expected in (("fft", "fp32"), ("wgmma", "tf32")):
        part_path = os.path.join(out, f"versions-{precision}-{part}.json")
        if os.path.exists(part_path):
            run["benchmarks"] += json.load(open(part_path)).get("benchmarks", [])
            os.remove(part_path)
        elif precision == expected:
            problems.append(f"no {precision} run of the {part} rows")
    for b in run.get("benchmarks", []):
        if not b.get("error_occurred"):
            ran += "@" in b["name"]
        elif not b.get("error_message", "").startswith("unsupported:"):
            problems.append(f"{b['name']}: {b.get('error_message')}")
json.dump(doc, open(main_path, "w"), indent=1)
print(f"kernel versions: {ran} rows ran; merged into bench_conv.json")
for p in problems + ([] if ran else ["no version row ran"]):
    print("FAILED:", p)
sys.exit(1 if problems or not ran else 0)
PY
  return $rc
}
[ $quick = 1 ] || step kernel_versions kernel_versions

# ---- 7c. where a pass's time goes, kernel by kernel: Nsight Compute's
# duration of each kernel over $profile_passes passes of a few rows, which
# bench_conv runs in a profiler range apart from its timing
# (--profile-passes; ncu --profile-from-start off sees those alone), and
# benchmarks/kernel_times.py's table of them. The rows: the passes run 3
# (2026-11-28) found above 1.25x cuDNN's time, each beside cuDNN's own
# (SET:LAYER:PASS:ALGO, :tf32 at the end for float32 precision high). The
# raw CSV and the table go to log.txt. ncu runs the kernels one at a time and
# leaves clocks and caches alone. Cost (an estimate, not measured): 10-30 s
# per row (ncu's start, cuDNN's setup, the row's warm-up and timing); the step
# stops starting rows after kernel_times_budget_s, saying which it left out.
# Not in --quick; sim runs one row's passes with no profiler attached.
kernel_rows="cifar10-cnn:conv2:fwd:winograd cifar10-cnn:conv2:fwd:cudnn
  resnet18-cifar:conv1:bwd-data:direct resnet18-cifar:conv1:bwd-data:cudnn
  resnet18-cifar:layer3.conv1:bwd-data:im2col_gemm resnet18-cifar:layer3.conv1:bwd-data:cudnn
  resnet18-cifar:layer3:fwd:winograd:tf32 resnet18-cifar:layer3:fwd:cudnn:tf32"
profile_passes=5
[ $mode = sim ] && kernel_rows="cifar10-cnn:conv2:fwd:winograd" profile_passes=1
kernel_times() {
  local rc=0 row set layer pass algo precision raw=$out/kernel-times.csv bin=$build_dir/benchmarks/bench_conv
  local start=$SECONDS left
  for row in $kernel_rows; do
    left=$((kernel_times_budget_s - (SECONDS - start)))
    if [ $left -le 0 ]; then echo "--- NOT RUN (past the ${kernel_times_budget_s} s budget): $row"; rc=1; continue; fi
    IFS=: read -r set layer pass algo precision <<<"$row"
    local args=(--devices=$device --algos="$algo" --sets="$set" --layers="$layer" --passes="$pass" --check=false
                --profile-passes=$profile_passes --benchmark_min_time=0.01 --benchmark_format=console)
    local env=(CONVKIT_FLOAT32_PRECISION=highest)
    [ "$precision" = tf32 ] && env=(CONVKIT_FLOAT32_PRECISION=high)
    echo "--- $row"
    if [ $mode = sim ]; then
      env "${env[@]}" timeout $left "$bin" "${args[@]}" --max-batch=1 || rc=1
      echo "(sim: no Nsight Compute attached; the passes ran in a range nobody reads)"
      continue
    fi
    rm -f "$raw"
    env "${env[@]}" timeout $left ncu --profile-from-start off --clock-control none --cache-control none \
      --metrics gpu__time_duration.sum --print-units base --csv --log-file "$raw" "$bin" "${args[@]}" || rc=1
    [ -f "$raw" ] || { echo "no ncu output for $row"; rc=1; continue; }
    cat "$raw"
    python3 "$root/benchmarks/kernel_times.py" --passes $profile_passes --title "$row" "$raw" || rc=1
  done
  rm -f "$raw"
  return $rc
}
[ $quick = 1 ] || step kernel_times kernel_times

# ---- 8. summary.json and summary.md
python3 "$root/scripts/gpu_check_summary.py" "$out"
rm -f "$steps" "$out/env.tsv"
echo "gpu-check: results in $out ($( [ $failed = 0 ] && echo 'every step passed' || echo 'some steps FAILED'))"
exit $failed
