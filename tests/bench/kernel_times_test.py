#!/usr/bin/env python3
"""benchmarks/kernel_times.py on canned Nsight Compute CSV: kernels named
without namespaces or parameters, in order of first launch, launches and
microseconds per pass, every unit ncu prints; a file without the CSV header
or without durations is an error naming it.

usage: kernel_times_test.py KERNEL_TIMES_PY
"""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def launch(i, kernel, unit, value, metric="gpu__time_duration.sum"):
    return (f'"{i}","4242","bench_conv","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


INPUT = ("void convkit::gpu_cuda::(anonymous namespace)::input_transform_halo<4, float, 0>"
         "(convkit::gpu_cuda::WinogradGeometry, const T2 *, long, long, long, int, T2 *)")
GEMM = "void convkit::gpu_cuda::gemm_warp_tiled<float, false, false, 4>(convkit::gpu_cuda::GemmArgs)"
OUTPUT = ("void convkit::gpu_cuda::(anonymous namespace)::output_transform_rows<4, float>"
          "(convkit::gpu_cuda::WinogradGeometry, const T2 *, const T2 *, long, long, long, int, T2 *)")


def run(lines, *args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "raw.csv")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return subprocess.run([sys.executable, SCRIPT, *args, path], capture_output=True, text=True)


class KernelTimes(unittest.TestCase):
    def test_table_per_pass(self):
        lines = ["==PROF== Connected to process 4242 (bench_conv)", HEADER]
        # Two passes: input, gemm twice (two groups), output; units vary.
        for p in range(2):
            base = 4 * p
            lines.append(launch(base, INPUT, "nsecond", "30,000"))
            lines.append(launch(base + 1, GEMM, "usecond", "20"))
            lines.append(launch(base + 1, GEMM, "sm__cycles_elapsed.avg", "123", metric="sm__cycles"))
            lines.append(launch(base + 2, GEMM, "msecond", "0.02"))
            lines.append(launch(base + 3, OUTPUT, "nsecond", "30000"))
        lines.append("==PROF== Disconnected from process 4242")
        proc = run(lines, "--passes", "2", "--title", "cifar10-cnn conv2 fwd winograd")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = proc.stdout.splitlines()
        self.assertEqual(out[0], "#### cifar10-cnn conv2 fwd winograd")
        rows = [line for line in out if line.startswith("| `")]
        self.assertEqual(rows, [
            "| `input_transform_halo<4, float, 0>` | 1 | 30.00 | 30% |",
            "| `gemm_warp_tiled<float, false, false, 4>` | 2 | 40.00 | 40% |",
            "| `output_transform_rows<4, float>` | 1 | 30.00 | 30% |",
        ])
        self.assertIn("| total (8 launches over 2 passes) | 4 | 100.00 | 100% |", out)

    def test_names_of_every_anonymous_namespace_spelling(self):
        names = ["void unnamed>::gemm_tc_v4_async_pipeline<0, 0, 0, 1>(unnamed>::TcOperands)",
                 "void convkit::gpu_cuda::<unnamed>::weight_transform_staged<4, double>(const T2 *, long, T2 *)",
                 "convkit::gpu_cuda::direct_backward_data_narrow<float, true>(convkit::gpu_cuda::Args)"]
        lines = [HEADER] + [launch(i, n, "nsecond", "1000") for i, n in enumerate(names)]
        proc = run(lines, "--passes", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = [line.split(" | ")[0] for line in proc.stdout.splitlines() if line.startswith("| `")]
        self.assertEqual(rows, ["| `gemm_tc_v4_async_pipeline<0, 0, 0, 1>`", "| `weight_transform_staged<4, double>`",
                                "| `direct_backward_data_narrow<float, true>`"])

    def test_missing_header_names_the_file(self):
        proc = run(["==PROF== Connected", "no csv here"], "--passes", "1")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("raw.csv", proc.stderr)
        self.assertIn("Kernel Name", proc.stderr)

    def test_no_durations_is_an_error(self):
        proc = run([HEADER], "--passes", "1")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("no gpu__time_duration.sum values", proc.stderr)

    def test_unknown_unit_is_an_error(self):
        proc = run([HEADER, launch(0, GEMM, "cycle", "5")], "--passes", "1")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("unit 'cycle'", proc.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
