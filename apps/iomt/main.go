// Command iomt runs one Internet-of-Medical-Things batch workload (LZW
// compression, AES-256-CBC encryption or k-means clustering) over a
// deterministic input and prints one JSON line with per-phase latencies,
// checksums and resource usage. edgebench runs the same static binary
// natively and in a FROM scratch container, so it needs no file, shell or
// /proc access unless -input, -write-input or -output ask for a file.
//
// A run has these phases, each timed with the monotonic clock:
//
//	generate | load   build the input from -seed, or read -input
//	hash_input        SHA-256 of the input (input_checksum)
//	write_input       write the input to -write-input, if given
//	work              the workload itself, in memory, single-threaded
//	output            SHA-256 of the output (checksum), and write -output
//
// Resource usage (getrusage RUSAGE_SELF) is read when main starts
// (rusage_start) and after the output phase (rusage), and the page faults
// of each phase are reported separately (phases_faults). The start values
// matter in containers: the counters, and the maxrss high-water mark, carry
// over execve, so in Docker they include the container runtime's init
// process before it exec'd this program.
//
// Exit status: 0 ok, 1 runtime error, 64 usage error.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// report is the JSON line; field order is the output order.
type report struct {
	Workload       string         `json:"workload"`
	Entropy        *string        `json:"entropy"`    // null with -input
	InputFile      *string        `json:"input_file"` // null when generated
	Seed           uint64         `json:"seed"`
	InputBytes     int            `json:"input_bytes"`
	Points         *int           `json:"points"` // kmeans only
	Dims           *int           `json:"dims"`
	K              *int           `json:"k"`
	OutputBytes    int            `json:"output_bytes"`
	Checksum       string         `json:"checksum"`
	InputChecksum  string         `json:"input_checksum"`
	PhasesNs       phases[int64]  `json:"phases_ns"`
	PhasesFaults   phases[faults] `json:"phases_faults"` // all null where getrusage is unsupported
	TotalNs        int64          `json:"total_ns"`
	WorkMBPerS     *float64       `json:"work_throughput_mb_s"`
	WorkPointsPerS *float64       `json:"work_points_per_s"` // kmeans only
	RusageStart    *rusage        `json:"rusage_start"`      // null where getrusage is unsupported
	Rusage         *rusage        `json:"rusage"`
	Details        any            `json:"details"`
	GoVersion      string         `json:"go_version"`
	GOOS           string         `json:"goos"`
	GOARCH         string         `json:"goarch"`
	Gomaxprocs     int            `json:"gomaxprocs"`
}

// phases holds one value per phase; a phase that did not run is null.
type phases[T any] struct {
	Generate   *T `json:"generate"`
	Load       *T `json:"load"`
	HashInput  *T `json:"hash_input"`
	WriteInput *T `json:"write_input"`
	Work       *T `json:"work"`
	Output     *T `json:"output"`
}

type faults struct {
	Minflt int64 `json:"minflt"`
	Majflt int64 `json:"majflt"`
}

type rusage struct {
	Minflt   int64 `json:"minflt"`
	Majflt   int64 `json:"majflt"`
	MaxrssKB int64 `json:"maxrss_kb"`
	UtimeNs  int64 `json:"utime_ns"`
	StimeNs  int64 `json:"stime_ns"`
	Nvcsw    int64 `json:"nvcsw"`
	Nivcsw   int64 `json:"nivcsw"`
}

// The workload-specific "details" objects.

type lzwDetails struct {
	Order            string  `json:"order"`
	LitWidth         int     `json:"lit_width"`
	CompressionRatio float64 `json:"compression_ratio"` // output/input bytes
	Threads          int     `json:"threads"`
}

type aesDetails struct {
	Cipher  string `json:"cipher"`
	Padding string `json:"padding"`
	KeyHex  string `json:"key_hex"`
	IVHex   string `json:"iv_hex"`
	Threads int    `json:"threads"`
}

type kmeansDetails struct {
	Init          string  `json:"init"`
	MaxIterations int     `json:"max_iterations"`
	Iterations    int     `json:"iterations"`
	Converged     bool    `json:"converged"`
	Inertia       float64 `json:"inertia"`
	ClusterSizes  []int   `json:"cluster_sizes"`
	Threads       int     `json:"threads"`
}

