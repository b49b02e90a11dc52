package main

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// An upper-casing line server stands for the service behind the forward.
func upperServer(t *testing.T) net.Listener {
	ln := listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = io.WriteString(c, strings.ToUpper(line))
				}
			}(c)
		}
	}()
	return ln
}

func forwardTo(t *testing.T, to string) net.Listener {
	ln := listen(t)
	go func() { _ = serve(ln, to) }()
	return ln
}

func TestRelaysBothWaysOnManyConnections(t *testing.T) {
	backend := upperServer(t)
	defer backend.Close()
	fwd := forwardTo(t, backend.Addr().String())
	defer fwd.Close()
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", fwd.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		for _, word := range []string{"ping\n", "again\n"} {
			if _, err := io.WriteString(c, word); err != nil {
				t.Fatal(err)
			}
			got, err := r.ReadString('\n')
			if err != nil || got != strings.ToUpper(word) {
				t.Fatalf("connection %d: got %q, %v; want %q", i, got, err, strings.ToUpper(word))
			}
		}
		c.Close()
	}
}

func TestHalfCloseReachesTheService(t *testing.T) {
	// A client that sends and then closes its side still gets the whole answer.
	backend := listen(t)
	defer backend.Close()
	go func() {
		c, err := backend.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		all, _ := io.ReadAll(c) // until the client's half-close arrives through the forward
		_, _ = c.Write([]byte("got " + string(all)))
	}()
	fwd := forwardTo(t, backend.Addr().String())
	defer fwd.Close()
	c, err := net.Dial("tcp", fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "request")
	_ = c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "got request" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestClosesTheClientWhileTheServiceIsNotUp(t *testing.T) {
	gone := listen(t)
	to := gone.Addr().String()
	gone.Close() // nothing listens there: a service not started yet
	fwd := forwardTo(t, to)
	defer fwd.Close()
	c, err := net.Dial("tcp", fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err == nil {
		t.Fatalf("want the connection closed, got %d bytes, %v", n, err)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection was held open instead of closed")
	}
}

func TestServeReturnsWhenTheListenerCloses(t *testing.T) {
	ln := listen(t)
	done := make(chan error, 1)
	go func() { done <- serve(ln, "127.0.0.1:1") }()
	ln.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return")
	}
}
