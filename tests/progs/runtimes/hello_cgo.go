// hello_cgo.go: a Go program linked with cgo (dynamic, with an ELF
// interpreter), which comex run must still refuse as a Go program.
package main

// int twice(int x) { return 2 * x; }
import "C"
import "fmt"

func main() { fmt.Println("hello from cgo", C.twice(21)) }
