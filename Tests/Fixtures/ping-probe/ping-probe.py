#!/usr/bin/python3
"""A well-behaved client of practiced's control socket, in a process of its own: it sends
`ping`, waits for its reply, rests 5 ms, N times, and prints the latencies' p50, p99 and
maximum in milliseconds. FloodTests runs it beside 64 flooding clients: measured from inside
the test process, among its 128 flooding threads, a ping's p99 was the harness's (23.7 to
31.8 ms) while this probe saw the daemon's (2.1 ms) at the same moment.

    ping-probe.py SOCKET N
"""
import json
import socket
import sys
import time


def main():
    path, count = sys.argv[1], int(sys.argv[2])
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    connection.settimeout(10)
    replies = connection.makefile("rb")
    latencies = []
    for number in range(1, count + 1):
        start = time.perf_counter()
        connection.sendall(b'{"id":%d,"command":"ping"}\n' % number)
        # Events are not subscribed to: the next reply line is this ping's.
        while True:
            line = replies.readline()
            if not line:
                sys.exit("ping-probe: the daemon closed the connection")
            message = json.loads(line)
            if message.get("type") == "reply":
                break
        if message.get("id") != number or not message.get("ok") or not message["result"].get("pong"):
            sys.exit("ping-probe: not this ping's answer: %r" % line[:200])
        latencies.append((time.perf_counter() - start) * 1000)
        time.sleep(0.005)
    latencies.sort()
    print("p50 %.3f p99 %.3f max %.3f" % (latencies[len(latencies) // 2], latencies[len(latencies) * 99 // 100], latencies[-1]), flush=True)


if __name__ == "__main__":
    main()
