#!/usr/bin/env python3
"""benchmarks/accuracy_summary.py on canned logs: per-seed accuracies in seed
order, mean and min-max per model; an unfinished log is an error naming it.

usage: accuracy_summary_test.py ACCURACY_SUMMARY_PY
"""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def write_log(folder, name, accuracy):
    with open(os.path.join(folder, name), "w") as f:
        f.write("# commit: abc1234\nEpoch 1/5\n")
        if accuracy is not None:
            f.write(f"test: loss 0.2500 - accuracy {accuracy:.4f} (10000 images, 0.7 s, 14271 images/s)\n")


def run(folder):
    return subprocess.run([sys.executable, SCRIPT, folder], capture_output=True, text=True)


class AccuracySummary(unittest.TestCase):
    def test_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_log(tmp, "fmnist-cnn-seed2.txt", 0.9100)
            write_log(tmp, "fmnist-cnn-seed1.txt", 0.9134)
            write_log(tmp, "fmnist-cnn-seed3.txt", 0.9075)
            write_log(tmp, "fmnist-cnn-bn-seed1.txt", 0.9281)
            write_log(tmp, "notes.txt", None)  # not a run log: ignored
            proc = run(tmp)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            lines = proc.stdout.splitlines()
            self.assertIn("| `fmnist-cnn` | 1, 2, 3 | 91.34%, 91.00%, 90.75% | 91.03% | 90.75-91.34% |", lines)
            self.assertIn("| `fmnist-cnn-bn` | 1 | 92.81% | 92.81% | 92.81-92.81% |", lines)

    def test_unfinished_log_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_log(tmp, "fmnist-cnn-seed1.txt", 0.9134)
            write_log(tmp, "fmnist-cnn-seed2.txt", None)
            proc = run(tmp)
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("fmnist-cnn-seed2.txt", proc.stderr)

    def test_empty_folder_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = run(tmp)
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("no MODEL-seedS.txt logs", proc.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv[1]
    unittest.main(argv=sys.argv[:1])
