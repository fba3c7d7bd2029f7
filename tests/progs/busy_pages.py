"""Touches MIB MiB, creates READY, then keeps reading random pages until STOP
exists (so that `comex top`, `comex status` and the exporters watch a program
with live remote traffic); prints a checksum of the pages, which does not
depend on how long it ran, to compare with a run without comex."""
import os
import random
import sys

mib, ready, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
buf = bytearray(mib << 20)
pages = len(buf) // 4096
for p in range(pages):
    buf[p * 4096] = (p * 7 + 3) % 251
open(ready, "w").close()
r = random.Random(1)
i = 0
while i < 2000 or not os.path.exists(stop):
    buf[r.randrange(pages) * 4096 + 1] ^= 0  # a read and a write of the same value
    i += 1
print("pages %d checksum %d" % (pages, sum(buf[p * 4096] for p in range(pages))))
