// Workers that count words per shard; one shard's counts map was never made.
package main

import (
	"fmt"
	"strings"
	"sync"
)

type shard struct {
	name   string
	counts map[string]int
}

func newShards(n int) []*shard {
	shards := make([]*shard, n)
	for i := range shards {
		shards[i] = &shard{name: fmt.Sprintf("s%d", i)}
		if i != 2 {
			shards[i].counts = map[string]int{}
		}
	}
	return shards
}

func count(s *shard, text string, wg *sync.WaitGroup) {
	for _, w := range strings.Fields(text) {
		s.counts[w]++
	}
	wg.Done()
}

func main() {
	shards := newShards(3)
	texts := []string{"a b a", "c c d", "e f e"}
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Add(1)
		go count(s, texts[i], &wg)
	}
	wg.Wait()
	fmt.Println("counted", len(shards), "shards")
}
