"""npjob.py MIB: a numpy job with a footprint of about MIB MiB: random
gathers, a sort, element-wise passes and a histogram over three float64 /
int64 arrays. Prints checksums of the results (deterministic for a given
numpy build and argument)."""
import hashlib
import sys

import numpy as np

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
n = max(1 << 16, (mib << 20) // 8 // 3)
rng = np.random.default_rng(20240501)
a = rng.random(n)                       # n float64
idx = rng.permutation(n)                # n int64
b = a[idx]                              # random gather: every page of a, in random order
b.sort()                                # in place
h = hashlib.sha256()
for p in range(3):
    idx = (idx * 2654435761 + p) % n    # new pseudo-random order, in place of the old
    a += b[idx] * 0.5                   # random reads of b, sequential read-modify-write of a
    h.update(a[:: 4096 // 8].tobytes())
hist, _ = np.histogram(a, bins=256)
h.update(hist.tobytes())
h.update(np.sort(a[:: 7]).tobytes())
print("npjob: n=%d sum=%.6f sha256=%s" % (n, float(a.sum()), h.hexdigest()))
