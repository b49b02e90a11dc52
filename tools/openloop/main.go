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
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
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
	target, err := parseURL(*url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openloop:", err)
		os.Exit(2)
	}

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
			c := &conn{target: target, timeout: *timeout}
			defer c.close()
			for d := range due {
				if wait := time.Until(d); wait > 0 {
					time.Sleep(wait)
				}
				sent := time.Now()
				status, read, err := c.get()
				end := time.Now()
				o.last = end
				if err != nil {
					classify(err, o)
					continue
				}
				o.bytes += read
				if status < 200 || status >= 400 {
					o.status++
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

// A plain HTTP/1.1 client over one kept-alive connection per worker: net/http's client costs
// several times more CPU per request, and on a small machine that shares its cores with the
// server, the generator's own cost would show up as latency.
type endpoint struct {
	addr    string
	request []byte
}

func parseURL(raw string) (endpoint, error) {
	rest, ok := strings.CutPrefix(raw, "http://")
	if !ok {
		return endpoint{}, fmt.Errorf("only http:// URLs: %q", raw)
	}
	host, path, found := strings.Cut(rest, "/")
	path = "/" + path
	if !found {
		path = "/"
	}
	addr := host
	if _, _, err := net.SplitHostPort(host); err != nil {
		addr = net.JoinHostPort(host, "80")
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: edgebench-openloop\r\n\r\n", path, host)
	return endpoint{addr, []byte(req)}, nil
}

type conn struct {
	target  endpoint
	timeout time.Duration
	c       net.Conn
	r       *bufio.Reader
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// get sends one request and reads the whole response: (status, body bytes, error). Any error
// drops the connection; the next request opens a new one.
func (c *conn) get() (int, int64, error) {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.target.addr, c.timeout)
		if err != nil {
			return 0, 0, fmt.Errorf("connect: %w", err)
		}
		c.c, c.r = nc, bufio.NewReaderSize(nc, 16<<10)
	}
	c.c.SetDeadline(time.Now().Add(c.timeout))
	status, n, err := c.exchange()
	if err != nil {
		c.close()
	}
	return status, n, err
}

func (c *conn) exchange() (int, int64, error) {
	if _, err := c.c.Write(c.target.request); err != nil {
		return 0, 0, err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return 0, 0, err
	}
	parts := strings.SplitN(line, " ", 3)
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, 0, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closing := int64(-1), false, false
	for {
		h, err := c.r.ReadString('\n')
		if err != nil {
			return 0, 0, err
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		name, value, _ := strings.Cut(h, ":")
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			length, _ = strconv.ParseInt(value, 10, 64)
		case "transfer-encoding":
			chunked = strings.Contains(strings.ToLower(value), "chunked")
		case "connection":
			closing = strings.EqualFold(value, "close")
		}
	}
	var n int64
	switch {
	case chunked:
		n, err = readChunked(c.r)
	case length >= 0:
		n, err = io.CopyN(io.Discard, c.r, length)
	default:
		n, err = io.Copy(io.Discard, c.r) // until the server closes
		closing = true
	}
	if err != nil {
		return 0, 0, err
	}
	if closing {
		c.close()
	}
	return status, n, nil
}

func readChunked(r *bufio.Reader) (int64, error) {
	var total int64
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return total, err
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
		if err != nil {
			return total, fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			for { // trailers, up to the empty line
				t, err := r.ReadString('\n')
				if err != nil || strings.TrimSpace(t) == "" {
					return total, err
				}
			}
		}
		n, err := io.CopyN(io.Discard, r, size+2) // the chunk and its CRLF
		total += n - 2
		if err != nil {
			return total, err
		}
	}
}
