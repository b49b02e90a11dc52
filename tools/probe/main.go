// Command probe measures time-to-ready the same way for every deployment
// mode (native process, docker run, unikernel launcher, lxc exec, ...): it
// timestamps just before spawning the launch command, then polls the service
// until it answers: an HTTP URL over raw TCP until a 200 status line arrives,
// or a TCP service until it answers a protocol exchange (Redis: PING, +PONG).
// Polling happens in-process so that no fork/exec per attempt skews the result.
//
//	probe -url http://127.0.0.1:8080/io [-interval 1ms] [-timeout 60s]
//	      [-connect-timeout 50ms] [-read-timeout 1s]
//	      [-stdout FILE] [-stderr FILE] -- COMMAND ARGS...
//	probe -tcp 127.0.0.1:6379 [-send 'PING\r\n' -expect +PONG] ... -- COMMAND ARGS...
//	probe -batch [-timeout 60s] [-stdout FILE] [-stderr FILE] -- COMMAND ARGS...
//	COMMAND | probe -stamp FILE
//	probe -pace
//
// With -tcp and no -expect, an accepted connection is ready; with -expect, the
// first line read back must start with it (-send is written first, with Go
// escapes such as \r\n interpreted).
//
// With -batch it runs a program to completion instead (see batch.go); with
// -stamp it timestamps the lines of its input on the host's clock (stamp.go);
// with -pace it times a fixed CPU workload, how fast this device is (pace.go).
//
// It prints exactly one JSON line (see result) and exits 0 when ready,
// 2 on timeout, 3 when the launcher fails, 64 on usage errors. The launched
// process is left running in its own session; the caller stops it (its pid
// is also its process group id).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	exitReady    = 0
	exitTimeout  = 2
	exitLauncher = 3
	exitUsage    = 64
)

// result is the single JSON line on stdout. Pointers encode as null when the
// event never happened.
type result struct {
	StartUnixNs         int64   `json:"start_unix_ns"`
	FirstConnectUnixNs  *int64  `json:"first_connect_unix_ns"`
	ReadyUnixNs         *int64  `json:"ready_unix_ns"`
	ReadyAfterNs        *int64  `json:"ready_after_ns"`
	Attempts            int     `json:"attempts"`
	Pid                 *int    `json:"pid"`
	LauncherExitCode    *int    `json:"launcher_exit_code"`
	LauncherExitAfterNs *int64  `json:"launcher_exit_after_ns"`
	Error               *string `json:"error"`
}

type exitInfo struct {
	code int
	at   time.Time
}

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	rawURL := fs.String("url", "", "URL to poll until it answers 200 (http only)")
	tcpAddr := fs.String("tcp", "", "host:port of a TCP service to poll instead of -url")
	send := fs.String("send", "", "with -tcp: what to write once connected (Go escapes: \\r\\n)")
	expect := fs.String("expect", "", "with -tcp: the reply's first line must start with this")
	interval := fs.Duration("interval", time.Millisecond, "time between attempt starts")
	timeout := fs.Duration("timeout", 60*time.Second, "give up this long after spawning")
	connectTimeout := fs.Duration("connect-timeout", 50*time.Millisecond, "TCP connect timeout per attempt")
	readTimeout := fs.Duration("read-timeout", time.Second, "time to wait for the status line once connected")
	stdoutPath := fs.String("stdout", "", "write the command's stdout to FILE (default /dev/null)")
	stderrPath := fs.String("stderr", "", "write the command's stderr to FILE (default /dev/null)")
	afterLauncher := fs.Bool("after-launcher", false, "start polling only once a detaching launcher (docker run -d) has exited")
	batch := fs.Bool("batch", false, "run COMMAND to completion and report its timing and exit (no -url)")
	stamp := fs.String("stamp", "", "copy stdin to stdout, and each line to FILE prefixed with the host's unix ns at its arrival (no COMMAND)")
	pace := fs.Bool("pace", false, "time a fixed single-threaded CPU workload and print its best run (no COMMAND)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: probe -url URL [flags] -- COMMAND ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return exitUsage
	}
	usage := func(msg string) int {
		fmt.Fprintln(os.Stderr, "probe:", msg)
		fs.Usage()
		return exitUsage
	}
	argv := fs.Args()
	if *stamp != "" {
		return runStamp(*stamp, os.Stdin, os.Stdout, time.Now)
	}
	if *pace {
		return runPace(os.Stdout, paceIterations)
	}
	if len(argv) == 0 {
		return usage("missing COMMAND")
	}
	if *interval < 0 || *timeout <= 0 || *connectTimeout <= 0 || *readTimeout <= 0 {
		return usage("durations must be positive")
	}
	if *batch {
		return runBatch(argv, *stdoutPath, *stderrPath, *timeout)
	}
	var target target
	var err error
	if *tcpAddr != "" {
		target, err = parseTCPTarget(*tcpAddr, *send, *expect)
	} else {
		target, err = parseTarget(*rawURL)
	}
	if err != nil {
		return usage(err.Error())
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	// A new session keeps the child alive after the probe exits and out of
	// reach of signals aimed at the probe's process group or terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Stdin left nil means /dev/null. Real *os.File outputs are handed to the
	// child directly, so no copying goroutine ties its lifetime to ours.
	if cmd.Stdout, err = openOutput(*stdoutPath); err != nil {
		return usage(err.Error())
	}
	if cmd.Stderr, err = openOutput(*stderrPath); err != nil {
		return usage(err.Error())
	}

	var res result
	report := func(code int, msg string) int { return printResult(&res, &res.Error, code, msg) }

	start := time.Now()
	res.StartUnixNs = start.UnixNano()
	if err := cmd.Start(); err != nil {
		return report(exitLauncher, "start: "+err.Error())
	}
	pid := cmd.Process.Pid
	res.Pid = &pid

	exited := make(chan exitInfo, 1)
	go func() {
		err := cmd.Wait()
		exited <- exitInfo{code: exitCode(cmd.ProcessState, err), at: time.Now()}
	}()
	// noteExit records the launcher's exit; a non-zero code is fatal because
	// a failed `docker run -d` (or a crashed server) will never become ready.
	noteExit := func(e exitInfo) bool {
		code, after := e.code, e.at.Sub(start).Nanoseconds()
		res.LauncherExitCode, res.LauncherExitAfterNs = &code, &after
		exited = nil // never fires again in select
		return code != 0
	}

	deadline := start.Add(*timeout)
	dialer := net.Dialer{Timeout: *connectTimeout}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	if *afterLauncher {
		// Connecting through docker-proxy before the container's veth is up leaves the
		// neighbour entry unresolved, and every connection then waits for the kernel's
		// ARP retransmit (1 s): polling early would measure the probe, not the runtime.
		select {
		case e := <-exited:
			if noteExit(e) {
				return report(exitLauncher, fmt.Sprintf("launcher exited with code %d before ready", e.code))
			}
		case <-timer.C:
			return report(exitTimeout, fmt.Sprintf("launcher still running after %s", *timeout))
		}
	}
	for {
		attemptStart := time.Now()
		res.Attempts++
		connected, readyAt := attempt(&dialer, target, deadline, *readTimeout)
		if connected != nil && res.FirstConnectUnixNs == nil {
			ns := connected.UnixNano()
			res.FirstConnectUnixNs = &ns
		}
		if readyAt != nil {
			ns, after := readyAt.UnixNano(), readyAt.Sub(start).Nanoseconds()
			res.ReadyUnixNs, res.ReadyAfterNs = &ns, &after
			// Report the launcher's exit if it already happened, without
			// waiting for it: a native server keeps running.
			select {
			case e := <-exited:
				noteExit(e)
			default:
			}
			return report(exitReady, "")
		}

		select {
		case e := <-exited:
			if noteExit(e) {
				return report(exitLauncher, fmt.Sprintf("launcher exited with code %d before ready", e.code))
			}
			// Exit 0 (e.g. `docker run -d`): keep polling at the normal pace.
		case <-timer.C:
			return report(exitTimeout, fmt.Sprintf("not ready after %s", *timeout))
		default:
		}
		// Go's timers wake with about 1 ms granularity when the process is idle (the
		// netpoller waits in whole milliseconds); nanosleep blocks this thread for
		// the exact remainder without spinning on a CPU the launch may need.
		if rest := time.Until(attemptStart.Add(*interval)); rest > 0 {
			ts := syscall.NsecToTimespec(rest.Nanoseconds())
			for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
			}
		}
	}
}

