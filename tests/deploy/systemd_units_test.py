#!/usr/bin/env python3
"""The systemd units of ops/systemd/: checked by systemd, and their command lines run for real.

systemd is not PID 1 where the tests run (a container, CI), so nothing here starts a unit; the
checks are the ones systemd's own tools make offline, plus the units' ExecStart= lines run:

  1. `systemd-analyze verify` passes each unit, on a copy whose ExecStart= names the built
     binaries instead of /usr/local/bin (verify checks that the binary exists). verify exits 0
     on an unknown key or a bad value and only prints a warning, so any output fails the test;
     a unit with a typo planted on purpose must draw such a warning (so the check can fail).
  2. `systemd-analyze security --offline=yes` rates each unit no more exposed than today
     (coordinator 1.2, worker 1.9 out of 10): dropping a hardening option fails the test; and
     the worker unit sets nothing that makes a device allow-list (a GPU would vanish).
  3. The ExecStart= lines, expanded as systemd would (specifiers %S %C %d %i, ${VAR} as one
     word, $VAR split on spaces, from Environment= and a settings file like the documented one),
     run the smoke plan over CURVE with keys made by `accelmatrix keys`: the coordinator exits 0
     and every job passes.

Exit 77 (skipped) without systemd-analyze. Standard library only.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
UNITS = ["accelmatrix-coordinator.service", "accelmatrix-worker@.service"]
# systemd-analyze security --threshold is in tenths of the 0-10 exposure scale.
EXPOSURE_THRESHOLD = {"accelmatrix-coordinator.service": 12, "accelmatrix-worker@.service": 19}
# A GPU worker must see every device: any of these sets a device allow-list (ProtectClock=
# implies DeviceAllow=char-rtc r, and one DeviceAllow= closes all other devices).
WORKER_DEVICE_LISTS = ("PrivateDevices", "DevicePolicy", "DeviceAllow", "ProtectClock")
TYPOS = [("NoNewPrivileges=yes", "NoNewPrivilegs=yes"), ("ProtectSystem=strict", "ProtectSystem=strikt")]


def log(msg):
    print(f"[systemd-test] {msg}", flush=True)


def copy_units(src_dir, dst_dir, build_dir, edit=None):
    os.makedirs(dst_dir, exist_ok=True)
    paths = []
    for unit in UNITS:
        with open(os.path.join(src_dir, unit)) as f:
            text = f.read().replace("/usr/local/bin/", build_dir.rstrip("/") + "/")
        if edit is not None:
            text = edit(unit, text)
        path = os.path.join(dst_dir, unit)
        with open(path, "w") as f:
            f.write(text)
        paths.append(path)
    return paths


def verify(path):
    r = subprocess.run(["systemd-analyze", "verify", "--no-pager", path],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, (r.stdout + r.stderr).strip()


def parse_unit(path):
    """[Service] settings as (key, value) pairs in order, continuation lines joined."""
    pairs, section, pending = [], None, ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if pending:
                line, pending = pending + " " + line.strip(), ""
            if line.endswith("\\"):
                pending = line[:-1].rstrip()
                continue
            s = line.strip()
            if not s or s[0] in "#;":
                continue
            if s.startswith("["):
                section = s
                continue
            if section == "[Service]" and "=" in s:
                key, value = s.split("=", 1)
                pairs.append((key.strip(), value.strip()))
    return pairs


def specifiers_in(text, specifiers):
    return re.sub(r"%(.)", lambda m: "%" if m.group(1) == "%" else specifiers[m.group(1)], text)


def expand(command, specifiers, env):
    """systemd's ExecStart= expansion for what the units use: specifiers, then ${VAR} (one
    word) and $VAR (split on whitespace), word by word."""
    command = specifiers_in(command, specifiers)
    argv = []
    for word in shlex.split(command):
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            argv += env.get(m.group(1), "").split()
        else:
            argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda v: env.get(v.group(1), ""), word))
    return argv


def service_env(pairs, env_file_values, specifiers):
    env = {}
    for key, value in pairs:
        if key == "Environment":  # specifiers are expanded here too
            for word in shlex.split(specifiers_in(value, specifiers)):
                k, v = word.split("=", 1)
                env[k] = v
    env.update(env_file_values)  # EnvironmentFile= wins over Environment=
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    args = ap.parse_args()
    source, build = os.path.abspath(args.source_dir), os.path.abspath(args.build_dir)
    units_dir = os.path.join(source, "ops", "systemd")
    if shutil.which("systemd-analyze") is None:
        print("SKIP: systemd-analyze not installed (Debian: systemd)")
        return SKIP

    failures = []
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="accelmatrix-systemd-")
    try:
        # 1. verify: clean units say nothing; each planted typo is reported.
        for path in copy_units(units_dir, os.path.join(tmp, "ok"), build):
            rc, out = verify(path)
            log(f"systemd-analyze verify {os.path.basename(path)}: exit {rc}, {len(out)} bytes of output")
            if rc != 0 or out:
                failures.append(f"verify {os.path.basename(path)}: exit {rc}:\n{out}")
        for good, bad in TYPOS:
            def plant(unit, text, good=good, bad=bad):
                if good not in text:
                    failures.append(f"{unit} has no '{good}' line to plant a typo in")
                return text.replace(good, bad, 1)
            for path in copy_units(units_dir, os.path.join(tmp, "typo"), build, plant):
                rc, out = verify(path)
                if rc == 0 and not out:
                    failures.append(f"verify passed {os.path.basename(path)} with '{bad.strip()}' planted in it")
                else:
                    log(f"planted '{bad.splitlines()[0]}' in {os.path.basename(path)}: verify says: "
                        f"{out.splitlines()[-1] if out else f'exit {rc}'}")

        # The worker keeps every device (/dev/dri, /dev/nvidia*, /dev/kfd, /dev/accel).
        for key, value in parse_unit(os.path.join(units_dir, UNITS[1])):
            if key in WORKER_DEVICE_LISTS and value.lower() not in ("no", "false", "0", "auto", ""):
                failures.append(f"{UNITS[1]}: {key}={value} would hide the GPUs from the worker")

        # 2. security: no more exposed than the hardening in the units today.
        for path in copy_units(units_dir, os.path.join(tmp, "ok"), build):
            unit = os.path.basename(path)
            r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager",
                                f"--threshold={EXPOSURE_THRESHOLD[unit]}", path],
                               capture_output=True, text=True, timeout=60)
            overall = [ln for ln in r.stdout.splitlines() if "Overall exposure" in ln]
            log(f"{overall[0].lstrip('→ ') if overall else unit + ': no rating'} "
                f"(threshold {EXPOSURE_THRESHOLD[unit] / 10:.1f})")
            if r.returncode != 0:
                failures.append(f"security {unit}: exit {r.returncode}, above {EXPOSURE_THRESHOLD[unit] / 10:.1f}: "
                                f"{overall} {r.stderr.strip()}")

        # 3. The ExecStart= lines, expanded, run the smoke plan over CURVE.
        accelmatrix = os.path.join(build, "accelmatrix")
        keys = os.path.join(tmp, "etc", "keys")
        os.makedirs(os.path.join(keys, "workers"))
        for name in ("coordinator", "worker"):
            subprocess.run([accelmatrix, "keys", name, "--out", keys], check=True, capture_output=True)
        shutil.copy(os.path.join(keys, "worker.pub"), os.path.join(keys, "workers", "worker.pub"))
        state, cache = os.path.join(tmp, "var", "lib"), os.path.join(tmp, "var", "cache")
        creds = {}
        for unit, path in zip(UNITS, copy_units(units_dir, os.path.join(tmp, "ok"), build)):
            pairs = parse_unit(path)
            cred_dir = os.path.join(tmp, "credentials", unit)
            os.makedirs(cred_dir)
            for key, value in pairs:  # LoadCredential=NAME:/etc/accelmatrix/keys/FILE
                if key == "LoadCredential":
                    name, src = value.split(":", 1)
                    shutil.copy(src.replace("/etc/accelmatrix/keys", keys), os.path.join(cred_dir, name))
                if key in ("StateDirectory", "CacheDirectory"):
                    os.makedirs(os.path.join(state if key == "StateDirectory" else cache,
                                             value.replace("%i", "lab")), exist_ok=True)
            creds[unit] = (pairs, cred_dir)

        def command(unit, env_file_values):
            pairs, cred_dir = creds[unit]
            specifiers = {"S": state, "C": cache, "d": cred_dir, "i": "lab"}
            env = service_env(pairs, env_file_values, specifiers)
            starts = [v for k, v in pairs if k == "ExecStart"]
            argv = expand(starts[0], specifiers, env)
            argv = [a.replace("/etc/accelmatrix/keys", keys) for a in argv]
            return argv, {**os.environ, **{k: v.replace("/etc/accelmatrix/keys", keys) for k, v in env.items()}}

        endpoint_file = os.path.join(tmp, "endpoint")
        smoke = os.path.join(source, "jobs", "plans", "smoke.toml")
        c_argv, c_env = command(UNITS[0], {
            "ACCELMATRIX_PLAN": smoke, "ACCELMATRIX_BIND": "tcp://127.0.0.1:*",
            "ACCELMATRIX_SERVE_ARGS": f"--exit-when-done --endpoint-file {endpoint_file}"})
        c_env["ACCELMATRIX_CATALOG"] = os.path.join(source, "jobs", "models")  # not installed here
        log("coordinator: " + shlex.join(c_argv))
        coordinator = subprocess.Popen(c_argv, env=c_env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        worker = None
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(endpoint_file) and coordinator.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            with open(endpoint_file) as f:
                endpoint = f.read().strip()
            w_argv, w_env = command(UNITS[1], {"ACCELMATRIX_COORDINATOR": endpoint,
                                               "ACCELMATRIX_WORKER_ARGS": "--slots 1 --log-level warn"})
            log("worker: " + shlex.join(w_argv))
            worker = subprocess.Popen(w_argv, env=w_env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            c_out, _ = coordinator.communicate(timeout=120)
            w_out, _ = worker.communicate(timeout=30)
        except subprocess.TimeoutExpired as e:
            failures.append(f"the units' command lines: {e}")
            c_out = w_out = ""
        finally:
            for p in (coordinator, worker):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()
        log(f"coordinator exited {coordinator.returncode}, worker {worker.returncode if worker else None}")
        if coordinator.returncode != 0 or worker is None or worker.returncode != 0:
            failures.append(f"the units' command lines: coordinator exit {coordinator.returncode}, worker "
                            f"{worker.returncode if worker else 'not started'}\n{c_out}\n{w_out if worker else ''}")
        db = os.path.join(state, "accelmatrix", "accelmatrix.db")
        if os.path.exists(db):
            r = subprocess.run([accelmatrix, "report", "--db", db, "--format", "json"],
                               capture_output=True, text=True, check=True)
            statuses = sorted(res["status"] for res in json.loads(r.stdout)["results"])
            log(f"{db.replace(tmp, '$TMP')}: {statuses}")
            if statuses != ["pass"] * 4:
                failures.append(f"smoke plan through the units' command lines: {statuses}, expected 4 pass")
        else:
            failures.append(f"no database at {db} (--db %S/accelmatrix/accelmatrix.db)")
        if not os.path.exists(os.path.join(state, "accelmatrix-worker", "lab", "worker-id")):
            failures.append("the worker kept no id in %S/accelmatrix-worker/%i")
        if not os.path.isdir(os.path.join(cache, "accelmatrix-worker", "lab", "pocl")):
            failures.append("the worker's PoCL cache is not in %C/accelmatrix-worker/%i/pocl")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"wall time {time.monotonic() - t0:.1f} s")
    for f in failures:
        print(f"FAIL: {f}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
