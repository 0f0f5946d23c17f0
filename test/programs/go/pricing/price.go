package main

type line struct {
	SKU   string
	Qty   int
	Cents int
}

type order struct {
	ID    string
	Items []line
}

// bulkFrom is the quantity from which a line gets 10% off.
const bulkFrom = 5

func lineTotal(l line) int {
	cents := l.Qty * l.Cents
	if l.Qty > bulkFrom {
		cents = cents * 90 / 100
	}
	return cents
}

func total(o order) int {
	sum := 0
	for _, l := range o.Items {
		sum += lineTotal(l)
	}
	return sum
}
