// swapped.go MiB: fills MiB of memory in 1 MiB slices of pseudo-random
// bytes (they do not compress), then hashes all of it twice and prints the
// hash. comex run refuses Go programs; under comex swap, in a memory cgroup
// far below MiB, most of it is swapped out and back in between the passes.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
)

func main() {
	mib, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	blocks := make([][]byte, mib)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range blocks {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for k := 0; k < 8; k++ {
				b[j+k] = byte(x >> (8 * k))
			}
		}
		blocks[i] = b
	}
	h := sha256.New()
	for pass := 0; pass < 2; pass++ {
		for _, b := range blocks {
			h.Write(b)
		}
	}
	fmt.Printf("%x\n", h.Sum(nil))
}
