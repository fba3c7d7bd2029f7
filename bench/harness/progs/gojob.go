// gojob N: a Go program of the kind comex run refuses (static, its own
// runtime): N records of 200-400 bytes in a map and a slice, 2N random
// updates, the keys sorted, and a SHA-256 of every record in key order.
// The garbage collector walks the whole heap on each cycle, so a swapped
// heap is swapped in again by the collector as well as by the program.
// Its output depends only on N.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
)

type record struct {
	key     uint64
	name    string
	payload []byte
	hits    int
}

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "usage: gojob RECORDS")
		os.Exit(2)
	}
	x := uint64(88172645463325252)
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	byKey := make(map[uint64]*record, n)
	all := make([]*record, 0, n)
	for i := 0; i < n; i++ {
		r := &record{key: next(), name: "rec-" + strconv.Itoa(i), payload: make([]byte, 200+next()%200)}
		for j := 0; j+8 <= len(r.payload); j += 8 {
			binary.LittleEndian.PutUint64(r.payload[j:], next())
		}
		byKey[r.key] = r
		all = append(all, r)
	}
	for i := 0; i < 2*n; i++ {
		r := all[next()%uint64(n)]
		r.hits++
		r.payload[next()%uint64(len(r.payload))] ^= byte(i)
	}
	keys := make([]uint64, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	h := sha256.New()
	var b [8]byte
	for _, k := range keys {
		r := byKey[k]
		binary.LittleEndian.PutUint64(b[:], uint64(r.hits))
		h.Write(b[:])
		h.Write([]byte(r.name))
		h.Write(r.payload)
	}
	fmt.Printf("%d %x\n", len(keys), h.Sum(nil))
}
