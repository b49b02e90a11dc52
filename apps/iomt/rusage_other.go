//go:build !linux

package main

// getRusage reports nothing off Linux: ru_maxrss units differ between
// systems, and the benchmark only targets Linux devices.
func getRusage() *rusage { return nil }
