"""Tests of docs/diagrams/generate.py: the committed SVGs match the sources,
and each of the generator's checks fails when what it guards is wrong.

Usage: python3 diagrams_test.py DOCS_DIAGRAMS_DIR
"""
import copy
import os
import shutil
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
DIR = sys.argv.pop(1) if len(sys.argv) > 1 else None
sys.path.insert(0, DIR)

import generate  # noqa: E402
import gemm_tiles  # noqa: E402
import im2col  # noqa: E402
import sources  # noqa: E402
import winograd  # noqa: E402


class Diagrams(unittest.TestCase):
    def test_committed_svgs_match_the_sources(self):
        self.assertEqual(generate.main(["--check"]), 0)

    def test_a_changed_svg_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in generate.DIAGRAMS:
                shutil.copy(os.path.join(DIR, name), tmp)
            self.assertEqual(generate.main(["--check", "--committed", tmp]), 0)
            with open(os.path.join(tmp, "fft_tiling.svg"), "a", encoding="utf-8") as f:
                f.write("<!-- edited by hand -->\n")
            self.assertEqual(generate.main(["--check", "--committed", tmp]), 1)
            os.remove(os.path.join(tmp, "im2col_unrolled.svg"))
            self.assertEqual(generate.main(["--check", "--committed", tmp]), 1)

    def test_winograd_check_refuses_a_wrong_matrix(self):
        mats = {m: winograd.gpu_matrices(m) for m in (2, 4)}
        winograd.check(mats, trials=2)
        for m, name, i, j in ((2, "g", 1, 1), (4, "bt", 0, 2), (4, "at", 3, 5)):
            wrong = copy.deepcopy(mats)
            wrong[m][name][i][j] += 1
            with self.assertRaises(AssertionError):
                winograd.check(wrong, trials=2)

    def test_winograd_reads_fractions(self):
        self.assertEqual(winograd.gpu_matrices(4)["g"][3], [winograd.Fraction(1, 24), winograd.Fraction(1, 12),
                                                           winograd.Fraction(1, 6)])
        text = "struct Matrices<2, T> {\n  T bt[4][4];\n};"
        with self.assertRaises(sources.SourceError):
            winograd.gpu_matrices(2, text)

    def test_im2col_check_refuses_a_wrong_index_rule(self):
        def swapped(x, **layer):  # taps (r, s) stored as (s, r): a plausible slip
            col = im2col.im2col(x, **layer)
            R = layer["R"]
            return [col[(i // (R * R)) * R * R + (i % R) * R + (i // R) % R] for i in range(len(col))]
        with self.assertRaises(AssertionError):
            im2col.check(swapped)
        im2col.check()

    def test_gemm_constants_fail_loudly_when_moved(self):
        text = sources.read(gemm_tiles.SOURCE).replace("kTileK = 8", "kDepth = 8")
        with self.assertRaises(sources.SourceError):
            gemm_tiles.constants("v3", text)
        c = gemm_tiles.constants()
        self.assertEqual((c["kTileM"], c["kTileN"], c["kTileK"], c["kThreadM"], c["kThreadN"]), (128, 128, 8, 8, 8))
        wrong = dict(c, kThreadM=4)
        with self.assertRaises(AssertionError):
            gemm_tiles.check(wrong)

    def test_a_missing_name_fails(self):
        with self.assertRaises(sources.SourceError):
            sources.require("src/ops/conv.cpp", "a function that is not there")
        with self.assertRaises(sources.SourceError):
            sources.read("src/no/such/file.cpp")


if __name__ == "__main__":
    unittest.main()
