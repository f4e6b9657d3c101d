"""Plays systemd's side of Type=notify: binds a datagram socket at PATH, prints each notification it gets, and
exits 0 at READY=1 (1 after 60 s without it). sd_notify(3) sends "KEY=VALUE" lines, one datagram each call."""
import socket
import sys
import time

path = sys.argv[1]
with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
    s.bind(path)
    s.settimeout(1.0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            message = s.recv(4096).decode()
        except socket.timeout:
            continue
        print(message, flush=True)
        if any(line == "READY=1" for line in message.splitlines()):
            sys.exit(0)
sys.exit(1)
