#!/usr/bin/env python3
"""The learner UI's footprint as the package runs it: every process of USER (the UI's user),
its proportional set size (PSS, so that shared pages are counted once across processes) by
role, and the CPU each used over the last minute of SECONDS (all of them when fewer) while
the page sat idle. Prints a Markdown table
and the totals, each line prefixed `ui-footprint:`.

  python3 .ci/ui-footprint.py practiced-ui 60
"""
import os, pwd, sys, time

user, seconds = sys.argv[1], float(sys.argv[2])
uid = pwd.getpwnam(user).pw_uid
ticks = os.sysconf("SC_CLK_TCK")


def processes():
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            # Chromium's children rewrite their command line into one string: split on spaces.
            args = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").split()
            found[int(entry)] = [a.decode(errors="replace") for a in args]
        except OSError:
            pass
    return found


def role(args):
    if not args:
        return "other"
    program = os.path.basename(args[0])
    joined = " ".join(args)
    if program == "practiced-kiosk-bridge":
        return "the bridge (practiced-kiosk-bridge)"
    if program in ("cage", "Xwayland", "cog", "WPEWebProcess", "WPENetworkProcess"):
        return program
    if "chromium" in program or program == "chrome":
        kind = next((a.split("=", 1)[1] for a in args if a.startswith("--type=")), None)
        if kind == "utility" and any("network.mojom.NetworkService" in a for a in args):
            return "chromium: network service"
        return f"chromium: {kind}" if kind else "chromium: browser"
    if program in ("bash", "sh") and any("practiced-kiosk-ui" in a for a in args):
        return "the launcher (bash)"
    return program


def pss_kb(pid):
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_ticks(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


# The idle CPU over the window's last minute (all of it when shorter): the page's own start
# (layout, fonts, the first garbage collections) is not idling.
window = min(seconds, 60.0)
time.sleep(seconds - window)
before = {pid: cpu_ticks(pid) for pid in processes()}
time.sleep(window)
now = processes()
rows = {}
for pid, args in now.items():
    name = role(args)
    count, kb, cpu = rows.get(name, (0, 0, 0))
    rows[name] = (count + 1, kb + pss_kb(pid), cpu + (cpu_ticks(pid) - before.get(pid, 0)) / ticks)
total = sum(kb for _, kb, _ in rows.values())
used = sum(cpu for _, _, cpu in rows.values())
print(f"ui-footprint: | part | processes | PSS (MB) | CPU (s a minute, idle) |")
print("ui-footprint: |---|---|---|---|")
for name, (count, kb, cpu) in sorted(rows.items(), key=lambda item: -item[1][1]):
    print(f"ui-footprint: | {name} | {count} | {kb / 1024:.1f} | {cpu * 60 / window:.2f} |")
print(f"ui-footprint: | total | {len(now)} | {total / 1024:.1f} | {used * 60 / window:.2f} |")
print(f"ui-footprint: CPU while idle: {used:.2f} s in the last {window:.0f} s of {seconds:.0f} ({used * 60 / window:.2f} s a minute)")
