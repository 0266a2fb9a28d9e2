#!/usr/bin/env python3
"""Whole-process wall time and peak RSS of command A vs command B, run in
turn RUNS times after one warm-up each (`make bench` part d).

usage: proc.py RUNS NAME_A 'COMMAND A' NAME_B 'COMMAND B'
Prints min/median wall (ms) and median peak RSS (MB) of each, and the
ratios A/B of the medians. Never judges."""
import os
import shlex
import statistics
import subprocess
import sys
import time


def once(cmd):
    t = time.perf_counter()
    p = subprocess.Popen(shlex.split(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t) * 1000
    if status != 0:
        sys.exit(f"{cmd!r} failed with status {status}")
    return wall, usage.ru_maxrss / 1024


def main():
    runs = int(sys.argv[1])
    (na, a), (nb, b) = (sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5])
    once(a), once(b)
    wa, wb, ra, rb = [], [], [], []
    for _ in range(runs):
        w, r = once(a)
        wa.append(w), ra.append(r)
        w, r = once(b)
        wb.append(w), rb.append(r)
    ma, mb = statistics.median(wa), statistics.median(wb)
    pa, pb = statistics.median(ra), statistics.median(rb)
    print(f"{na:<34} wall min {min(wa):6.1f} median {ma:6.1f} ms, peak RSS {pa:6.1f} MB")
    print(f"{nb:<34} wall min {min(wb):6.1f} median {mb:6.1f} ms, peak RSS {pb:6.1f} MB")
    print(f"{'ratio':<34} wall {ma / mb:.2f}x (+{ma - mb:.1f} ms), peak RSS {pa / pb:.2f}x (+{pa - pb:.1f} MB)")


main()
