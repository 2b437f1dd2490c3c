#!/usr/bin/env python3
"""ops/slurm/accelmatrix.sbatch on a real single-node Slurm that this test starts and stops.

Starts munged (its own key, socket and pid file in a temporary directory, not the system's),
slurmctld and slurmd with a generated slurm.conf (no cgroups, its own ports and state), then:

  1. submits the sbatch script with jobs/plans/smoke.toml over CURVE (`sbatch --wait`) and checks
     that it exits 0, that Slurm records exit code 0, and that the database holds every job of the
     plan, terminal, in an accepted status;
  2. submits it with a plan whose one job fails (selftest:fail) and checks that the coordinator's
     exit code 1 comes back from `sbatch --wait` and is Slurm's exit code of the job;
  3. submits a plan whose job hangs and signals the batch shell as Slurm does before the time
     limit (`scancel --batch --signal=TERM`): exit code 3 (interrupted, resumable), the workers
     stop cleanly and leave nothing in the job's TMPDIR.

Every daemon is stopped at the end, on failure too, and the test fails if a process it started
(found by a marker in its environment, or, for slurmstepd, by a file of the test's directory
that it holds open) is still alive after that. Exit 77 (skipped) when not
root or when slurm-wlm/munge are not installed (`ops/setup.sh --tests` installs them).
Standard library only. Prints the wall time of each phase.
"""

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

SKIP = 77
ACCEPTED = {"pass", "degraded", "unsupported", "skipped", "cancelled"}
NEEDED = ["munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo", "squeue", "scancel", "srun"]
# Bounded waits, seconds. A smoke run takes ~3 s of job time here; sbatch --wait polls slowly.
DAEMON_START_S = 30
JOB_WAIT_S = 120
STOP_S = 15


