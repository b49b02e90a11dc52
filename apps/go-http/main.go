// Command go-http is the edgebench reference service: the same tiny HTTP
// server is run natively, in Docker, in a Nanos unikernel and in LXD, so it
// deliberately uses only the standard library and has no configuration beyond
// the listening port.
//
// Endpoints (bodies are byte-for-byte identical to apps/node-http):
//
//	GET /io             200 text/plain "ok\n"
//	GET /compute?iter=N 200 application/json {"iter":N,"sha256":"<hex>"}\n
//	                    N defaults to 100, must be an integer in 1..10000000
//	anything else       404
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

const (
	defaultIter = 100 // value used in the paper
	maxIter     = 10000000
)

const (
	textPlain = "text/plain; charset=utf-8"
	appJSON   = "application/json"
)

// listeningEvent is the single line printed once the socket is bound. The
// harness timestamps "ready" from unix_ns, so field order and names are part
// of the contract shared with apps/node-http.
type listeningEvent struct {
	Event      string `json:"event"`
	App        string `json:"app"`
	UnixNs     int64  `json:"unix_ns"`
	Port       int    `json:"port"`
	Pid        int    `json:"pid"`
	Gomaxprocs int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
}

func main() {
	port := 8080
	if s := os.Getenv("PORT"); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "go-http: invalid PORT %q\n", s)
			os.Exit(64)
		}
		port = p
	}
	flag.IntVar(&port, "port", port, "TCP port to listen on (overrides $PORT)")
	flag.Parse()

	// Exit immediately rather than draining: the benchmark only needs the
	// process gone, and without a handler PID 1 in a container would ignore
	// SIGTERM entirely.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		os.Exit(0)
	}()

	ln, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-http: %v\n", err)
		os.Exit(1)
	}
	// Read the clock before anything else so the timestamp reflects the bind,
	// not JSON encoding or the write.
	now := time.Now().UnixNano()

	line, _ := json.Marshal(listeningEvent{
		Event:      "listening",
		App:        "go-http",
		UnixNs:     now,
		Port:       ln.Addr().(*net.TCPAddr).Port, // real port, even for -port 0
		Pid:        os.Getpid(),
		Gomaxprocs: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
	})
	// os.Stdout is unbuffered, so this single write reaches a file or pipe
	// before the first request can be served.
	os.Stdout.Write(append(line, '\n'))

	if err := http.Serve(ln, http.HandlerFunc(handle)); err != nil {
		fmt.Fprintf(os.Stderr, "go-http: %v\n", err)
		os.Exit(1)
	}
}

// handle routes by hand instead of using ServeMux patterns so that every
// unmatched method or path gets the same plain 404 as the Node twin (ServeMux
// would answer 405 or redirect in some cases).
func handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		reply(w, http.StatusNotFound, textPlain, "not found\n")
		return
	}
	switch r.URL.Path {
	case "/io":
		reply(w, http.StatusOK, textPlain, "ok\n")
	case "/compute":
		n, ok := parseIter(r)
		if !ok {
			reply(w, http.StatusBadRequest, textPlain, "iter must be an integer in 1..10000000\n")
			return
		}
		reply(w, http.StatusOK, appJSON, fmt.Sprintf("{\"iter\":%d,\"sha256\":\"%s\"}\n", n, compute(n)))
	default:
		reply(w, http.StatusNotFound, textPlain, "not found\n")
	}
}

func reply(w http.ResponseWriter, status int, ctype, body string) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write([]byte(body))
}

// parseIter accepts only plain decimal digits (no sign, no spaces) so that
// Go and Node reject exactly the same inputs.
func parseIter(r *http.Request) (int, bool) {
	q := r.URL.Query()
	if !q.Has("iter") {
		return defaultIter, true
	}
	s := q.Get("iter")
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n < 1 || n > maxIter {
		return 0, false
	}
	return int(n), true
}

// compute performs exactly n SHA-256 computations: one over a fixed 64-byte
// payload (bytes 0..63), then n-1 over the previous 32-byte digest.
func compute(n int) string {
	var payload [64]byte
	for i := range payload {
		payload[i] = byte(i)
	}
	h := sha256.Sum256(payload[:])
	for i := 1; i < n; i++ {
		h = sha256.Sum256(h[:])
	}
	return hex.EncodeToString(h[:])
}
