package main

import (
	"bufio"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	e, err := parseURL("http://127.0.0.1:8080/io?x=1")
	if err != nil || e.addr != "127.0.0.1:8080" || !strings.HasPrefix(string(e.request), "GET /io?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n") {
		t.Fatalf("got %+v, %v", e, err)
	}
	if e, _ := parseURL("http://example"); e.addr != "example:80" || !strings.HasPrefix(string(e.request), "GET / ") {
		t.Fatalf("default port and path: %+v", e)
	}
	if _, err := parseURL("https://example/"); err == nil {
		t.Fatal("https accepted")
	}
}

func TestChunkedBodyIsReadToItsEnd(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("3\r\nabc\r\n2;ext\r\nde\r\n0\r\nTrailer: x\r\n\r\nNEXT"))
	n, err := readChunked(r)
	rest, _ := r.ReadString('\n')
	if err != nil || n != 5 || rest != "NEXT" {
		t.Fatalf("n=%d err=%v rest=%q", n, err, rest)
	}
}

// One connection carries several exchanges (keep-alive), a status is read, and a server that
// closes after its answer makes the next request open a new connection.
func TestExchangesOverOneConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				for i := 0; ; i++ {
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					if i == 1 {
						c.Write([]byte("HTTP/1.1 503 Busy\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy"))
						return
					}
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
				}
			}(c)
		}
	}()
	e, _ := parseURL("http://" + ln.Addr().String() + "/")
	c := &conn{target: e, timeout: 2 * time.Second}
	defer c.close()
	for i, want := range []int{200, 503, 200} {
		status, n, err := c.get()
		if err != nil || status != want || n == 0 {
			t.Fatalf("request %d: status %d, %d bytes, %v", i, status, n, err)
		}
	}
	if accepted.Load() != 2 {
		t.Fatalf("%d connections, want 2 (kept alive, then reopened after Connection: close)", accepted.Load())
	}
}
