"""activate.py CMD...: starts CMD as systemd's socket activation does: two
listening sockets on 127.0.0.1 as descriptors 3 and 4, LISTEN_FDS=2 and
LISTEN_PID naming the process that execs CMD. Exits with CMD's status."""
import os
import socket
import sys

socks = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    socks.append(s)
pid = os.fork()
if pid == 0:
    dups = [os.dup(s.fileno()) for s in socks]  # sockets may already sit at 3 and 4
    for i, fd in enumerate(dups):
        os.dup2(fd, 3 + i)  # inheritable
    for fd in dups:
        os.close(fd)
    os.environ["LISTEN_FDS"] = str(len(socks))
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.execvp(sys.argv[1], sys.argv[1:])
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
