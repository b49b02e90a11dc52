package main

// Input generators. Everything is derived from one seed so that a run can be
// repeated bit for bit on any machine, architecture, runtime and Go release:
//
//   - The only randomness is the 64-bit output of math/rand/v2's PCG
//     created by rand.NewPCG(seed, salt), with salt one of the constants
//     below: a 128-bit LCG whose state starts as seed<<64|salt, with the
//     reference PCG's 128-bit multiplier and increment and the DXSM output
//     function (so not NumPy's PCG64DXSM, which uses a 64-bit multiplier).
//     The golden test in main_test.go pins its output. The convenience methods of rand.Rand (Float64, IntN, NormFloat64) are
//     not used: their algorithms are not promised to stay fixed, and
//     NormFloat64 goes through math.Exp, which has per-architecture assembly.
//   - uniform01 = top 53 bits of a PCG output / 2^53, in [0, 1).
//   - intN(n)   = high 64 bits of (PCG output * n), in [0, n).
//
// lzw/aes, -entropy random: bytes are the PCG outputs written little-endian,
// 8 bytes per output; a final partial word uses the low bytes of one more
// output. This is the stand-in for the paper's dd if=/dev/urandom.
//
// lzw/aes, -entropy sensor: CSV text, truncated to exactly -size bytes:
//
//	t_ms,heart_rate,spo2,temp_c\n   (header)
//	0,72,97,36.6\n                  (one line per 10 ms sample)
//
// One PCG output r per line drives a bounded random walk; each field is
// clamped to its range after the step:
//
//	heart_rate += r%3 - 1                                   50..140 bpm
//	spo2       += ±1   (bit 11) when bits 8..10 are all 0   90..100 %
//	temp_c     += ±0.1 (bit 16) when bits 12..15 are all 0  35.5..39.5 °C
//
// t_ms is 0, 10, 20, ...; temp_c is kept in tenths and printed as "36.6".
// The series starts at 72 bpm, 97 %, 36.6 °C.
//
// kmeans, -entropy random: points*dims coordinates, uniform01 each, point-major.
//
// kmeans, -entropy sensor: first k*dims centre coordinates (uniform01 each,
// centre-major), then per point: cluster c = intN(k), and each coordinate =
// centre[c][j] + 0.05*g, where g = (sum of 12 uniform01) - 6, the Irwin-Hall
// approximation of a standard normal (plain arithmetic, no libm).

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
)

const (
	saltInput = 0x696f6d742d696e70 // "iomt-inp": input generation
	saltInit  = 0x696f6d742d696e69 // "iomt-ini": k-means++ initialisation

	sensorSigma = 0.05
	sensorStep  = 10 // ms between samples
)

const sensorHeader = "t_ms,heart_rate,spo2,temp_c\n"

// input is what a workload consumes: raw bytes for lzw/aes, or a point-major
// float64 matrix for kmeans.
type input struct {
	data   []byte
	points []float64
}

// size is the length of the input's serialized form in bytes.
func (in *input) size() int {
	if in.points != nil {
		return len(in.points) * 8
	}
	return len(in.data)
}

// writeTo writes the serialized form: the bytes themselves, or the points as
// little-endian float64 (the format -input reads back).
func (in *input) writeTo(w io.Writer) error {
	if in.points != nil {
		return writeFloat64s(w, in.points)
	}
	_, err := w.Write(in.data)
	return err
}

func uniform01(src *rand.PCG) float64 {
	return float64(src.Uint64()>>11) * 0x1p-53
}

func intN(src *rand.PCG, n int) int {
	hi, _ := bits.Mul64(src.Uint64(), uint64(n))
	return int(hi)
}

func generateInput(cfg *config) input {
	src := rand.NewPCG(cfg.seed, saltInput)
	switch {
	case cfg.workload == "kmeans" && cfg.entropy == "sensor":
		return input{points: clusteredPoints(src, cfg.points, cfg.dims, cfg.k)}
	case cfg.workload == "kmeans":
		return input{points: uniformPoints(src, cfg.points, cfg.dims)}
	case cfg.entropy == "sensor":
		return input{data: sensorCSV(src, cfg.size)}
	default:
		return input{data: randomBytes(src, cfg.size)}
	}
}

