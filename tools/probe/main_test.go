package main

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// serve answers each connection with reply once it has read a line (or at once, if
// readFirst is false), like a Redis server answering PING.
func serve(t *testing.T, reply string, readFirst bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				if readFirst {
					bufio.NewReader(c).ReadString('\n')
				}
				c.Write([]byte(reply))
			}(c)
		}
	}()
	return ln.Addr().String()
}

func once(t *testing.T, tg target) (connected, ready bool) {
	d := net.Dialer{Timeout: time.Second}
	c, r := attempt(&d, tg, time.Now().Add(2*time.Second), time.Second)
	return c != nil, r != nil
}

func TestTCPExchangeReadyOnlyOnTheExpectedReply(t *testing.T) {
	pong := serve(t, "+PONG\r\n", true)
	tg, err := parseTCPTarget(pong, `PING\r\n`, "+PONG")
	if err != nil {
		t.Fatal(err)
	}
	if string(tg.request) != "PING\r\n" {
		t.Fatalf("-send escapes not interpreted: %q", tg.request)
	}
	if c, r := once(t, tg); !c || !r {
		t.Fatalf("PONG server: connected=%v ready=%v", c, r)
	}
	loading := serve(t, "-LOADING Redis is loading the dataset in memory\r\n", true)
	tg, _ = parseTCPTarget(loading, `PING\r\n`, "+PONG")
	if c, r := once(t, tg); !c || r {
		t.Fatalf("LOADING server must be connected but not ready: connected=%v ready=%v", c, r)
	}
}

func TestTCPWithoutExpectIsReadyOnConnect(t *testing.T) {
	tg, err := parseTCPTarget(serve(t, "", false), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if c, r := once(t, tg); !c || !r {
		t.Fatalf("connected=%v ready=%v", c, r)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	tg, _ = parseTCPTarget(addr, "", "")
	if c, r := once(t, tg); c || r {
		t.Fatalf("closed port: connected=%v ready=%v", c, r)
	}
}

func TestHTTPTargetNeedsA200(t *testing.T) {
	ok := serve(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true)
	tg, err := parseTarget("http://" + ok + "/io")
	if err != nil {
		t.Fatal(err)
	}
	if _, r := once(t, tg); !r {
		t.Fatal("200 not ready")
	}
	tg, _ = parseTarget("http://" + serve(t, "HTTP/1.1 503 Service Unavailable\r\n\r\n", true) + "/io")
	if c, r := once(t, tg); !c || r {
		t.Fatalf("503: connected=%v ready=%v", c, r)
	}
}

func TestBadTargetsAreRefused(t *testing.T) {
	if _, err := parseTCPTarget("localhost", "", ""); err == nil {
		t.Error("-tcp without a port accepted")
	}
	if _, err := parseTCPTarget("127.0.0.1:6379", `bad\q`, ""); err == nil {
		t.Error("-send with an invalid escape accepted")
	}
	if _, err := parseTarget("https://x/"); err == nil {
		t.Error("https accepted")
	}
}

func TestStampPrefixesEveryLineWithTheArrivalOfItsFirstByte(t *testing.T) {
	start := true
	got := string(stampLines([]byte("a\nb"), 5, &start))
	got += string(stampLines([]byte("c\n\nd\n"), 7, &start))
	want := "5\ta\n5\tbc\n7\t\n7\td\n"
	if got != want {
		t.Fatalf("stamped %q, want %q", got, want)
	}
}

func TestStampCopiesItsInputUnchanged(t *testing.T) {
	path := t.TempDir() + "/stamps"
	var out strings.Builder
	clock := int64(0)
	now := func() time.Time { clock += 1000; return time.Unix(0, clock) }
	if code := runStamp(path, strings.NewReader("boot\r\nready\r\n"), &out, now); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if out.String() != "boot\r\nready\r\n" {
		t.Fatalf("copied %q", out.String())
	}
	data, _ := os.ReadFile(path)
	if string(data) != "1000\tboot\r\n1000\tready\r\n" {
		t.Fatalf("stamps %q", data)
	}
}
