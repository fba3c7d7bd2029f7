# arrays.py [MiB=96]: CPython with numpy under comex: integer arrays of about
# MiB in all, filled, sorted, cumulated, indexed, plus a dict of Python
# objects; prints checksums (exact integers), exits 1 on a mismatch.
import hashlib, sys
import numpy as np

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 96
n = mib * (1 << 20) // 8 // 3                      # three int64 arrays
a = (np.arange(n, dtype=np.int64) * 2654435761) % 1000003
b = np.sort(a)
c = np.cumsum(a)
if not (np.all(b[1:] >= b[:-1]) and c[-1] == a.sum()):
    print("MISMATCH: sort or cumsum", file=sys.stderr); sys.exit(1)
idx = (np.arange(0, n, 7, dtype=np.int64) * 40503) % n
g = a[idx]
objs = {i: (str(i), i * i) for i in range(0, 200000)}
if any(objs[i][1] != i * i for i in range(0, 200000, 997)):
    print("MISMATCH: dict", file=sys.stderr); sys.exit(1)
h = hashlib.sha256()
for arr in (a, b, c, g):
    h.update(arr.tobytes())
print("numpy arrays %d MiB: %s %d %d" % (mib, h.hexdigest(), int(c[-1]), sum(v[1] for v in objs.values())))
