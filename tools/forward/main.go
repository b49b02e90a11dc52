// Command forward relays TCP connections from a port on the target to a
// service behind it, the way LXD's proxy device (forkproxy) or docker-proxy
// do, for when that proxy cannot be used (see runtimes/lxd.py: LXD waits a
// fixed 10 s for its helper, which a slow or emulated board can miss):
//
//	forward -listen 0.0.0.0:18301 -to 10.94.3.17:8080
//
// Each accepted connection gets its own connection to -to, opened only then:
// while the service is not up yet, the client's connection is closed at once,
// so a readiness probe polling through it simply tries again. It prints one
// JSON line once it listens ({"listening": ADDR, "to": ADDR}) and runs until
// it is killed. It exits 1 when it cannot listen, 64 on usage errors.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

const dialTimeout = 2 * time.Second

func main() {
	listen := flag.String("listen", "", "address:port to accept connections on")
	to := flag.String("to", "", "address:port each connection is relayed to")
	flag.Parse()
	if *listen == "" || *to == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: forward -listen ADDR:PORT -to ADDR:PORT")
		os.Exit(64)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "forward: %v\n", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(map[string]string{"listening": ln.Addr().String(), "to": *to})
	fmt.Println(string(line))
	if err := serve(ln, *to); err != nil {
		fmt.Fprintf(os.Stderr, "forward: %v\n", err)
		os.Exit(1)
	}
}

// serve accepts until the listener is closed (nil) or fails (the error).
func serve(ln net.Listener, to string) error {
	for {
		client, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go relay(client, to)
	}
}

// relay copies both ways until both sides are done; a side that finishes
// sending half-closes the other, as a TCP peer would see it end to end.
func relay(client net.Conn, to string) {
	defer client.Close()
	backend, err := net.DialTimeout("tcp", to, dialTimeout)
	if err != nil {
		return // not listening yet, or gone: the client sees its connection closed
	}
	defer backend.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go pipe(backend, client, &wg)
	go pipe(client, backend, &wg)
	wg.Wait()
}

func pipe(dst, src net.Conn, wg *sync.WaitGroup) {
	defer wg.Done()
	_, _ = io.Copy(dst, src)
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	} else {
		_ = dst.Close()
	}
}
