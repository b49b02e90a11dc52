package main

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// batchResult is the one JSON line of -batch mode: a program run to completion,
// timed on the target from just before the spawn to its exit, with the rusage
// of the process tree the probe waited for (for `docker run` that is the
// client, not the workload: the caller counts the workload from its cgroup).
type batchResult struct {
	StartUnixNs int64        `json:"start_unix_ns"`
	EndUnixNs   *int64       `json:"end_unix_ns"`
	ElapsedNs   *int64       `json:"elapsed_ns"`
	Pid         *int         `json:"pid"`
	ExitCode    *int         `json:"exit_code"`
	TimedOut    bool         `json:"timed_out"`
	Children    *childRusage `json:"children_rusage"`
	Error       *string      `json:"error"`
}

type childRusage struct {
	Minflt   int64 `json:"minflt"`
	Majflt   int64 `json:"majflt"`
	MaxrssKB int64 `json:"maxrss_kb"`
	UtimeNs  int64 `json:"utime_ns"`
	StimeNs  int64 `json:"stime_ns"`
}

// runBatch spawns argv in its own process group and waits for it. On timeout
// the whole group is killed, so nothing the program started outlives the run.
func runBatch(argv []string, stdoutPath, stderrPath string, timeout time.Duration) int {
	var res batchResult
	report := func(code int, msg string) int { return printResult(&res, &res.Error, code, msg) }
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if cmd.Stdout, err = openOutput(stdoutPath); err != nil {
		return report(exitUsage, err.Error())
	}
	if cmd.Stderr, err = openOutput(stderrPath); err != nil {
		return report(exitUsage, err.Error())
	}

	start := time.Now()
	res.StartUnixNs = start.UnixNano()
	if err := cmd.Start(); err != nil {
		return report(exitLauncher, "start: "+err.Error())
	}
	pid := cmd.Process.Pid
	res.Pid = &pid
	timer := time.AfterFunc(timeout, func() {
		res.TimedOut = true
		syscall.Kill(-pid, syscall.SIGKILL)
	})
	waitErr := cmd.Wait()
	end := time.Now()
	timer.Stop()

	endNs, elapsed := end.UnixNano(), end.Sub(start).Nanoseconds()
	code := exitCode(cmd.ProcessState, waitErr)
	res.EndUnixNs, res.ElapsedNs, res.ExitCode = &endNs, &elapsed, &code
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		res.Children = &childRusage{
			Minflt: ru.Minflt, Majflt: ru.Majflt, MaxrssKB: ru.Maxrss,
			UtimeNs: syscall.TimevalToNsec(ru.Utime), StimeNs: syscall.TimevalToNsec(ru.Stime),
		}
	}
	if res.TimedOut {
		return report(exitTimeout, fmt.Sprintf("still running after %s; killed", timeout))
	}
	return report(exitReady, "")
}