def log(msg):
    print(f"[slurm-test {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """munged + slurmctld + slurmd in `root`, every process tagged by `marker` in its environment."""

    def __init__(self, root):
        self.root = root
        self.marker = f"ACCELMATRIX_SLURM_TEST={root}"
        self.procs = {}  # name -> Popen, in start order
        self.host = socket.gethostname().split(".")[0]
        self.conf = os.path.join(root, "slurm.conf")
        self.env = dict(os.environ)
        self.env["ACCELMATRIX_SLURM_TEST"] = root
        self.env["SLURM_CONF"] = self.conf
        for var in list(self.env):  # a surrounding Slurm job must not leak into ours
            if var.startswith("SLURM_") and var != "SLURM_CONF":
                del self.env[var]

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def start(self, name, argv):
        out = open(self.path("log", name + ".out"), "wb")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=self.env, start_new_session=True)
        out.close()
        self.procs[name] = p
        return p

    def tail(self, name, n=30):
        for f in (self.path("log", name + ".out"), self.path("log", name + ".log")):
            if os.path.exists(f):
                with open(f, errors="replace") as fh:
                    lines = fh.readlines()[-n:]
                print(f"--- {f} (last {len(lines)} lines)\n" + "".join(lines), end="", flush=True)

    def check_alive(self, name):
        p = self.procs[name]
        if p.poll() is not None:
            self.tail(name)
            raise RuntimeError(f"{name} exited {p.returncode} while starting")

    def run(self, argv, timeout=30, check=True):
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def bring_up(self):
        for d in ("log", "munge", "run", "state", "spool"):
            os.makedirs(self.path(d), exist_ok=True)
        # munged insists: key readable by its user only, socket directory searchable by all.
        os.chmod(self.root, 0o755)
        os.chmod(self.path("munge"), 0o700)
        os.chmod(self.path("run"), 0o755)
        key = self.path("munge", "munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(1024))
        os.close(fd)
        sock = self.path("run", "munge.sock")
        self.start("munged", ["munged", "--foreground", f"--key-file={key}", f"--socket={sock}",
                              f"--pid-file={self.path('run', 'munged.pid')}",
                              f"--log-file={self.path('log', 'munged.log')}",
                              f"--seed-file={self.path('munge', 'munged.seed')}"])
        deadline = time.monotonic() + DAEMON_START_S
        while not os.path.exists(sock):
            self.check_alive("munged")
            if time.monotonic() > deadline:
                raise RuntimeError("munged did not create its socket")
            time.sleep(0.05)

        cpus = len(os.sched_getaffinity(0))
        ctld_port, slurmd_port = free_port(), free_port()
        with open(self.conf, "w") as f:
            f.write(f"""# Generated by {os.path.basename(__file__)}: one node, no cgroups, everything in {self.root}
ClusterName=amtest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('run', 'slurmctld.pid')}
SlurmdPidFile={self.path('run', 'slurmd.pid')}
SlurmctldLogFile={self.path('log', 'slurmctld.log')}
SlurmdLogFile={self.path('log', 'slurmd.log')}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=amtest Nodes={self.host} Default=YES MaxTime=10 State=UP
""")
        self.start("slurmctld", ["slurmctld", "-D", "-c", "-f", self.conf])
        deadline = time.monotonic() + DAEMON_START_S
        while self.run(["scontrol", "ping"], check=False).stdout.find("UP") < 0:
            self.check_alive("slurmctld")
            if time.monotonic() > deadline:
                raise RuntimeError("slurmctld did not answer scontrol ping")
            time.sleep(0.1)
        self.start("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", self.host])
        while True:
            state = self.run(["sinfo", "-h", "-n", self.host, "-o", "%T"], check=False).stdout.strip()
            if state == "idle":
                break
            self.check_alive("slurmd")
            self.check_alive("slurmctld")
            if time.monotonic() > deadline:
                self.tail("slurmd")
                raise RuntimeError(f"node {self.host} is '{state}', not idle")
            time.sleep(0.1)

    def tagged_pids(self):
        """Every live process (but this one) that this test started: its environment carries our
        marker, or (slurmstepd, which slurmd starts with an environment of its own) it has a file
        of our directory open."""
        me = os.getpid()
        found = []
        needle = self.marker.encode() + b"\0"
        ours = self.root + "/"
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read()
                tagged = env.startswith(needle) or b"\0" + needle in env
                if not tagged:
                    fd_dir = f"/proc/{entry}/fd"
                    tagged = any(os.readlink(os.path.join(fd_dir, fd)).startswith(ours)
                                 for fd in os.listdir(fd_dir))
            except OSError:
                continue
            if tagged:
                found.append(int(entry))
        return found

    def wait_untagged(self, pids_of, seconds):
        deadline = time.monotonic() + seconds
        left = pids_of()
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = pids_of()
        return left

    def bring_down(self):
        """Stops what this test started, jobs first; returns the processes that outlived it."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.run(["scancel", "--partition=amtest"], check=False, timeout=10)
        # A finished job's slurmstepd stays a few seconds (it reports to slurmctld and slurmd).
        # Let it go on its own before its daemons go.
        t0 = time.monotonic()
        self.wait_untagged(lambda: [p for p in self.tagged_pids() if comm(p) == "slurmstepd"], STOP_S)
        log(f"job steps ended {time.monotonic() - t0:.1f} s after the last job")
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(STOP_S)
            except subprocess.TimeoutExpired:
                log(f"{name} ignored SIGTERM for {STOP_S} s; SIGKILL")
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(STOP_S)
        survivors = []
        for pid in self.wait_untagged(self.tagged_pids, STOP_S):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                survivors.append(f"{pid} {cmdline}")
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return survivors


