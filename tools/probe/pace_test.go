package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestPaceReportsTheBestOfItsRuns(t *testing.T) {
	var out bytes.Buffer
	if code := runPace(&out, 200_000); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var res paceResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("not one JSON line: %q (%v)", out.String(), err)
	}
	if len(res.RunsNs) != paceRuns || res.Iterations != 200_000 {
		t.Fatalf("runs %v, iterations %d", res.RunsNs, res.Iterations)
	}
	for _, ns := range res.RunsNs {
		if ns <= 0 || ns < res.PaceNs {
			t.Fatalf("pace %d is not the best of %v", res.PaceNs, res.RunsNs)
		}
	}
}

func TestPaceWorkGrowsWithItsIterations(t *testing.T) {
	// The same work gives the same value; more of it, another (nothing is skipped).
	if paceWork(1000) != paceWork(1000) || paceWork(1000) == paceWork(2000) {
		t.Fatal("paceWork is not a fixed function of its iterations")
	}
}
