package main

import "syscall"

// getRusage reads the process's own counters with getrusage(2), which needs
// no /proc and so also works in a FROM scratch container. On Linux ru_maxrss
// is in KiB. The int64 conversions cover 32-bit platforms (armv7).
func getRusage() *rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil
	}
	return &rusage{
		Minflt:   int64(ru.Minflt),
		Majflt:   int64(ru.Majflt),
		MaxrssKB: int64(ru.Maxrss),
		UtimeNs:  ru.Utime.Nano(),
		StimeNs:  ru.Stime.Nano(),
		Nvcsw:    int64(ru.Nvcsw),
		Nivcsw:   int64(ru.Nivcsw),
	}
}