func randomBytes(src *rand.PCG, n int) []byte {
	b := make([]byte, n)
	i := 0
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], src.Uint64())
	}
	if i < n {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], src.Uint64())
		copy(b[i:], tail[:])
	}
	return b
}

func sensorCSV(src *rand.PCG, n int) []byte {
	// Room for one whole line past n, so the loop never reallocates.
	b := make([]byte, 0, n+64)
	b = append(b, sensorHeader...)
	hr, spo2, temp := 72, 97, 366
	for t := 0; len(b) < n; t += sensorStep {
		b = strconv.AppendInt(b, int64(t), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(hr), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(spo2), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(temp/10), 10)
		b = append(b, '.', byte('0'+temp%10), '\n')

		r := src.Uint64()
		hr = clamp(hr+int(r%3)-1, 50, 140)
		if r>>8&7 == 0 {
			spo2 = clamp(spo2+int(r>>11&1)*2-1, 90, 100)
		}
		if r>>12&15 == 0 {
			temp = clamp(temp+int(r>>16&1)*2-1, 355, 395)
		}
	}
	return b[:n]
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }

func uniformPoints(src *rand.PCG, n, dims int) []float64 {
	pts := make([]float64, n*dims)
	for i := range pts {
		pts[i] = uniform01(src)
	}
	return pts
}

func clusteredPoints(src *rand.PCG, n, dims, k int) []float64 {
	centres := uniformPoints(src, k, dims)
	pts := make([]float64, n*dims)
	for i := 0; i < n; i++ {
		c := centres[intN(src, k)*dims:][:dims]
		p := pts[i*dims:][:dims]
		for j := range p {
			// The explicit float64() forbids fusing into an FMA, which some
			// architectures (arm64, ppc64, s390x) would otherwise do and
			// which rounds differently.
			p[j] = c[j] + float64(sensorSigma*gauss(src))
		}
	}
	return pts
}

func gauss(src *rand.PCG) float64 {
	var s float64
	for i := 0; i < 12; i++ {
		s += uniform01(src)
	}
	return s - 6
}

// decodePoints parses a -input file for kmeans.
func decodePoints(b []byte, dims int) ([]float64, error) {
	if len(b) == 0 || len(b)%(8*dims) != 0 {
		return nil, fmt.Errorf("input is %d bytes, not a non-empty whole number of %d-dimensional float64 points (%d bytes each)", len(b), dims, 8*dims)
	}
	pts := make([]float64, len(b)/8)
	for i := range pts {
		x := math.Float64frombits(binary.LittleEndian.Uint64(b[i*8:]))
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("input value %d (point %d) is not finite", i, i/dims)
		}
		pts[i] = x
	}
	return pts, nil
}

// writeFloat64s streams xs as little-endian float64 through a small buffer,
// so serializing (for hashing or writing) never needs a second full copy.
func writeFloat64s(w io.Writer, xs []float64) error {
	buf := make([]byte, 32<<10)
	for len(xs) > 0 {
		n := min(len(xs), len(buf)/8)
		for i, x := range xs[:n] {
			binary.LittleEndian.PutUint64(buf[i*8:], math.Float64bits(x))
		}
		if _, err := w.Write(buf[:n*8]); err != nil {
			return err
		}
		xs = xs[n:]
	}
	return nil
}

// writeUint32s is writeFloat64s for uint32 values.
func writeUint32s(w io.Writer, xs []uint32) error {
	buf := make([]byte, 32<<10)
	for len(xs) > 0 {
		n := min(len(xs), len(buf)/4)
		for i, x := range xs[:n] {
			binary.LittleEndian.PutUint32(buf[i*4:], x)
		}
		if _, err := w.Write(buf[:n*4]); err != nil {
			return err
		}
		xs = xs[n:]
	}
	return nil
}
