#!/usr/bin/env python3
"""benchmarks/report.py on canned results (tests/bench/data/report): the
tables mark the right winners, unsupported cells carry their reason, the
sweep names its crossover, sim times never appear, and gnuplot draws the
plots. Nothing is timed.

usage: report_test.py REPORT_PY DATA_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPORT, DATA = None, None


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="report-test-")
        proc = subprocess.run([sys.executable, REPORT, os.path.join(DATA, "report"), cls.out, "--preset", "test",
                               "--note", "canned input"], capture_output=True, text=True)
        cls.proc = proc
        path = os.path.join(cls.out, "README.md")
        cls.text = open(path).read() if os.path.exists(path) else ""

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def line_of(self, start):
        for line in self.text.splitlines():
            if line.startswith(start):
                return line
        self.fail(f"no line starting with {start!r} in the report")

    def test_runs_cleanly(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def test_every_section_and_the_machine(self):
        for heading in ["## 1.", "## 2.", "## 3.", "## 4.", "## 5.", "## 6."]:
            self.assertIn(heading, self.text)
        self.assertIn("Intel(R) Xeon(R) Processor", self.text)
        self.assertIn("one run", self.text)
        self.assertIn("> canned input", self.text)
        self.assertNotIn("Busy machine", self.text)  # load 0.5 on 2 CPUs

    def test_winner_bold_and_heuristic_marked(self):
        row = self.line_of("| conv |")
        cells = [c.strip() for c in row.strip("|").split("|")]
        # layer, shape, then fwd: direct, im2col_gemm, fft
        self.assertEqual(cells[1], "N16 3→32 32×32 3×3 p1")
        self.assertEqual(cells[2], "10.0")
        self.assertEqual(cells[3], "**40.0·**")
        self.assertEqual(cells[4], "20.0")
        self.assertTrue(cells[-1].startswith("im2col_gemm"))

    def test_unsupported_cell_has_its_reason(self):
        row = self.line_of("| conv2 |")
        self.assertIn("— [1]", row)
        self.assertIn("1. unsupported: fft supports stride 1 only", self.text)

    def test_sweep_crossover(self):
        self.assertIn("forward: direct → fft between 3 and 5", self.text)
        self.assertIn("| 7 | N8 128→128 32×32 7×7 | fft (50.0) |", self.text)

    def test_sim_times_never_shown(self):
        self.assertNotIn("| sim", self.text)
        self.assertNotIn("0.001", self.text)
        self.assertIn("1 sim runs, 0 failed checks", self.text)

    def test_training_workers_and_profile(self):
        self.assertIn("| cifar10-cnn | cpu | 500 | 800 (700-850) | 1000 |", self.text)
        self.assertIn("cuda is not usable here", self.text)
        self.assertIn("| workers | loader images/s | training images/s |", self.text)
        self.assertIn("| 2 | 1700 | 450 |", self.text)
        # Conv2d: (10 + 20 + 30 + 50) ms over 2 steps, 110 / 129 of the time.
        self.assertIn("| Conv2d | 2 | 20.0 | 35.0 | 55.0 | 85.3% |", self.text)

    def test_layer_kernels(self):
        self.assertIn("| dense | 2304to512 | cpu | bwd | 1000 | 5.00 | 75.5 | 16 | 4 |", self.text)

    def test_plots_are_png(self):
        if shutil.which("gnuplot") is None:
            self.skipTest("gnuplot is not installed")
        for png in ["conv-tiny-cpu.png", "sweep-kernel-cpu.png", "train-images-per-sec.png", "workers.png",
                    "profile.png"]:
            path = os.path.join(self.out, png)
            self.assertTrue(os.path.exists(path), png)
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", png)
            self.assertIn(f"]({png})", self.text)

    def test_machine_slug(self):
        proc = subprocess.run([sys.executable, REPORT, "--machine-slug", os.path.join(DATA, "report")],
                              capture_output=True, text=True)
        self.assertEqual(proc.stdout.strip(), "intel-xeon-2t")


if __name__ == "__main__":
    REPORT, DATA = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
