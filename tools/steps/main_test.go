package main

import (
	"reflect"
	"testing"
)

func TestSplitOnSeparator(t *testing.T) {
	got := split([]string{"a", "1", ":::", "b", ":::", ":::", "c", "2", "3"})
	want := [][]string{{"a", "1"}, {"b"}, {"c", "2", "3"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("split = %v, want %v", got, want)
	}
}

func TestRunReportsExitCodeAndOutput(t *testing.T) {
	s := run([]string{"sh", "-c", "echo out; echo err >&2; exit 3"}, "")
	if s.ExitCode != 3 || s.Stdout != "out\n" || s.Stderr != "err\n" || s.ElapsedNs <= 0 {
		t.Fatalf("unexpected step %+v", s)
	}
	if s := run([]string{"/nonexistent/tool"}, ""); s.ExitCode != 127 {
		t.Fatalf("a missing command should exit 127, got %+v", s)
	}
}

func TestEnvFlagWantsNameAndValue(t *testing.T) {
	var e envFlags
	if err := e.Set("OMP_NUM_THREADS=2"); err != nil || len(e) != 1 {
		t.Fatalf("a NAME=VALUE flag should be taken, got %v %v", e, err)
	}
	for _, bad := range []string{"OMP_NUM_THREADS", "=2"} {
		if err := e.Set(bad); err == nil {
			t.Fatalf("-env %q should be refused", bad)
		}
	}
}
