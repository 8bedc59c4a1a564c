// SPDX-License-Identifier: MIT
// select-go: the select suite (docs/select.md) in Go, the twin of
// select-baton, written as a new Go user would: GOMAXPROCS workers, P
// producer goroutines (producer p sends 1..M, message k on channel
// (p+k) mod K), C consumers each in a `for { select { ... } }` over the
// channels not yet closed (a closed one is set to nil) with a timeout case,
// and a closer goroutine that waits for the producers (a sync.WaitGroup)
// and closes the channels. The timeout is one time.Timer per consumer,
// Reset before each select: the same loop with a fresh `time.After(T)` in
// each select ran at half the rate. The clock runs from the first
// goroutine started until every consumer is done. The consumers' sums must
// add up to P*M*(M+1)/2, their counts to P*M; otherwise a
// "status":"failed" line and exit 1. go.mod says go 1.23: from that
// version on, a Timer's channel is unbuffered and Reset needs no drain.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type opts struct {
	workers, producers, consumers, channels, messages, capacity, timeoutMs, runs int
}

func parse() opts {
	var o opts
	fs := flag.NewFlagSet("select-go", flag.ContinueOnError)
	fs.IntVar(&o.workers, "workers", 2, "GOMAXPROCS")
	fs.IntVar(&o.producers, "producers", 8, "producer goroutines")
	fs.IntVar(&o.consumers, "consumers", 2, "consumer goroutines")
	fs.IntVar(&o.channels, "channels", 4, "channels")
	fs.IntVar(&o.messages, "messages", 100000, "messages per producer")
	fs.IntVar(&o.capacity, "capacity", 64, "channel capacity (0: unbuffered)")
	fs.IntVar(&o.timeoutMs, "timeout-ms", 100, "the select's timeout case")
	fs.IntVar(&o.runs, "runs", 1, "timed runs; the median is reported")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 0 || o.workers < 1 || o.producers < 1 || o.consumers < 1 ||
		o.channels < 1 || o.messages < 1 || o.capacity < 0 || o.timeoutMs < 1 || o.runs < 1 {
		fmt.Fprintln(os.Stderr, "select-go: every option must be positive (--capacity may be 0)")
		os.Exit(2)
	}
	return o
}

func (o opts) params() string {
	return fmt.Sprintf(`{"workers":%d,"producers":%d,"consumers":%d,"channels":%d,"messages":%d,"capacity":%d}`,
		o.workers, o.producers, o.consumers, o.channels, o.messages, o.capacity)
}

// oneRun returns msgs/s, the messages received and their sum.
func oneRun(o opts) (float64, int64, int64) {
	chs := make([]chan int, o.channels)
	for i := range chs {
		chs[i] = make(chan int, o.capacity)
	}
	var producers, consumers sync.WaitGroup
	var sum, count atomic.Int64
	timeout := time.Duration(o.timeoutMs) * time.Millisecond

	t0 := time.Now()
	producers.Add(o.producers)
	for p := 0; p < o.producers; p++ {
		go func(p int) {
			defer producers.Done()
			for k := 1; k <= o.messages; k++ {
				chs[(p+k)%o.channels] <- k
			}
		}(p)
	}
	consumers.Add(o.consumers)
	for c := 0; c < o.consumers; c++ {
		go func() {
			defer consumers.Done()
			mine := append([]chan int(nil), chs...)
			var s, n int64
			timer := time.NewTimer(timeout)
			for open := len(mine); open > 0; {
				var v int
				var ok bool
				var from int
				// The cases a user of 4 channels writes by hand.
				timer.Reset(timeout)
				select {
				case v, ok = <-mine[0]:
					from = 0
				case v, ok = <-mine[1]:
					from = 1
				case v, ok = <-mine[2]:
					from = 2
				case v, ok = <-mine[3]:
					from = 3
				case <-timer.C:
					continue
				}
				if !ok {
					mine[from] = nil // a nil channel's case never fires
					open--
					continue
				}
				s += int64(v)
				n++
			}
			sum.Add(s)
			count.Add(n)
		}()
	}
	go func() {
		producers.Wait()
		for _, ch := range chs {
			close(ch)
		}
	}()
	consumers.Wait()
	elapsed := time.Since(t0).Seconds()
	return float64(count.Load()) / elapsed, count.Load(), sum.Load()
}

func main() {
	o := parse()
	if o.channels != 4 {
		fmt.Fprintln(os.Stderr, "select-go: --channels must be 4 (the select is written out by hand)")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(o.workers)
	m := int64(o.messages)
	wantSum, wantCount := int64(o.producers)*(m*(m+1)/2), int64(o.producers)*m
	samples := make([]float64, o.runs)
	for r := range samples {
		var n, s int64
		samples[r], n, s = oneRun(o)
		if n != wantCount || s != wantSum {
			msg := fmt.Sprintf("received %d messages summing to %d, expected %d and %d", n, s, wantCount, wantSum)
			fmt.Fprintln(os.Stderr, msg)
			fmt.Printf(`{"suite":"select","impl":"go","peer":true,"metric":"msgs_per_s","value":null,`+
				`"unit":"msgs/s","status":"failed","error":"%s","params":%s,"runs":%d}`+"\n", msg, o.params(), o.runs)
			os.Exit(1)
		}
	}
	sorted := append([]float64(nil), samples...)
	sort.Float64s(sorted)
	k := len(sorted)
	med := sorted[k/2]
	if k%2 == 0 {
		med = (sorted[k/2-1] + sorted[k/2]) / 2
	}
	var sb strings.Builder
	for i, s := range samples {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%.1f", s)
	}
	fmt.Printf(`{"suite":"select","impl":"go","peer":true,"metric":"msgs_per_s","value":%.1f,`+
		`"unit":"msgs/s","params":%s,"runs":%d,"min":%.1f,"max":%.1f,"samples":[%s]}`+"\n",
		med, o.params(), k, sorted[0], sorted[k-1], sb.String())
}
