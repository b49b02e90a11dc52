package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// config is the validated command line.
type config struct {
	workload   string // "lzw", "aes" or "kmeans"
	size       int    // lzw/aes: input bytes to generate
	points     int    // kmeans: points to generate
	seed       uint64
	entropy    string // "random" or "sensor"; "" when the input comes from -input
	k          int
	dims       int
	iterations int
	inputPath  string
	writeInput string
	outputPath string
}

// usageError marks a bad command line (exit 64, EX_USAGE) as opposed to a
// failure while running (exit 1).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

const (
	maxK    = 1 << 16 // labels are serialized as uint32; this just keeps k sane
	maxDims = 1 << 12
)

// parseConfig parses and validates args (without the program name). Flags
// that do not apply to the chosen workload, and generation flags given
// together with -input, are rejected rather than ignored, so a mistyped
// benchmark command cannot silently measure something else.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("iomt", flag.ContinueOnError)
	// The flag package would print each error followed by the whole usage;
	// errors are reported once by the caller instead, usage only on -h.
	fs.SetOutput(io.Discard)
	var (
		cfg    config
		size   string
		points string
	)
	fs.StringVar(&cfg.workload, "workload", "", "workload to run: lzw, aes or kmeans (required)")
	fs.StringVar(&size, "size", "1MB", "lzw/aes input size: bytes, or with a suffix KB/MB/GB (1000) or KiB/MiB/GiB (1024)")
	fs.StringVar(&points, "points", "10000", "kmeans point count, optionally with a suffix K/M (1000)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed for input generation, the AES key/IV and k-means++ initialisation")
	fs.StringVar(&cfg.entropy, "entropy", "random", "generated input: random (uniform) or sensor (compressible vital-sign series / gaussian clusters)")
	fs.IntVar(&cfg.k, "k", 8, "kmeans: number of clusters (also the number of generated clusters for -entropy sensor)")
	fs.IntVar(&cfg.dims, "dims", 2, "kmeans: dimensions per point")
	fs.IntVar(&cfg.iterations, "iterations", 20, "kmeans: maximum Lloyd iterations (stops early once assignments stop changing)")
	fs.StringVar(&cfg.inputPath, "input", "", "read the input from FILE instead of generating it (kmeans: little-endian float64 array)")
	fs.StringVar(&cfg.writeInput, "write-input", "", "write the input to FILE before the work phase")
	fs.StringVar(&cfg.outputPath, "output", "", "write the output to FILE (kmeans: centroids as float64 LE, then labels as uint32 LE)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "usage: iomt -workload lzw|aes|kmeans [flags]\n\nRuns one workload and prints one JSON line describing the run on stdout.\n\nFlags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, usagef("%v (see iomt -h)", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	switch cfg.workload {
	case "lzw", "aes":
		for _, name := range []string{"points", "k", "dims", "iterations"} {
			if set[name] {
				return nil, usagef("-%s only applies to -workload kmeans", name)
			}
		}
	case "kmeans":
		if set["size"] {
			return nil, usagef("-size only applies to -workload lzw and aes (use -points for kmeans)")
		}
	case "":
		return nil, usagef("-workload is required (lzw, aes or kmeans)")
	default:
		return nil, usagef("unknown -workload %q (want lzw, aes or kmeans)", cfg.workload)
	}

	if cfg.inputPath != "" {
		for _, name := range []string{"size", "points", "entropy"} {
			if set[name] {
				return nil, usagef("-%s cannot be combined with -input (the input file determines it)", name)
			}
		}
		cfg.entropy = ""
	} else {
		if cfg.entropy != "random" && cfg.entropy != "sensor" {
			return nil, usagef("invalid -entropy %q (want random or sensor)", cfg.entropy)
		}
		var err error
		if cfg.workload == "kmeans" {
			if cfg.points, err = parseCount(points, pointUnits); err != nil {
				return nil, usagef("invalid -points %q: %v", points, err)
			}
		} else if cfg.size, err = parseCount(size, byteUnits); err != nil {
			return nil, usagef("invalid -size %q: %v", size, err)
		}
	}

	if cfg.workload == "kmeans" {
		if cfg.k < 1 || cfg.k > maxK {
			return nil, usagef("-k must be in 1..%d, got %d", maxK, cfg.k)
		}
		if cfg.dims < 1 || cfg.dims > maxDims {
			return nil, usagef("-dims must be in 1..%d, got %d", maxDims, cfg.dims)
		}
		if cfg.iterations < 1 {
			return nil, usagef("-iterations must be at least 1, got %d", cfg.iterations)
		}
		if cfg.inputPath == "" {
			if cfg.points < cfg.k {
				return nil, usagef("-points (%d) must be at least -k (%d)", cfg.points, cfg.k)
			}
			if cfg.points > math.MaxInt/8/cfg.dims {
				return nil, usagef("-points %d x -dims %d is too large for this platform", cfg.points, cfg.dims)
			}
		}
	}
	return &cfg, nil
}

type unit struct {
	name string // matched case-insensitively
	mult int64
}

// byteUnits deliberately has no bare K/M/G: dd reads "1M" as 1 MiB while
// the paper's tables say MB, so the caller has to say which one is meant.
var byteUnits = []unit{
	{"", 1}, {"B", 1},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
}

var pointUnits = []unit{{"", 1}, {"K", 1e3}, {"M", 1e6}}

// parseCount parses a positive decimal integer with an optional,
// case-insensitive unit suffix (spaces between them are allowed), and checks
// that the result fits in an int on this platform.
func parseCount(s string, units []unit) (int, error) {
	var names []string
	for _, u := range units {
		if u.name != "" {
			names = append(names, u.name)
		}
	}
	want := "a positive integer with an optional unit (" + strings.Join(names, ", ") + ")"

	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, errors.New("want " + want)
	}
	suffix := strings.TrimSpace(s[i:])
	var mult int64
	for _, u := range units {
		if strings.EqualFold(u.name, suffix) {
			mult = u.mult
			break
		}
	}
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q: want %s", suffix, want)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > math.MaxInt/mult {
		return 0, errors.New("value too large")
	}
	if n == 0 {
		return 0, errors.New("must be greater than zero")
	}
	return int(n * mult), nil
}
