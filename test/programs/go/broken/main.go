package main

import "fmt"

func main() {
	total := 0
	fmt.Println("total", totl)
}
