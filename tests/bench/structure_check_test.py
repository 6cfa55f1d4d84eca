#!/usr/bin/env python3
"""benchmarks/structure_check.py's comparison, without PyTorch: convkit's own
`summary --json` rows against copies of themselves with one deliberate
difference each (a padding, a pool stride, a dropout rate, a missing layer,
a BatchNorm momentum, a parameter count). Each must be reported, naming the
layer and the field; an unchanged copy must match. Also checks that the
--json rows carry what the comparison relies on (resolved 'same' padding,
a pool's stride defaulting to its kernel).

usage: structure_check_test.py STRUCTURE_CHECK_PY CONVKIT
"""
import copy
import importlib.util
import json
import subprocess
import sys
import unittest

CHECK, CONVKIT = None, None


def load_check():
    spec = importlib.util.spec_from_file_location("structure_check", CHECK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def summary(model):
    out = subprocess.run([CONVKIT, "summary", model, "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


class StructureCheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.check = load_check()
        cls.cifar = summary("cifar10-cnn")
        cls.cifar_bn = summary("cifar10-cnn-bn")

    def row(self, structure, type_name, nth=0):
        return [r for r in structure["layers"] if r["type"] == type_name][nth]

    def differs(self, changed, *words):
        problems = self.check.compare(self.cifar, changed)
        self.assertTrue(problems, "a changed network compared equal")
        text = "\n".join(problems)
        for w in words:
            self.assertIn(w, text)
        return problems

    def test_json_rows_resolve_padding_and_pool_stride(self):
        same, valid = self.row(self.cifar, "Conv2d", 0), self.row(self.cifar, "Conv2d", 1)
        self.assertEqual(same["padding"], [1, 1, 1, 1])
        self.assertEqual(valid["padding"], [0, 0, 0, 0])
        self.assertEqual(valid["input_shape"], [-1, 32, 32, 32])
        self.assertEqual(valid["output_shape"], [-1, 32, 30, 30])
        pool = self.row(self.cifar, "MaxPool2d")
        self.assertEqual((pool["kernel_size"], pool["stride"], pool["padding"]), ([2, 2], [2, 2], [0, 0]))
        self.assertEqual([r["p"] for r in self.cifar["layers"] if r["type"] == "Dropout"], [0.25, 0.25, 0.5])
        bn = self.row(self.cifar_bn, "BatchNorm1d")
        self.assertEqual((bn["num_features"], bn["eps"], bn["momentum"]), (512, 1e-3, 0.01))
        self.assertEqual(self.cifar_bn["non_trainable"], 1408)

    def test_identical_structures_match(self):
        self.assertEqual(self.check.compare(self.cifar, copy.deepcopy(self.cifar)), [])
        renamed = copy.deepcopy(self.cifar)
        for i, r in enumerate(renamed["layers"]):
            r["name"] = f"features.{i}"  # names differ between libraries and are not compared
        self.assertEqual(self.check.compare(self.cifar, renamed), [])

    def test_a_padding_difference_with_equal_parameters_is_reported(self):
        other = copy.deepcopy(self.cifar)
        self.row(other, "Conv2d", 1)["padding"] = [1, 1, 1, 1]
        problems = self.differs(other, "layer 2", "padding", "[0, 0, 0, 0] against [1, 1, 1, 1]")
        self.assertEqual(len(problems), 1)

    def test_pool_stride_dropout_rate_and_momentum(self):
        other = copy.deepcopy(self.cifar)
        self.row(other, "MaxPool2d")["stride"] = [1, 1]
        self.row(other, "Dropout", 2)["p"] = 0.4
        self.differs(other, "stride [2, 2] against [1, 1]", "p 0.5 against 0.4")
        bn = copy.deepcopy(self.cifar_bn)
        self.row(bn, "BatchNorm2d", 3)["momentum"] = 0.1
        problems = self.check.compare(self.cifar_bn, bn)
        self.assertEqual(len(problems), 1)
        self.assertIn("momentum 0.01 against 0.1", problems[0])

    def test_a_missing_layer_is_reported_once(self):
        other = copy.deepcopy(self.cifar)
        del other["layers"][5]  # the first Dropout
        problems = self.differs(other, "convkit has 17 layers, pytorch 16", "layer 5", "type 'Dropout' against 'Conv2d'")
        self.assertEqual(len(problems), 2, problems)

    def test_an_option_only_one_side_has(self):
        other = copy.deepcopy(self.cifar)
        self.row(other, "MaxPool2d")["dilation"] = [2, 2]
        self.differs(other, "dilation is missing on the convkit side")

    def test_parameter_counts(self):
        other = copy.deepcopy(self.cifar)
        self.row(other, "Linear")["trainable"] += 1
        other["trainable"] += 1
        self.differs(other, "trainable 1180160 against 1180161", "whole model: trainable parameters")

    def test_a_batchnorm_network_is_not_the_plain_one(self):
        self.assertTrue(self.check.compare(self.cifar, self.cifar_bn))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    CHECK, CONVKIT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
