#!/usr/bin/env python3
"""scripts/scaling_model.py: the ring cost, the FLOP count of a summary, the
bucket overlap, and the committed doc's tables agreeing with its inputs.

usage: scaling_model_test.py SCALING_MODEL_PY
"""
import importlib.util
import subprocess
import sys
import unittest

SCRIPT = None
sm = None


class ScalingModel(unittest.TestCase):
    def test_ring_allreduce(self):
        # 2 (N-1)/N x bytes / bandwidth + 2 (N-1) x latency
        self.assertAlmostEqual(sm.ring_allreduce(1e9, 2, 1e9, 1e-6), 1.0 + 2e-6)
        self.assertAlmostEqual(sm.ring_allreduce(1e9, 4, 1e9, 1e-6), 1.5 + 6e-6)
        self.assertEqual(sm.ring_allreduce(1e9, 1, 1e9, 1e-6), 0.0)

    def test_forward_flops_of_fmnist_cnn(self):
        # conv 1->32 3x3 at 28x28, conv 32->64 3x3 at 14x14, dense 3136->128, dense 128->10
        summary = {"layers": [
            {"type": "Conv2d", "in_channels": 1, "out_channels": 32, "groups": 1, "kernel_size": [3, 3],
             "output_shape": [-1, 32, 28, 28], "trainable": 320},
            {"type": "MaxPool2d", "output_shape": [-1, 32, 14, 14], "trainable": 0},
            {"type": "Conv2d", "in_channels": 32, "out_channels": 64, "groups": 1, "kernel_size": [3, 3],
             "output_shape": [-1, 64, 14, 14], "trainable": 18496},
            {"type": "Linear", "in_features": 3136, "out_features": 128, "output_shape": [-1, 128],
             "trainable": 401536},
            {"type": "Linear", "in_features": 128, "out_features": 10, "output_shape": [-1, 10],
             "trainable": 1290},
        ]}
        macs = 32 * 9 * 784 + 64 * 288 * 196 + 3136 * 128 + 128 * 10
        self.assertEqual(sm.forward_flops(summary), 2 * macs)
        committed = sm.load_summaries(sm.SUMMARIES)["fmnist-cnn"]
        self.assertEqual(sm.forward_flops(committed), 2 * macs)

    def test_buckets(self):
        cap = sm.BUCKET_BYTES
        self.assertEqual(sm.buckets(10), [10])
        self.assertEqual(sm.buckets(2 * cap + 5), [cap, cap, 5])
        self.assertEqual(sm.buckets(cap), [cap])

    def test_overlap(self):
        link = (50e9, 2e-6)
        # One bucket: ready only when backward ends, so nothing is hidden.
        plain, overlapped = sm.predict(0.010, 4_000_000, 8, *link)
        self.assertAlmostEqual(plain, overlapped)
        self.assertAlmostEqual(plain, 0.010 + sm.ring_allreduce(4_000_000, 8, *link))
        # Ten buckets: all but the last hide behind a long backward.
        nbytes = 10 * sm.BUCKET_BYTES
        plain, overlapped = sm.predict(1.0, nbytes, 8, *link)
        last = sm.ring_allreduce(sm.BUCKET_BYTES, 8, *link)
        self.assertAlmostEqual(overlapped, 1.0 + last)
        self.assertAlmostEqual(plain, 1.0 + 10 * last)
        # A backward too short to hide them: the buckets queue up.
        plain, overlapped = sm.predict(1e-3, nbytes, 8, *link)
        self.assertGreater(overlapped, 10 * last)
        self.assertLess(overlapped, plain)

    def test_the_doc_matches_its_inputs(self):
        proc = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    spec = importlib.util.spec_from_file_location("scaling_model", SCRIPT)
    sm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sm)
    unittest.main()
