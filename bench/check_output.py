#!/usr/bin/env python3
"""Runs `proximity-bench SUITE --quick` and checks its output: every expected case is present with the
required fields, the answers agree with the peer's, and certified LINK misses no collision the dense
reference finds (discrete misses are only reported). For the convex suite, answers that differ from FCL's
beyond the tolerance go to an exact referee, which must never reject ours. For the planning suite (mbm):
the run finishes, every path we return passes the dense re-check (the peer's failures are only reported),
and the OMPL benchmark logs follow OMPL's log format. For the ik suite: every solution of ours meets its pose within the limits, and at least 96% of the
reachable poses are solved (KDL's figures are reported). For the pose suite: every path to a pose goal
and to its joint goal passes the dense re-check and ends at the pose. Times are printed, never asserted.
Exits 77 (skipped) when the suite's data is absent.

Usage: check_output.py BINARY SUITE [--generate N] [suite flags...]. Flags after the suite go to the suite
(--robot URDF --srdf SRDF --package NAME=DIR --group NAME --problems DIR); with --generate N, N problems
are first made for the --robot given (proximity-bench generate --seed 1) and the suite runs on them. The
per-family cases are then those of the problems' families. Exits 77 when a file or folder the flags name
is absent."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

MBM_FAMILIES = ("bookshelf_small", "bookshelf_tall", "bookshelf_thin", "box", "cage", "table_pick",
                "table_under_pick")

ROBOT_CASES = ["clear_start_goal", "clear_random", "distance_exact", "distance_rel_0.2", "link_certified",
               "link_certified_planning", "link_discrete", "ccd_edge", "distance_random"]


def robot_expected(families):
    return ROBOT_CASES + [f"{case}_{family}" for case in ("clear_start_goal", "clear_random") for family in families]


def mbm_expected(families):
    return [f"{side}_{group}" for group in tuple(families) + ("overall",) for side in ("ours", "peer")] + ["ratios"]


EXPECTED = {
    "envrob": ["collide", "distance_exact", "distance_rel_0.05", "distance_rel_0.20", "distance_rel_0.50",
               "distance_warm_motion"],
    "robot": robot_expected(MBM_FAMILIES),
    "service": ["clear_batch_packed", "check_state_unary", "validate_paths_stream"],
    "mbm": mbm_expected(MBM_FAMILIES),
}
CONVEX_SIZES = ("v8", "v250", "v940")
CONVEX_GJK_ROWS = [f"{family}_{size}" for size in CONVEX_SIZES
                   for family in ("distance_cold", "collide_cold", "distance_warm", "collide_warm")] + \
                  [f"primitive_{kind}_{pair}" for pair in ("box_box", "capsule_capsule", "sphere_box")
                   for kind in ("distance", "collide")]
EXPECTED["convex"] = CONVEX_GJK_ROWS
CONVEX_REQUIRED = ["family", "peer_indep_us", "ratio_indep", "agree_libccd", "agree_indep", "near_contact_libccd",
                   "near_contact_indep", "disagree_libccd", "disagree_indep", "libccd_off_exact", "indep_off_exact",
                   "exact_checks", "ours_off_exact", "ours_iterations", "ours_support_calls"]
MBM_REQUIRED = ["suite", "case", "side", "group", "planner", "n", "solved", "success_rate", "time_ms_median",
                "time_ms_p95", "plan_ms_median", "raw_length_median", "length_median", "state_checks_median",
                "motion_checks_median", "invalid_raw", "invalid_simplified", "raw_unchecked"]


def check_ompl_log(path, failures):
    """Reads one OMPL benchmark log the way ompl_benchmark_statistics.py does (OMPL 1.5 format) and
    returns {planner name: [run dicts]}; format errors are appended to failures."""
    name = os.path.basename(path)
    try:
        with open(path) as f:
            lines = f.read().split("\n")
        i = 0

        def take():
            nonlocal i
            i += 1
            return lines[i - 1]

        if not take().startswith("OMPL version "):
            failures.append(f"{name}: no version line")
        if not take().startswith("Experiment "):
            failures.append(f"{name}: no experiment line")
        for _ in range(int(take().split()[0])):  # experiment properties
            key, _ = take().split(" = ")
            if key.split()[-1] not in ("INTEGER", "REAL", "BOOLEAN", "STRING"):
                failures.append(f"{name}: experiment property without a type: {key}")
        if not take().startswith("Running on "):
            failures.append(f"{name}: no host line")
        if not take().startswith("Starting at "):
            failures.append(f"{name}: no date line")
        for _ in range(2):  # setup and cpu info
            if take() != "<<<|":
                failures.append(f"{name}: a multi-line value does not open with <<<|")
            while not take().startswith("|>>>"):
                pass
        for suffix in ("is the random seed", "seconds per run", "MB per run", "runs per planner",
                       "seconds spent to collect the data"):
            line = take()
            if not line.endswith(suffix):
                failures.append(f"{name}: expected '... {suffix}', got '{line}'")
            float(line.split()[0])
        enums = take()
        if enums.split()[-2] != "enum":
            failures.append(f"{name}: no enum count line")
        for _ in range(int(enums.split()[0])):
            take()
        planners = {}
        for _ in range(int(take().split()[0])):
            planner = take()
            for _ in range(int(take().split()[0])):  # common properties
                take()
            props = [take() for _ in range(int(take().split()[0]))]
            for p in props:
                if p.split()[-1] not in ("INTEGER", "REAL", "BOOLEAN", "ENUM"):
                    failures.append(f"{name}: {planner}: property without a type: {p}")
            runs = []
            for _ in range(int(take().split()[0])):
                fields = take().split("; ")
                if fields[-1] != "" or len(fields) - 1 != len(props):
                    failures.append(f"{name}: {planner}: a run has {len(fields) - 1} fields for "
                                    f"{len(props)} properties")
                    continue
                runs.append({p: (None if v in ("", "nan", "inf") else float(v)) for p, v in zip(props, fields)})
            if take() != ".":
                failures.append(f"{name}: {planner}: no closing '.'")
            planners[planner] = runs
        return planners
    except (ValueError, IndexError) as e:
        failures.append(f"{name}: malformed OMPL log ({e})")
        return {}


def check_mbm(cases, log_dir, families, failures):
    for name in mbm_expected(families)[:-1]:
        obj = cases.get(name)
        if obj is None:
            continue
        missing = [k for k in MBM_REQUIRED if k not in obj]
        if missing:
            failures.append(f"{name}: missing fields {missing}")
            continue
        def num(key, width=9):
            return f"{obj[key]:{width}.2f}" if obj[key] is not None else f"{'-':>{width}s}"

        print(f"{name:28s} solved {obj['solved']:3d}/{obj['n']:3d}  time median {num('time_ms_median')} ms  "
              f"p95 {num('time_ms_p95')} ms  length {num('raw_length_median', 6)} -> {num('length_median', 6)}"
              f"  invalid raw {obj['invalid_raw']:3d} simplified {obj['invalid_simplified']:3d}")
        if obj["side"] == "ours":
            # Our returned paths are the simplified ones, certified edge by edge; the raw candidates are
            # the search's, checked by the quick sampled check only, and reported for the record.
            if obj["invalid_simplified"] != 0:
                failures.append(f"{name}: {obj['invalid_simplified']} returned paths of ours fail the dense check")
            if obj.get("errors", 0) != 0:
                failures.append(f"{name}: {obj['errors']} planner errors")
    overall = cases.get("ours_overall", {})
    if overall.get("solved", 0) == 0:
        failures.append("ours_overall: no problem solved, so the dense check checked nothing")
    if overall.get("raw_unchecked", 0) != 0:
        print(f"note: {overall['raw_unchecked']} of our raw paths could not be re-derived for the dense check")
    for side in ("ours", "peer"):
        obj = cases.get(f"{side}_overall", {})
        if obj.get("collisions_free_by_core"):
            print(f"note: {side}: {obj['collisions_free_by_core']} colliding states of the dense check are free by "
                  f"our CLEAR ({obj.get('collisions_confirmed_by_core')} confirmed)")
    if "ratios" in cases:
        r = cases["ratios"]
        print(f"ratios (peer / ours): time median {r.get('time_ratio')}, plan {r.get('plan_time_ratio')}, "
              f"length {r.get('length_ratio')}")
    # The OMPL logs: one per family, both planners, one run per problem, solved runs agree with the JSON.
    solved = {"ours": 0, "peer": 0}
    robot = cases.get("ours_overall", {}).get("robot", "")
    for family in families:
        label = "".join(c if c.isalnum() or c in "_.-" else "_" for c in robot)
        path = os.path.join(log_dir, f"mbm_{label}_{family}.log")
        if not os.path.exists(path):
            failures.append(f"missing OMPL log {path}")
            continue
        planners = check_ompl_log(path, failures)
        for side, planner in (("ours", "ours RRTConnect certified"), ("peer", "OMPL RRTConnect + FCL")):
            runs = planners.get(planner)
            if runs is None:
                failures.append(f"{os.path.basename(path)}: no planner '{planner}'")
                continue
            if len(runs) != cases.get(f"{side}_{family}", {}).get("n"):
                failures.append(f"{os.path.basename(path)}: {planner}: {len(runs)} runs")
            solved[side] += sum(1 for run in runs if run.get("solved BOOLEAN") == 1.0)
    for side in ("ours", "peer"):
        if solved[side] != cases.get(f"{side}_overall", {}).get("solved"):
            failures.append(f"the OMPL logs hold {solved[side]} solved runs for {side}, the JSON "
                            f"{cases.get(f'{side}_overall', {}).get('solved')}")
REQUIRED = ["suite", "case", "n", "ours_us", "peer", "peer_us", "ratio", "ours_bv_tests", "ours_triangle_tests"]


def check_convex(cases, failures):
    """The convex suite: our answers (GJK, ISA-GJK, V-Clip) must never be rejected by the exact referee
    (ours_off_exact; the peer's own errors beyond the tolerance are only reported), GJK must converge, and
    the signed distance maps must keep their certified bounds. V-Clip and signed-distance rows appear
    when those headers exist; when one row of a family is there, all must be."""
    for name in CONVEX_GJK_ROWS + [n for n, o in cases.items() if o.get("family") == "vclip_warm"]:
        obj = cases.get(name)
        if obj is None:
            continue
        missing = [k for k in CONVEX_REQUIRED if k not in obj and not (k.startswith("ours_") and
                                                                       obj.get("family") == "vclip_warm")]
        if missing:
            failures.append(f"{name}: missing fields {missing}")
            continue
        if obj["ours_off_exact"] != 0:
            failures.append(f"{name}: {obj['ours_off_exact']} of our answers differ from the exact referee "
                            f"({obj['exact_checks']} checked)")
        if obj.get("not_converged", 0) != 0:
            failures.append(f"{name}: GJK did not converge on {obj['not_converged']} queries")
        n = obj["n"]
        for peer in ("libccd", "indep"):
            if obj[f"agree_{peer}"] + obj[f"near_contact_{peer}"] + obj[f"disagree_{peer}"] != n:
                failures.append(f"{name}: the {peer} tallies do not add up to {n}")
            # A disagreement beyond the tolerance that the referee does not blame on the peer is ours
            # (and ours_off_exact counts it); this keeps the two counts consistent.
            if obj[f"disagree_{peer}"] > obj[f"{peer}_off_exact"] + obj["ours_off_exact"]:
                failures.append(f"{name}: {obj[f'disagree_{peer}']} disagreements with {peer} beyond the tolerance, "
                                f"{obj[f'{peer}_off_exact']} of them the peer's error")
        print(f"  {name:34s} disagree beyond tolerance: libccd {obj['disagree_libccd']}/{n} (peer off exact "
              f"{obj['libccd_off_exact']}), indep {obj['disagree_indep']}/{n} (peer off exact "
              f"{obj['indep_off_exact']}); near contact {obj['near_contact_libccd']}/{obj['near_contact_indep']}; "
              f"ours off exact {obj['ours_off_exact']}")
    vclip = [f"vclip_warm_{size}" for size in CONVEX_SIZES]
    if any(name in cases for name in vclip):
        for name in vclip:
            if name not in cases:
                failures.append(f"missing case {name}")
            elif cases[name].get("fell_back_to_gjk"):
                print(f"note: {name}: V-Clip fell back to GJK on {cases[name]['fell_back_to_gjk']} queries")
    sdf = [name for name, obj in cases.items() if str(obj.get("family", "")).startswith("sdf")]
    if sdf:
        for name in ("sdf_build_N32", "sdf_contact_N32"):
            if name not in cases:
                failures.append(f"missing case {name}")
    for name in sdf:
        obj = cases[name]
        if obj.get("bound_violations", 0) != 0:
            failures.append(f"{name}: {obj['bound_violations']} contacts deeper than the certified bound allows")
        if obj.get("errors", 0) != 0 or obj.get("build_errors"):
            failures.append(f"{name}: errors {obj.get('errors', 0)} {obj.get('build_errors', '')}")
        if obj.get("family") == "sdf_contact":
            print(f"  {name:34s} colliding exact {obj['colliding_exact']}, sdf {obj['colliding_sdf']}, missed by the "
                  f"map {obj['missed_by_sdf']}; exact distance {obj['exact_distance_us']:.2f} us")
    for size in CONVEX_SIZES:
        cold, warm = cases.get(f"distance_cold_{size}"), cases.get(f"distance_warm_{size}")
        if cold and warm:
            print(f"headline {size}: cold distance {cold['ours_us']:.3f} us, {cold['ratio']:.2f}x FCL libccd "
                  f"({cold['ratio_indep']:.2f}x indep); warm {warm['ours_us']:.3f} us median per step "
                  f"({warm['ours_batch_mean_us']:.3f} us mean, whole motions)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("suite")
    parser.add_argument("--generate", type=int, default=0, help="first generate N problems for --robot")
    args, suite_flags = parser.parse_known_args()
    for path in absent_inputs(suite_flags):
        print(f"skipped: {path} is absent; this check needs it")
        return 77
    with tempfile.TemporaryDirectory(prefix="proximity-bench-check-") as tmp:
        if args.generate:
            problems = os.path.join(tmp, "problems")
            robot_flags = [f for i, f in enumerate(suite_flags) if f != "--problems" and
                           (i == 0 or suite_flags[i - 1] != "--problems")]
            command = [args.binary, "generate", *robot_flags, "--count", str(args.generate), "--seed", "1",
                       "--out", problems]
            proc = subprocess.run(command, capture_output=True, text=True)
            print(proc.stderr.strip())
            if proc.returncode != 0:
                print("FAIL:", " ".join(command), "exited with", proc.returncode)
                return 1
            suite_flags = suite_flags + ["--problems", problems]
        return run_and_check(args.binary, args.suite, suite_flags, tmp)


def absent_inputs(flags):
    """The files and folders the suite flags name that do not exist."""
    absent = []
    for i, flag in enumerate(flags[:-1]):
        value = flags[i + 1]
        if flag in ("--robot", "--srdf", "--problems") and not os.path.exists(value):
            absent.append(value)
        if flag == "--package" and "=" in value and not os.path.exists(value.split("=", 1)[1]):
            absent.append(value.split("=", 1)[1])
    return absent


def check_ik_pose(suite, cases, failures):
    """The ik suite's robots and the pose suite's families: answers right, success rates reported."""
    if not cases:
        failures.append("no case printed")
    for name, obj in cases.items():
        if suite == "ik":
            print(f"{name}: ours {obj['ours_success']:.1%} solved, KDL {obj['peer_success']:.1%}; "
                  f"{obj['ours_wrong']} of ours and {obj['peer_wrong']} of KDL's miss the pose")
            if obj["ours_wrong"] != 0:
                failures.append(f"{name}: {obj['ours_wrong']} of our solutions miss the pose or the limits")
            if obj["ours_success"] < 0.96:
                failures.append(f"{name}: only {obj['ours_success']:.1%} of reachable poses solved")
        else:
            print(f"{name}: pose / joint goal median {obj['pose_over_joint_median']:.2f}, solved "
                  f"{obj['pose_solved']} and {obj['joint_solved']} of {obj['problems']}")
            if obj["invalid_paths"] != 0:
                failures.append(f"{name}: {obj['invalid_paths']} invalid paths")
            if obj["pose_solved"] < obj["joint_solved"] - 1:
                failures.append(f"{name}: pose goals solved {obj['pose_solved']}, joint goals {obj['joint_solved']}")
    if suite == "pose" and "pose_goal_all" not in cases:
        failures.append("missing case pose_goal_all")


def families_of(cases, prefix):
    """The families of the per-family cases named prefix + family."""
    return sorted(name[len(prefix):] for name in cases if name.startswith(prefix))


def run_and_check(binary, suite, suite_flags, tmp):
    command = [binary, suite, "--quick", *suite_flags]
    if suite == "mbm":
        command += ["--ompl-log", tmp]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        if "needs ../shared/data" in proc.stderr:
            print(proc.stderr.strip())
            return 77
        print(proc.stdout, proc.stderr)
        return 1
    cases = {}
    for line in proc.stdout.splitlines():
        obj = json.loads(line)
        cases[obj["case"]] = obj
        if obj["case"] == "load":
            print(f"load: {obj['robot_triangles']} robot triangles, robot and {obj['scenes']} scenes in "
                  f"{obj['robot_and_scenes_load_s']:.3f} s, {obj['rss_mb']:.1f} MiB resident")
        elif suite != "mbm":
            print(f"{obj['case']:34s} ours {obj['ours_us']:9.2f} us  peer {obj['peer_us']:9.2f} us  "
                  f"ratio {obj['ratio']:.2f}")
    failures = []
    custom = "--problems" in suite_flags
    if suite == "mbm":
        families = [c["group"] for c in cases.values() if c.get("side") == "ours" and c.get("group") != "overall"]
        if not custom:
            families = list(MBM_FAMILIES)
        if not families:
            failures.append("no per-family lines")
        missing = [name for name in mbm_expected(families) if name not in cases]
        failures += [f"missing case {name}" for name in missing]
        check_mbm(cases, tmp, families, failures)
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    if suite in ("ik", "pose"):
        check_ik_pose(suite, cases, failures)
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    expected = EXPECTED[suite]
    if suite == "robot" and custom:
        families = families_of(cases, "clear_start_goal_")
        print(f"families: {', '.join(families)}")
        if not families:
            failures.append("no per-family lines")
        if families_of(cases, "clear_random_") != families:
            failures.append(f"the clear_random families {families_of(cases, 'clear_random_')} differ from the "
                            f"clear_start_goal ones {families}")
        expected = robot_expected(families)
        load = cases.get("load")
        if load is None:
            failures.append("missing case load")
        elif not (load["robot_triangles"] >= 0 and load["rss_mb"] > 0 and load["robot_and_scenes_load_s"] > 0):
            failures.append(f"load: implausible figures {load}")
    for name in expected:
        if name not in cases:
            failures.append(f"missing case {name}")
            continue
        missing = [k for k in REQUIRED if k not in cases[name]]
        if missing:
            failures.append(f"{name}: missing fields {missing}")
    for name, obj in cases.items():
        # Session cases count answers per query (several a timed round), the others per timed item.
        expected = obj["queries"] if "queries" in obj else obj.get("n")
        if "agree" in obj and obj["agree"] != expected:
            failures.append(f"{name}: answers agree with the peer on {obj['agree']} of {expected}")
        # Plans compared where no side met the time limit (remote_plan_mbm): their paths must be equal.
        if "paths_agree" in obj and obj["paths_agree"] != obj["paths_compared"]:
            failures.append(f"{name}: paths agree with the peer on {obj['paths_agree']} of {obj['paths_compared']}")
    if suite == "convex":
        check_convex(cases, failures)
    if suite == "envrob" and not cases.get("distance_exact", {}).get("max_rel_diff_vs_peer", 1.0) < 1e-9:
        failures.append(f"distance_exact differs from the peer by {cases['distance_exact']['max_rel_diff_vs_peer']}")
    for name, obj in cases.items():
        # Our lower bound above the peer's distance would claim clearance the geometry lacks: a failure.
        # The peer's distance above our upper bound is reported: our upper bound is the distance between
        # the witness points we return on the two geometries, so the truth is at most that, and the
        # peer's GJK on curved primitives stops within its own tolerance (micrometres).
        below = obj.get("peer_below_lower", obj.get("peer_outside_interval", 0))
        if below != 0:
            failures.append(f"{name}: the peer's distance lies below our certified lower bound on {below} states")
        if obj.get("peer_above_upper", 0):
            print(f"{name}: the peer's distance exceeds our upper bound on {obj['peer_above_upper']} states "
                  f"(by at most {obj.get('peer_outside_max_m', 0):.3g} m where reported)")
        if obj.get("certified_colliding_without_contact", 0) != 0:
            failures.append(f"{name}: {obj['certified_colliding_without_contact']} edges collide (certified LINK) "
                            "without a first contact")
        if obj.get("budget_violations", 0) != 0:
            failures.append(f"{name}: {obj['budget_violations']} budget violations")
        if not 0.0 <= obj.get("ours_convex_warm_share", 0.0) <= 1.0:
            failures.append(f"{name}: convex warm share {obj['ours_convex_warm_share']} outside [0, 1]")
    # LINK: an edge certified free that the dense reference finds colliding is a failure; the sampled
    # (discrete) methods may miss collisions between their states, which is only reported.
    if "link_certified" in cases:
        obj = cases["link_certified"]
        if obj.get("misses_certified") != 0:
            failures.append(f"link_certified: {obj.get('misses_certified')} edges certified free collide in the dense "
                            f"reference (of {obj.get('colliding_dense')} colliding)")
        print(f"LINK: {obj['n']} edges, {obj.get('colliding_dense')} colliding (dense); misses certified "
              f"{obj.get('misses_certified')}, ours discrete {obj.get('misses_ours_discrete')}, peer discrete "
              f"{obj.get('misses_peer_discrete')}; undecided {obj.get('undecided')}")
    if "link_certified_planning" in cases:
        obj = cases["link_certified_planning"]
        if obj.get("misses_planning") != 0 or obj.get("disagree_with_certified") != 0:
            failures.append(f"link_certified_planning: {obj.get('misses_planning')} misses, "
                            f"{obj.get('disagree_with_certified')} answers unlike link_certified's")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
