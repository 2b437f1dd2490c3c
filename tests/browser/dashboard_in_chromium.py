#!/usr/bin/env python3
"""The HTML dashboard in a real browser (issue 14 item 2).

Runs a plan with real `accelmatrix run` processes, loads the dashboard it wrote beside the
database in headless Chromium, and checks that
  - the page draws (<body data-am-state="ready">) and logs nothing to the console (the page
    logs nothing when it works, so any console line is a failure);
  - the figures in the DOM equal the JSON report's for the same run: the summary counts, every
    overview cell (working/cells, rating), every matrix cell (rating, median, job count, speed-up
    and its interval, the busy-host mark), the
    quantization matrix and the accuracy chart's points;
  - a screenshot can be taken (kept at --screenshot for a person to look at).
Exit 0 on success, 1 on a failed check, 77 (CTest's skip code) when Chromium is missing.
"""
import argparse
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
    return condition


class Dom(html.parser.HTMLParser):
    """Every element as (tag, attrs, text), with the id of its enclosing section/table."""

    def __init__(self):
        super().__init__()
        self.elements = []
        self.stack = []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "ancestors": [e["attrs"].get("id") for e in self.stack]}
        self.elements.append(el)
        if tag not in ("br", "img", "meta", "input", "link", "hr"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        while self.stack:
            el = self.stack.pop()
            if el["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data

    def find(self, tag=None, within=None, **attrs):
        out = []
        for el in self.elements:
            if tag and el["tag"] != tag:
                continue
            if within and within not in el["ancestors"] and el["attrs"].get("id") != within:
                continue
            if all(el["attrs"].get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(el)
        return out


def close(a, b, rel=2e-3):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def number(text):
    return None if text in (None, "", "null") else float(text)


def chromium_binary(explicit):
    for name in [explicit, "chromium", "chromium-browser", "google-chrome"]:
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def browser(chromium, profile, *args):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--mute-audio",
           "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accelmatrix", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--chromium")
    args = ap.parse_args()

    chromium = chromium_binary(args.chromium)
    if not chromium:
        print("chromium is not installed (ops/setup.sh --tests installs it)")
        return 77

    tmp = tempfile.mkdtemp(prefix="accelmatrix-browser-")
    try:
        db = os.path.join(tmp, "run.db")
        run = subprocess.run([args.accelmatrix, "run", "--plan", args.plan, "--db", db, "--quiet"],
                             capture_output=True, text=True, timeout=900)
        page = os.path.join(tmp, "run.html")
        if not check(run.returncode in (0, 1), f"accelmatrix run exited {run.returncode}: {run.stderr[-2000:]}"):
            return 1
        check(f"dashboard: {page}" in run.stderr, f"run did not print the dashboard's path: {run.stderr[-500:]}")
        if not check(os.path.exists(page), f"run wrote no dashboard at {page}"):
            return 1
        report = json.loads(subprocess.run([args.accelmatrix, "report", "--db", db, "--format", "json"],
                                           capture_output=True, text=True, check=True, timeout=120).stdout)

        profile = os.path.join(tmp, "profile")
        loaded = browser(chromium, profile, "--dump-dom", "file://" + page)
        check(loaded.returncode == 0, f"chromium exited {loaded.returncode}: {loaded.stderr[-2000:]}")
        console = [line for line in loaded.stderr.splitlines() if ":CONSOLE" in line]
        check(not console, "the page wrote to the console:\n" + "\n".join(console))
        dom = Dom()
        dom.feed(loaded.stdout)
        body = dom.find("body")
        if not check(body and body[0]["attrs"].get("data-am-state") == "ready",
                     "the page did not finish drawing: data-am-state=" +
                     (body[0]["attrs"].get("data-am-state", "?") if body else "no body") +
                     " " + " ".join(e["text"] for e in dom.find(id="am-error"))):
            return 1

        # Summary and job count.
        results = report["results"]
        check(body[0]["attrs"].get("data-am-jobs") == str(len(results)),
              f"page has {body[0]['attrs'].get('data-am-jobs')} jobs, report {len(results)}")
        summary = dom.find(id="am-summary")
        check(summary and summary[0]["attrs"].get("data-total") == str(report["summary"]["total"]), "summary total")
        for status, n in report["summary"]["by_status"].items():
            chip = dom.find("span", within="am-summary", data_status=status)
            check(chip and chip[0]["attrs"].get("data-count") == str(n), f"summary count of {status}")
        pager = dom.find(id="jobs-table-pager")
        check(pager and pager[0]["attrs"].get("data-matching") == str(len(results)), "jobs table count")

        # Overview heatmap.
        for o in report["overview"]:
            cells = dom.find("td", within="overview-table", data_architecture=o["architecture"], data_backend=o["backend"],
                             data_hardware_class=o["hardware_class"])
            if not check(len(cells) == 1, f"overview cell {o['architecture']} × {o['backend']} missing"):
                continue
            a = cells[0]["attrs"]
            check(a.get("data-working") == str(o["working"]) and a.get("data-cells") == str(o["cells"]),
                  f"overview {o['architecture']} × {o['backend']}: page {a.get('data-working')}/{a.get('data-cells')},"
                  f" report {o['working']}/{o['cells']}")
            check(cells[0]["text"].startswith(f"{o['working']}/{o['cells']}"), "overview cell text")

        # Matrix cells, quantization matrix and accuracy chart.
        # Tables show one page of 100 rows; this plan's cells fit on one.
        rows = [e for e in dom.find("tr", within="cells-table") if "data-cell" in e["attrs"]]
        check(len(rows) == len(report["matrix"]) <= 100,
              f"cells table has {len(rows)} rows, report {len(report['matrix'])}")
        for c in report["matrix"]:
            key = dict(data_model=c["model"], data_backend=c["backend"], data_precision=c["precision"],
                       data_hardware_class=c["hardware_class"])
            row = [e for e in rows if all(e["attrs"].get(k.replace("_", "-")) == v for k, v in key.items())]
            if not check(len(row) == 1, f"no row for cell {key}"):
                continue
            a = row[0]["attrs"]
            check(a.get("data-rating") == c["rating"], f"{key}: rating {a.get('data-rating')} vs {c['rating']}")
            check(close(number(a.get("data-median")), c["median_ms"]),
                  f"{key}: median {a.get('data-median')} vs {c['median_ms']}")
            check(a.get("data-jobs") == str(len(c["job_ids"])), f"{key}: job count")
            # The speed-up with its interval, and the busy-host mark (issue 17 item 3).
            for attr, field in (("data-speedup", "speedup"), ("data-speedup-low", "speedup_ci_low"),
                                ("data-speedup-high", "speedup_ci_high")):
                check(close(number(a.get(attr)), c[field]), f"{key}: {field} {a.get(attr)} vs {c[field]}")
            check(a.get("data-host-busy") == ("1" if c["host_busy"] else "0"), f"{key}: busy-host mark")
            if c["rating"] == "noisy":
                check(c["rating_label"] in row[0]["text"], f"{key}: a noisy cell shows {c['rating_label']}")
            quant = dom.find("span", within="quantization-table", **key)
            check(len(quant) == 1 and quant[0]["attrs"].get("data-rating") == c["rating"], f"{key}: quantization cell")
            if c["nmse_max"] is not None and c["precision"] != "mixed":
                dots = [d for d in dom.find("circle", data_model=c["model"], data_backend=c["backend"],
                                            data_precision=c["precision"], data_hardware_class=c["hardware_class"])
                        if close(number(d["attrs"].get("data-nmse")), c["nmse_max"])]
                check(dots, f"{key}: no accuracy point with NMSE {c['nmse_max']}")
        check(dom.find("svg", data_chart="latency"), "no latency chart")
        check(dom.find("div", within="classes"), "no hardware class card")

        shot = browser(chromium, os.path.join(tmp, "profile2"), "--screenshot=" + os.path.abspath(args.screenshot),
                       "--window-size=1400,2600", "--hide-scrollbars", "file://" + page)
        check(shot.returncode == 0 and os.path.exists(args.screenshot) and os.path.getsize(args.screenshot) > 10000,
              f"no screenshot at {args.screenshot}: {shot.stderr[-1000:]}")
        print(f"dashboard {page}: {os.path.getsize(page)} bytes, {len(results)} jobs, "
              f"{len(report['matrix'])} cells; screenshot {args.screenshot}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for f in FAILURES:
        print("FAILED:", f)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