type target struct {
	addr    string // host:port to dial
	request []byte // written once connected (may be empty)
	// accepts decides from the first line read back; nil: the connection alone is ready.
	accepts func(line string) bool
}

// httpOK: "HTTP/1.1 200 OK", the code is the second field.
func httpOK(line string) bool {
	f := strings.Fields(line)
	return len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") && f[1] == "200"
}

func parseTCPTarget(addr, send, expect string) (target, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return target{}, fmt.Errorf("-tcp must be host:port, got %q", addr)
	}
	if send != "" {
		unquoted, err := strconv.Unquote(`"` + strings.ReplaceAll(send, `"`, `\"`) + `"`)
		if err != nil {
			return target{}, fmt.Errorf("-send %q: %v", send, err)
		}
		send = unquoted
	}
	t := target{addr: addr, request: []byte(send)}
	if expect != "" {
		t.accepts = func(line string) bool { return strings.HasPrefix(line, expect) }
	}
	return t, nil
}

func parseTarget(raw string) (target, error) {
	if raw == "" {
		return target{}, errors.New("missing -url")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return target{}, fmt.Errorf("-url must be http://host[:port]/path, got %q", raw)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u.RequestURI(), u.Host)
	return target{addr: addr, request: []byte(req), accepts: httpOK}, nil
}

// printResult writes the one JSON line (with msg as its error, if any) and
// returns code, so that every exit path reports the same way.
func printResult(res any, errField **string, code int, msg string) int {
	if msg != "" {
		*errField = &msg
	}
	line, _ := json.Marshal(res)
	os.Stdout.Write(append(line, '\n'))
	return code
}

func openOutput(path string) (*os.File, error) {
	if path == "" {
		path = os.DevNull
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644) // one launch per file: a stale line must not pass for this launch's
}

// attempt does one connect + request + first-line read. It returns when the
// TCP connection was established (nil if not) and when an accepted first line
// was read (nil if not). Connections that are accepted and then reset or
// answered otherwise (e.g. a port proxy in front of a not yet started server)
// count as connected but not ready.
func attempt(d *net.Dialer, t target, deadline time.Time, readTimeout time.Duration) (connected, ready *time.Time) {
	conn, err := d.Dial("tcp", t.addr)
	if err != nil {
		return nil, nil
	}
	now := time.Now()
	connected = &now
	defer conn.Close()

	ioDeadline := now.Add(readTimeout)
	if deadline.Before(ioDeadline) {
		ioDeadline = deadline
	}
	if t.accepts == nil {
		return connected, connected
	}
	conn.SetDeadline(ioDeadline)
	if len(t.request) > 0 {
		if _, err := conn.Write(t.request); err != nil {
			return connected, nil
		}
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return connected, nil
	}
	at := time.Now()
	if t.accepts(line) {
		return connected, &at
	}
	return connected, nil
}

// exitCode follows the shell convention (128+signal) for signalled children,
// so a killed launcher still reports a non-zero integer.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return -1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
