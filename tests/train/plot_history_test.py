#!/usr/bin/env python3
"""scripts/plot_history.py: two runs (one with validation, one without and
with a null loss) become one PNG; a malformed line is an error naming it."""
import os
import subprocess
import sys
import tempfile

script, data = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "curves.png")
    runs = [os.path.join(data, "two_runs_a.jsonl"), os.path.join(data, "two_runs_b.jsonl")]
    subprocess.run([sys.executable, script, *runs, "-o", out], check=True)
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert os.path.getsize(out) > 5000, os.path.getsize(out)

    bad = os.path.join(tmp, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"epoch": 1, "loss": 1}\n{"epoch": 2, "loss": \n')
    r = subprocess.run([sys.executable, script, bad, "-o", out], capture_output=True, text=True)
    assert r.returncode != 0 and f"{bad}:2: not JSON" in r.stderr, r.stderr
print("plot_history ok")