def submit(cluster, script, submit_dir, extra_env, label, while_running=None):
    """`sbatch --wait`s the script, calling while_running(job_id, output_file) once the job
    runs; returns (sbatch exit code, job id, Slurm's ExitCode, JobState, the job's output)."""
    env = dict(cluster.env)
    env.update(extra_env)
    name = f"am-{label}"
    t0 = time.monotonic()
    p = subprocess.Popen(["sbatch", "--wait", "--parsable", "--job-name", name, script],
                         cwd=submit_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        if while_running is not None:
            job_id = ""
            while not job_id and p.poll() is None and time.monotonic() - t0 < JOB_WAIT_S:
                job_id = cluster.run(["squeue", "-h", "-n", name, "-t", "RUNNING", "-o", "%i"],
                                     check=False).stdout.strip()
                time.sleep(0.1)
            if job_id:
                while_running(job_id, os.path.join(submit_dir, f"accelmatrix-{job_id}.out"))
        out, err = p.communicate(timeout=max(1.0, JOB_WAIT_S - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise RuntimeError(f"{label}: the job did not finish in {JOB_WAIT_S} s")
    job_id = out.strip().split(";")[0]
    log(f"{label}: job {job_id}, sbatch --wait exited {p.returncode} after "
        f"{time.monotonic() - t0:.1f} s")
    if not job_id.isdigit():
        raise RuntimeError(f"{label}: sbatch printed no job id: {out!r} {err!r}")
    info = cluster.run(["scontrol", "show", "job", job_id]).stdout
    fields = dict(kv.split("=", 1) for kv in info.split() if "=" in kv)
    output = os.path.join(submit_dir, f"accelmatrix-{job_id}.out")
    text = ""
    if os.path.exists(output):
        with open(output, errors="replace") as f:
            text = f.read()
        shown = "".join(ln + "\n" for ln in text.splitlines() if "[info]" not in ln)
        print(f"--- {output} (info lines left out)\n" + shown, end="", flush=True)
    return p.returncode, job_id, fields.get("ExitCode"), fields.get("JobState"), text


def wait_for_text(path, needle, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                if needle in f.read():
                    return True
        time.sleep(0.1)
    return False


def report(accelmatrix, db):
    r = subprocess.run([accelmatrix, "report", "--db", db, "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"report --db {db} exited {r.returncode}: {r.stderr}")
    return {res["job_id"]: res for res in json.loads(r.stdout)["results"]}


def plan_jobs_of(db, results):
    """The plan job each of `results`' jobs was made from (one entry per job, repeats kept)."""
    if not results:
        return []
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT job_id, plan_job_id FROM jobs").fetchall()
    return [plan for jid, plan in rows if jid in results]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    source, build = os.path.abspath(args.source_dir), os.path.abspath(args.build_dir)
    script = os.path.join(source, "ops", "slurm", "accelmatrix.sbatch")
    smoke = os.path.join(source, "jobs", "plans", "smoke.toml")
    accelmatrix = os.path.join(build, "accelmatrix")

    if os.geteuid() != 0:
        print("SKIP: a private Slurm runs its daemons as root here (SlurmUser=root); run as root")
        return SKIP
    missing = [tool for tool in NEEDED if shutil.which(tool) is None]
    if missing:
        print(f"SKIP: {', '.join(missing)} not installed (ops/setup.sh --tests installs slurm-wlm and munge)")
        return SKIP

    t_start = time.monotonic()
    root = tempfile.mkdtemp(prefix="accelmatrix-slurm-")
    cluster = Cluster(root)
    failures = []
    # ctest's timeout, Ctrl-C: stop the daemons before going.
    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        cluster.bring_up()
        t_up = time.monotonic()
        log(f"munged, slurmctld, slurmd up in {t_up - t_start:.1f} s (node {cluster.host}, conf {cluster.conf})")

        submit_dir = cluster.path("submit")
        os.makedirs(submit_dir)
        job_tmp = cluster.path("tmp")  # the jobs' TMPDIR: the script's and the workers' files
        os.makedirs(job_tmp)
        os.chmod(job_tmp, 0o1777)
        host_env = {"TMPDIR": job_tmp}
        try:
            socket.gethostbyname(socket.gethostname())
        except OSError:
            host_env["ACCELMATRIX_HOST"] = "127.0.0.1"  # the hostname does not resolve here

        # 1. The smoke plan, over CURVE: exit 0, every job terminal and accepted.
        planned = json.loads(subprocess.run([accelmatrix, "plan", smoke, "--json"], check=True,
                                            capture_output=True, text=True).stdout)
        planned_ids = {j["job_id"] for j in planned}
        db = os.path.join(submit_dir, "smoke.db")
        rc, job, exit_code, state, _ = submit(cluster, script, submit_dir, {
            "ACCELMATRIX_PLAN": smoke, "ACCELMATRIX_BIN": build, "ACCELMATRIX_DB": db,
            "ACCELMATRIX_CURVE_DIR": cluster.path("keys"), **host_env}, "smoke")
        if rc != 0 or exit_code != "0:0" or state != "COMPLETED":
            failures.append(f"smoke: sbatch --wait exited {rc}, job {job} {state} ExitCode={exit_code}; "
                            "expected 0, COMPLETED, 0:0")
        results = report(accelmatrix, db) if os.path.exists(db) else {}
        # Plan jobs are placed once per hardware class (docs/PLANS.md "Placement"): one cpu class
        # here, so every plan job made exactly one job, and no job came from elsewhere.
        made_from = plan_jobs_of(db, results)
        if sorted(made_from) != sorted(planned_ids):
            failures.append(f"smoke: the database's jobs were made from plan jobs {sorted(made_from)}, "
                            f"the plan has {sorted(planned_ids)}")
        for jid, res in results.items():
            if res.get("state") != "done" or res.get("status") not in ACCEPTED:
                failures.append(f"smoke: job {jid} ({res.get('model')} {res.get('precision')} "
                                f"s{res.get('seq_len')}) is {res.get('state')}/{res.get('status')}: "
                                f"{res.get('reason')}")
        log(f"smoke: {len(results)} job(s): "
            + ", ".join(sorted(f"{r['precision']} s{r['seq_len']} {r['status']}" for r in results.values())))

        # 2. A job that fails: the coordinator's exit code 1 is the job's and sbatch --wait's.
        failing = os.path.join(submit_dir, "failing.toml")
        with open(failing, "w") as f:
            f.write('[plan]\nname = "failing"\n\n[[models]]\nname = "selftest:fail"\nbackends = ["cpu"]\n'
                    'precisions = ["f32"]\n')
        db2 = os.path.join(submit_dir, "failing.db")
        rc, job, exit_code, state, _ = submit(cluster, script, submit_dir, {
            "ACCELMATRIX_PLAN": failing, "ACCELMATRIX_BIN": build, "ACCELMATRIX_DB": db2,
            **host_env}, "failing")
        if rc != 1 or exit_code != "1:0" or state != "FAILED":
            failures.append(f"failing: sbatch --wait exited {rc}, job {job} {state} ExitCode={exit_code}; "
                            "expected 1, FAILED, 1:0")
        statuses = sorted(r["status"] for r in report(accelmatrix, db2).values()) if os.path.exists(db2) else []
        if statuses != ["fail"]:
            failures.append(f"failing: statuses {statuses}, expected ['fail']")

        # 3. Stopped mid-run, as at the time limit (--signal=B:TERM@120 signals the batch shell):
        #    the coordinator stops cleanly, exit 3 is the job's, the workers stop cleanly too.
        hanging = os.path.join(submit_dir, "hanging.toml")
        with open(hanging, "w") as f:
            f.write('[plan]\nname = "hanging"\n\n[defaults]\ntimeout_s = 60\n\n'
                    '[[models]]\nname = "selftest:hang"\nbackends = ["cpu"]\nprecisions = ["f32"]\n')

        def stop_batch(job_id, output):
            if not wait_for_text(output, "worker/client: running", 60):
                failures.append("interrupted: the worker never started the job")
            cluster.run(["scancel", "--batch", "--signal=TERM", job_id])
        db3 = os.path.join(submit_dir, "hanging.db")
        rc, job, exit_code, state, text = submit(cluster, script, submit_dir, {
            "ACCELMATRIX_PLAN": hanging, "ACCELMATRIX_BIN": build, "ACCELMATRIX_DB": db3,
            **host_env}, "interrupted", stop_batch)
        if rc != 3 or exit_code != "3:0" or state != "FAILED":
            failures.append(f"interrupted: sbatch --wait exited {rc}, job {job} {state} ExitCode={exit_code}; "
                            "expected 3, FAILED, 3:0")
        hung = report(accelmatrix, db3).values() if os.path.exists(db3) else []
        if [r["state"] for r in hung] != ["queued"]:
            failures.append("interrupted: the hanging job should be queued again (to resume), is "
                            + str([(r["state"], r["status"]) for r in hung]))
        if "worker step exited" in text or "Killed" in text:
            failures.append("interrupted: the worker step did not stop cleanly (see the job's output)")
        # The worker's PoCL kernel cache stays on purpose (kernels/opencl/cl_api.h): shared by
        # later jobs on the node. The script's and the workers' own files must be gone.
        left = [name for name in os.listdir(job_tmp) if name != "accelmatrix-pocl"]
        if left:
            failures.append(f"the jobs left files in their TMPDIR: {left}")
    except (RuntimeError, subprocess.SubprocessError, OSError, KeyboardInterrupt) as e:
        failures.append(f"{type(e).__name__}: {e}")
        for name in ("munged", "slurmctld", "slurmd"):
            cluster.tail(name, 15)
    finally:
        t_down = time.monotonic()
        survivors = cluster.bring_down()
        log(f"daemons stopped in {time.monotonic() - t_down:.1f} s")
        if survivors:
            failures.append("processes outlived the test (killed now): " + "; ".join(survivors))
        if failures or args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    log(f"wall time {time.monotonic() - t_start:.1f} s")
    for f in failures:
        print(f"FAIL: {f}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
