// A checkout total that is wrong for one order: the bulk discount is applied one item too late.
package main

import (
	"fmt"
	"os"
)

func main() {
	orders := []order{
		{ID: "a-1", Items: []line{{"pen", 2, 150}, {"pad", 1, 400}}},
		{ID: "b-2", Items: []line{{"ink", 5, 900}, {"pen", 10, 150}}},
		{ID: "c-3", Items: []line{{"pad", 3, 400}}},
	}
	grand := 0
	for _, o := range orders {
		t := total(o)
		fmt.Printf("order %s: %d\n", o.ID, t)
		grand += t
	}
	fmt.Printf("grand total %d\n", grand)
	fmt.Fprintln(os.Stderr, "priced", len(orders), "orders in", os.Getenv("PRICING_REGION"))
}