func run(args []string, stdout, stderr io.Writer) int {
	ruStart := getRusage()
	start := time.Now()
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "iomt: %v\n", err)
		return 64
	}
	rep, err := execute(cfg, start)
	if rep != nil {
		rep.RusageStart = ruStart
	}
	if err != nil {
		fmt.Fprintf(stderr, "iomt: %v\n", err)
		return 1
	}
	line, err := json.Marshal(rep)
	if err != nil {
		fmt.Fprintf(stderr, "iomt: %v\n", err)
		return 1
	}
	// One write, so the line arrives whole even on an unbuffered pipe.
	if _, err := stdout.Write(append(line, '\n')); err != nil {
		fmt.Fprintf(stderr, "iomt: writing result: %v\n", err)
		return 1
	}
	return 0
}

func execute(cfg *config, start time.Time) (*report, error) {
	rep := &report{
		Workload:   cfg.workload,
		Seed:       cfg.seed,
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		Gomaxprocs: runtime.GOMAXPROCS(0),
	}
	var in input
	m := startMeter()
	if cfg.inputPath != "" {
		b, err := os.ReadFile(cfg.inputPath)
		if err != nil {
			return nil, err
		}
		if cfg.workload == "kmeans" {
			pts, err := decodePoints(b, cfg.dims)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", cfg.inputPath, err)
			}
			in.points = pts
		} else {
			in.data = b
		}
		rep.PhasesNs.Load, rep.PhasesFaults.Load = m.stop()
		rep.InputFile = &cfg.inputPath
	} else {
		in = generateInput(cfg)
		rep.PhasesNs.Generate, rep.PhasesFaults.Generate = m.stop()
		rep.Entropy = &cfg.entropy
	}
	rep.InputBytes = in.size()
	if cfg.workload == "kmeans" {
		rep.Points, rep.Dims, rep.K = ptr(len(in.points)/cfg.dims), &cfg.dims, &cfg.k
	}

	m = startMeter()
	h := sha256.New()
	in.writeTo(h) // a hash.Hash never returns an error
	rep.InputChecksum = "sha256:" + hex.EncodeToString(h.Sum(nil))
	rep.PhasesNs.HashInput, rep.PhasesFaults.HashInput = m.stop()

	if cfg.writeInput != "" {
		m = startMeter()
		if err := writeFile(cfg.writeInput, in.writeTo); err != nil {
			return nil, err
		}
		rep.PhasesNs.WriteInput, rep.PhasesFaults.WriteInput = m.stop()
	}

	m = startMeter()
	res, err := doWork(cfg, &in)
	if err != nil {
		return nil, err
	}
	rep.PhasesNs.Work, rep.PhasesFaults.Work = m.stop()
	rep.Details = res.details()
	if work := *rep.PhasesNs.Work; work > 0 {
		secs := float64(work) / 1e9
		rep.WorkMBPerS = ptr(float64(rep.InputBytes) / 1e6 / secs)
		if cfg.workload == "kmeans" {
			rep.WorkPointsPerS = ptr(float64(*rep.Points) / secs)
		}
	}

	m = startMeter()
	h = sha256.New()
	if cfg.outputPath == "" {
		res.writeTo(h)
	} else if err := writeFile(cfg.outputPath, func(w io.Writer) error {
		return res.writeTo(io.MultiWriter(h, w))
	}); err != nil {
		return nil, err
	}
	rep.Checksum = "sha256:" + hex.EncodeToString(h.Sum(nil))
	rep.OutputBytes = res.size()
	rep.PhasesNs.Output, rep.PhasesFaults.Output = m.stop()

	rep.TotalNs = time.Since(start).Nanoseconds()
	rep.Rusage = getRusage()
	return rep, nil
}

// meter measures one phase: time on the monotonic clock, and the page
// faults taken meanwhile. getrusage is called outside the timed interval.
type meter struct {
	ru *rusage
	t  time.Time
}

func startMeter() meter {
	ru := getRusage()
	return meter{ru, time.Now()}
}

func (m meter) stop() (*int64, *faults) {
	ns := time.Since(m.t).Nanoseconds()
	end := getRusage()
	if m.ru == nil || end == nil {
		return &ns, nil
	}
	return &ns, &faults{end.Minflt - m.ru.Minflt, end.Majflt - m.ru.Majflt}
}

func ptr[T any](v T) *T { return &v }

// writeFile creates path and fills it through write, reporting the first
// error from writing or closing.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
