package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// paceIterations is the fixed work -pace times: about 50 ms on one core of
// this project's x86-64 machine (edgebench.experiments.windows'
// REFERENCE_PACE_NS), around a second under an emulator.
const paceIterations = 10_000_000

// paceRuns: the best of these is the device's pace (the least disturbed run).
const paceRuns = 3

// paceWork is a single-threaded integer loop with data-dependent branches and
// loads from a small table, the kind of work an HTTP handler's compute does;
// it returns a value so that the compiler cannot drop it.
func paceWork(n int) uint64 {
	var table [4096]uint64
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		j := x & 4095
		table[j] += x
		if table[j]&1 == 0 {
			x += table[(j+1)&4095]
		}
	}
	return x
}

type paceResult struct {
	PaceNs     int64   `json:"pace_ns"`
	RunsNs     []int64 `json:"runs_ns"`
	Iterations int     `json:"iterations"`
	Sink       uint64  `json:"sink"`
}

// runPace times paceWork paceRuns times and prints one JSON line: the best
// run's nanoseconds (how fast this device does fixed work), every run's, and
// the iteration count.
func runPace(out io.Writer, iterations int) int {
	res := paceResult{Iterations: iterations}
	for i := 0; i < paceRuns; i++ {
		start := time.Now()
		res.Sink ^= paceWork(iterations)
		took := time.Since(start).Nanoseconds()
		res.RunsNs = append(res.RunsNs, took)
		if res.PaceNs == 0 || took < res.PaceNs {
			res.PaceNs = took
		}
	}
	line, _ := json.Marshal(res)
	fmt.Fprintln(out, string(line))
	return 0
}
