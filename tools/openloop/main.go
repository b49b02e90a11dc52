// openloop offers HTTP GET requests at a fixed rate and times each from when it was due, not
// from when it was sent: a stalled server delays what is queued behind it, and that delay is
// counted (no coordinated omission), as wrk2 and oha --latency-correction do. It is edgebench's
// open-loop load generator where the load host has neither; the standard library only, so it
// builds offline for any target.
//
//	openloop -url http://127.0.0.1:8080/io -rate 2000 -duration 10s -connections 16
//
// Prints one JSON object: offered and achieved rate, errors, and latency percentiles in
// microseconds, corrected (from the due time) and service (from the send).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

type sample struct {
	corrected, service time.Duration
}

type outcome struct {
	samples []sample
	status  int // non-2xx/3xx answers (their latency counts)
	timeout int
	connect int
	other   int
	bytes   int64
	last    time.Time
}

type stats struct {
	Mean  float64 `json:"mean"`
	Stdev float64 `json:"stdev"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

type report struct {
	OfferedRPS  float64        `json:"offered_rps"`
	AchievedRPS float64        `json:"achieved_rps"`
	Requests    int            `json:"requests"`
	DurationUS  int64          `json:"duration_us"`
	Bytes       int64          `json:"bytes"`
	Errors      map[string]int `json:"errors"`
	Latency     *stats         `json:"latency_us"`
	Service     *stats         `json:"service_latency_us"`
}

// percentiles of microsecond values (nearest rank); nil when there are none.
func percentiles(values []float64) *stats {
	if len(values) == 0 {
		return nil
	}
	sort.Float64s(values)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(values)))) - 1
		if i < 0 {
			i = 0
		}
		return values[i]
	}
	var sum, sq float64
	for _, v := range values {
		sum += v
	}
	mean := sum / float64(len(values))
	for _, v := range values {
		sq += (v - mean) * (v - mean)
	}
	return &stats{Mean: mean, Stdev: math.Sqrt(sq / float64(len(values))), P50: rank(50), P90: rank(90),
		P99: rank(99), P999: rank(99.9), Max: values[len(values)-1]}
}

func classify(err error, o *outcome) {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		o.timeout++
	case strings.Contains(err.Error(), "connect:") || strings.Contains(err.Error(), "dial"):
		o.connect++
	default:
		o.other++
	}
}

func main() {
	url := flag.String("url", "", "the URL to GET")
	rate := flag.Float64("rate", 0, "requests per second to offer")
	duration := flag.Duration("duration", 10*time.Second, "how long to offer them")
	connections := flag.Int("connections", 16, "connections (at most this many requests in flight)")
	timeout := flag.Duration("timeout", 2*time.Second, "a request taking longer is a timeout error")
	flag.Parse()
	if *url == "" || *rate <= 0 || *duration <= 0 || *connections < 1 {
		fmt.Fprintln(os.Stderr, "openloop: need -url, -rate > 0, -duration > 0 and -connections >= 1")
		os.Exit(2)
	}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: *connections, MaxConnsPerHost: *connections, DisableCompression: true}}

	n := int(math.Round(*rate * duration.Seconds()))
	if n < 1 {
		n = 1
	}
	start := time.Now().Add(20 * time.Millisecond)
	due := make(chan time.Time, n) // the whole schedule; the first free connection takes the next
	for i := 0; i < n; i++ {
		due <- start.Add(time.Duration(float64(i) / *rate * float64(time.Second)))
	}
	close(due)

	outcomes := make([]outcome, *connections)
	var wg sync.WaitGroup
	for w := range outcomes {
		wg.Add(1)
		go func(o *outcome) {
			defer wg.Done()
			for d := range due {
				if wait := time.Until(d); wait > 0 {
					time.Sleep(wait)
				}
				sent := time.Now()
				resp, err := client.Get(*url)
				if err == nil {
					var read int64
					read, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					o.bytes += read
					if resp.StatusCode < 200 || resp.StatusCode >= 400 {
						o.status++
					}
				}
				end := time.Now()
				o.last = end
				if err != nil {
					classify(err, o)
					continue
				}
				o.samples = append(o.samples, sample{end.Sub(d), end.Sub(sent)})
			}
		}(&outcomes[w])
	}
	wg.Wait()

	errs := map[string]int{"status": 0, "timeout": 0, "connect": 0, "other": 0}
	var corrected, service []float64
	var bytes int64
	last := start
	for _, o := range outcomes {
		for _, s := range o.samples {
			corrected = append(corrected, float64(s.corrected.Microseconds()))
			service = append(service, float64(s.service.Microseconds()))
		}
		errs["status"] += o.status
		errs["timeout"] += o.timeout
		errs["connect"] += o.connect
		errs["other"] += o.other
		bytes += o.bytes
		if o.last.After(last) {
			last = o.last
		}
	}
	elapsed := last.Sub(start)
	answered := len(corrected)
	achieved := 0.0
	if elapsed > 0 {
		achieved = float64(answered-errs["status"]) / elapsed.Seconds()
	}
	out := report{OfferedRPS: *rate, AchievedRPS: achieved, Requests: n, DurationUS: elapsed.Microseconds(),
		Bytes: bytes, Errors: errs, Latency: percentiles(corrected), Service: percentiles(service)}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
