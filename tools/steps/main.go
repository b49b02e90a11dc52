// Command steps runs a few commands one after the other inside one runtime
// instance (a container lives only as long as its first process) and reports
// each one's timing and output, for tools whose benchmark has phases, such as
// `sysbench fileio prepare`, `run`, `cleanup`:
//
//	steps [-dir DIR] [-path DIR] [-env NAME=VALUE]... CMD ARGS... [::: CMD ARGS...]...
//
// -path puts a directory in front of PATH (a program built on the target,
// which a container has in /usr/local/bin, natively lives in the workspace);
// -env sets a variable for every step (OMP_NUM_THREADS for OpenMP programs),
// the same way in every runtime.
//
// It prints exactly one JSON line: every step with its argv, start time,
// elapsed nanoseconds, exit code and captured stdout/stderr. It stops at the
// first step that fails and exits with that step's code. It needs no shell,
// so it works in an image built FROM scratch.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

type step struct {
	Argv        []string `json:"argv"`
	StartUnixNs int64    `json:"start_unix_ns"`
	ElapsedNs   int64    `json:"elapsed_ns"`
	ExitCode    int      `json:"exit_code"`
	Stdout      string   `json:"stdout"`
	Stderr      string   `json:"stderr"`
}

const separator = ":::"

// envFlags collects repeated -env NAME=VALUE flags.
type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, " ") }

func (e *envFlags) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("-env wants NAME=VALUE, got %q", v)
	}
	*e = append(*e, v)
	return nil
}

func main() {
	dir := flag.String("dir", "", "run every step in DIR (created if missing)")
	path := flag.String("path", "", "look programs up in DIR before PATH")
	var env envFlags
	flag.Var(&env, "env", "NAME=VALUE set for every step (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: steps [-dir DIR] [-path DIR] [-env NAME=VALUE]... CMD ARGS... [::: CMD ARGS...]...")
	}
	flag.Parse()
	if *path != "" {
		os.Setenv("PATH", *path+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		os.Setenv(name, value)
	}
	commands := split(flag.Args())
	if len(commands) == 0 {
		flag.Usage()
		os.Exit(64)
	}
	if *dir != "" {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "steps:", err)
			os.Exit(1)
		}
	}
	var done []step
	code := 0
	for _, argv := range commands {
		s := run(argv, *dir)
		done = append(done, s)
		if s.ExitCode != 0 {
			code = s.ExitCode
			break
		}
	}
	line, _ := json.Marshal(map[string]any{"steps": done})
	os.Stdout.Write(append(line, '\n'))
	os.Exit(code)
}

func split(args []string) [][]string {
	var out [][]string
	var cur []string
	for _, a := range args {
		if a == separator {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func run(argv []string, dir string) step {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	s := step{Argv: argv, StartUnixNs: start.UnixNano(), ElapsedNs: time.Since(start).Nanoseconds()}
	switch {
	case cmd.ProcessState == nil:
		s.ExitCode = 127
		stderr.WriteString(err.Error())
	case cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled():
		s.ExitCode = 128 + int(cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())
	default:
		s.ExitCode = cmd.ProcessState.ExitCode()
	}
	s.Stdout, s.Stderr = stdout.String(), stderr.String()
	return s
}
