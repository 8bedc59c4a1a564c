// SPDX-License-Identifier: MIT
// ring-go: the ring benchmark (docs/ring.md) on goroutines.  Each goroutine's
// inbox is an unbuffered channel; coroutine 0 of a ring sends to its right
// neighbour's inbox, the others relay from their own inbox to the right.
// --procs 1 sets GOMAXPROCS to 1 (impl "go-1t"); --procs 0 keeps the
// default, one P per core (impl "go").
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type opts struct {
	n, coroutines, rounds, runs, procs int
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "ring-go: %s\n", msg)
	fmt.Fprintln(os.Stderr, "usage: ring-go --n N --coroutines C --rounds M [--runs R] [--procs 1|0]")
	os.Exit(2)
}

func parse() opts {
	var o opts
	fs := flag.NewFlagSet("ring-go", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 0, "coroutines per ring (>= 2)")
	fs.IntVar(&o.coroutines, "coroutines", 0, "all coroutines, a multiple of n")
	fs.IntVar(&o.rounds, "rounds", 0, "rounds of each ring per run")
	fs.IntVar(&o.runs, "runs", 1, "timed runs; the median is reported")
	fs.IntVar(&o.procs, "procs", 0, "GOMAXPROCS: 1, or 0 for the default (cores)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		usage(err.Error())
	}
	if fs.NArg() != 0 {
		usage("unexpected argument " + fs.Arg(0))
	}
	if o.n < 2 || o.coroutines < 1 || o.rounds < 1 || o.runs < 1 {
		usage("--n (>= 2), --coroutines, --rounds and --runs must be positive")
	}
	if o.coroutines%o.n != 0 {
		usage(fmt.Sprintf("--coroutines %d is not a multiple of --n %d", o.coroutines, o.n))
	}
	if o.procs != 0 && o.procs != 1 {
		usage("--procs must be 1 or 0")
	}
	return o
}

// rssBytes is VmRSS from /proc/self/status (0 if unreadable).
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "VmRSS:") {
			fields := strings.Fields(line)
			kib, _ := strconv.ParseInt(fields[1], 10, 64)
			return kib * 1024
		}
	}
	return 0
}

// oneRun creates the rings, waits until every goroutine has started, measures
// the RSS they added (first run only), then times the rings to completion.
// It returns msgs/s and the number of rounds that came back wrong.
func oneRun(o opts, rssPerCoro *float64) (float64, int64) {
	var ready, done sync.WaitGroup
	var errMu sync.Mutex
	var errors int64
	start := make(chan struct{})
	n, rounds := o.n, o.rounds

	runtime.GC()
	rss0 := rssBytes()
	inbox := make([]chan int, o.coroutines)
	for k := range inbox {
		inbox[k] = make(chan int)
	}
	ready.Add(o.coroutines)
	done.Add(o.coroutines / n)
	for base := 0; base < o.coroutines; base += n {
		for i := 0; i < n; i++ {
			in, right := inbox[base+i], inbox[base+(i+1)%n]
			if i == 0 {
				go func() {
					defer done.Done()
					ready.Done()
					<-start
					v, bad := 0, int64(0)
					for r := 0; r < rounds; r++ {
						right <- v + 1
						back := <-in
						if back != v+n {
							bad++
						}
						v = back
					}
					if bad != 0 {
						errMu.Lock()
						errors += bad
						errMu.Unlock()
					}
				}()
			} else {
				go func() {
					ready.Done()
					for r := 0; r < rounds; r++ {
						right <- (<-in) + 1
					}
				}()
			}
		}
	}
	ready.Wait()
	if rssPerCoro != nil {
		*rssPerCoro = float64(rssBytes()-rss0) / float64(o.coroutines)
	}
	// Finish the collection that creating the rings set off, so that it is
	// not charged to the timed part.
	runtime.GC()
	t0 := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(t0).Seconds()
	return float64(o.coroutines) * float64(o.rounds) / elapsed, errors
}

func main() {
	o := parse()
	impl := "go"
	if o.procs == 1 {
		runtime.GOMAXPROCS(1)
		impl = "go-1t"
	}
	params := fmt.Sprintf(`{"n":%d,"coroutines":%d,"rounds":%d}`, o.n, o.coroutines, o.rounds)
	samples := make([]float64, o.runs)
	var rss float64
	for r := 0; r < o.runs; r++ {
		var p *float64
		if r == 0 {
			p = &rss
		}
		var bad int64
		samples[r], bad = oneRun(o, p)
		if bad != 0 {
			msg := fmt.Sprintf("%d rounds came back with a wrong message", bad)
			fmt.Fprintln(os.Stderr, msg)
			fmt.Printf(`{"suite":"ring","impl":"%s","peer":true,"metric":"msgs_per_s","value":null,`+
				`"unit":"msgs/s","status":"failed","error":"%s","params":%s,"runs":%d}`+"\n",
				impl, msg, params, o.runs)
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
	fmt.Printf(`{"suite":"ring","impl":"%s","peer":true,"metric":"msgs_per_s","value":%.1f,`+
		`"unit":"msgs/s","params":%s,"runs":%d,"min":%.1f,"max":%.1f,"samples":[%s]}`+"\n",
		impl, med, params, k, sorted[0], sorted[k-1], sb.String())
	fmt.Printf(`{"suite":"ring","impl":"%s","peer":true,"metric":"rss_bytes_per_coro","value":%.1f,`+
		`"unit":"bytes","params":%s,"runs":1,"min":%.1f,"max":%.1f}`+"\n",
		impl, rss, params, rss, rss)
}
