//go:build ignore

// A generator beside the program, run as `go run gen.go`.
package main

import "fmt"

func main() {
	fmt.Println("the generator")
}
