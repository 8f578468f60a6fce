"""clients/vectors/config_hash.json is what the real 2.x SDK computes today: the vectors every SDK
in clients/ checks its config_hash against are regenerated here from queen-mq 2.6.0 and compared."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_vectors_match_the_real_sdk():
    out = subprocess.run([sys.executable, str(ROOT / "scripts/gen-config-hash-vectors.py")],
                         check=True, capture_output=True, text=True).stdout
    fresh = json.loads(out)
    stored = json.loads((ROOT / "clients/vectors/config_hash.json").read_text(encoding="utf-8"))
    assert fresh == stored
    assert len(stored["vectors"]) >= 9
    # the worked example of the 2.x wire reference
    assert stored["vectors"][0]["config_hash"] == "d5996a8234f7f9b8b6c9aabe1c2c2d3a1b37fd688933dfe3efe3aa9a01da8822"
