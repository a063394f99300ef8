"""A short soak (soak.py): eight concurrent clients against one real proximityd for about half a minute,
mixing CheckStates batches, certified CheckMotion, CheckPath, ValidatePaths streams, UpdateWorld and
CreateScene / DeleteScene on the default scene and scenes of their own. Every answer must equal the
single-threaded reference, no call may fail, the daemon's RSS must stay flat after warm-up (soak.py's
criterion), it must hold no scene the clients made, and SIGTERM must stop it with exit code 0.

The daemon runs with MALLOC_ARENA_MAX=2: under glibc's default arenas its RSS climbs for a minute or two
before levelling off, which a half-minute run cannot tell from a leak (see soak.py). The long run
(`soak.py --seconds 600`, default allocator) is the same code; its result is in bench/results/.
"""
from __future__ import annotations

import os
from pathlib import Path

import soak

#: Length of the concurrent phase; the whole test takes about 8 s more (reference phase, start, stop).
SECONDS = float(os.environ.get("PROXIMITY_SOAK_SECONDS", "32"))


def test_soak_short(tmp_path: Path) -> None:
    report = soak.run(SECONDS, clients=8, out=tmp_path / "soak.json", malloc_arena_max=2)
    print(soak.summary(report))
    assert report["reference_vs_in_process"]["state_mismatches"] == 0
    assert report["reference_vs_in_process"]["motion_mismatches"] == 0
    assert report["errors"] == 0, report["error_samples"]
    assert report["mismatches"] == 0, report["mismatch_samples"]
    assert all(report["calls"][k]["calls"] > 0 for k in soak.KINDS), report["calls"]
    assert len(report["per_client_calls"]) == 8 and min(report["per_client_calls"]) > 0
    assert report["rss"]["ok"], report["rss"]
    assert report["scenes_left"] == 1  # the default scene alone
    assert report["server_failed_calls"] == {}
    assert report["sigterm_exit_code"] == 0
    assert report["passed"], report["failures"]
