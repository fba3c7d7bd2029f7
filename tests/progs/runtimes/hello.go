// hello.go: the smallest Go program, built static, with cgo, and with cgo
// and its section headers removed: comex run must refuse every one by name.
package main

import "fmt"

func main() { fmt.Println("hello from go") }
