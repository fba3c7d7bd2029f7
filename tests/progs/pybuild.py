"""pybuild.py [N]: builds a large Python data structure (a dict of N records,
an index of lists over it, a list of byte strings), mutates it, and prints a
checksum of its contents. Deterministic: run natively and under `comex run`,
the outputs must be identical."""
import hashlib
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
r = random.Random(12345)

records = {}
for i in range(n):
    key = "k%08d-%08x" % (i, r.getrandbits(32))
    name = r.randbytes(r.randint(4, 20)).hex()
    records[key] = [i, r.random(), name, (i * 7919) % 1000003]

index = {}
for key, rec in records.items():
    index.setdefault(rec[2][:2], []).append(key)

blobs = [r.randbytes(r.randint(64, 600)) for _ in range(n // 2)]

# mutate: drop every 7th record, update every 5th, extend the index
for i, key in enumerate(list(records)):
    if i % 7 == 0:
        del records[key]
    elif i % 5 == 0:
        records[key][1] *= 2.0
        records[key][2] = records[key][2][::-1]
for key in records:
    if len(index.setdefault(records[key][2][:2], [])) < 50:
        index[records[key][2][:2]].append(key)

h = hashlib.sha256()
for key in sorted(records):
    h.update(repr((key, records[key])).encode())
for prefix in sorted(index):
    h.update(prefix.encode())
    h.update(str(len(index[prefix])).encode())
    h.update(",".join(index[prefix][:10]).encode())
for b in blobs:
    h.update(b)
print("pybuild: %d records, %d index keys, %d blobs, sha256 %s" % (len(records), len(index), len(blobs), h.hexdigest()))
