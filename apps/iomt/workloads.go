package main

// The three workloads. Each runs on one goroutine over an input held in
// memory, with a fixed order of operations, so the same binary gives the same
// output natively and in a container. (The Go runtime's garbage collector
// may still use other cores; "threads": 1 counts workload threads.)

import (
	"compress/lzw"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
)

// result is a workload's output. details is only called after the work
// phase's clock has stopped.
type result interface {
	size() int               // bytes of the serialized output
	writeTo(io.Writer) error // the serialized output (what the checksum covers)
	details() any            // the report's "details" object
}

// doWork runs the configured workload on in; this is the timed work phase.
func doWork(cfg *config, in *input) (result, error) {
	switch cfg.workload {
	case "lzw":
		out, err := compressLZW(in.data)
		return &lzwResult{out, len(in.data)}, err
	case "aes":
		key, iv := aesKeyIV(cfg.seed)
		out, err := encryptAESCBC(in.data, key[:], iv[:])
		return &aesResult{out, key, iv}, err
	case "kmeans":
		return kmeans(in.points, cfg.dims, cfg.k, cfg.iterations, cfg.seed)
	}
	return nil, fmt.Errorf("unknown workload %q", cfg.workload)
}

// bytesOutput implements size and writeTo for in-memory outputs.
type bytesOutput []byte

func (b bytesOutput) size() int { return len(b) }

func (b bytesOutput) writeTo(w io.Writer) error {
	_, err := w.Write(b)
	return err
}

type lzwResult struct {
	bytesOutput
	inputBytes int
}

func (r *lzwResult) details() any {
	ratio := 0.0
	if r.inputBytes > 0 {
		ratio = float64(len(r.bytesOutput)) / float64(r.inputBytes)
	}
	return lzwDetails{Order: "lsb", LitWidth: 8, CompressionRatio: ratio, Threads: 1}
}

type aesResult struct {
	bytesOutput
	key [32]byte
	iv  [16]byte
}

func (r *aesResult) details() any {
	return aesDetails{
		Cipher:  "aes-256-cbc",
		Padding: "pkcs7",
		KeyHex:  hex.EncodeToString(r.key[:]),
		IVHex:   hex.EncodeToString(r.iv[:]),
		Threads: 1,
	}
}

// appendWriter collects output in memory.
type appendWriter struct{ buf []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// compressLZW compresses in with compress/lzw: LSB-first bit packing (as in
// GIF) and 8-bit literals. Codes grow to 12 bits and the dictionary is reset
// when full, so the result is a raw LZW stream, not a compress(1) .Z file.
func compressLZW(in []byte) ([]byte, error) {
	// Reserve the worst case (12-bit codes for 8-bit input, plus clear codes)
	// up front, so the timing does not depend on append's growth steps.
	// Unused capacity is never touched, so it costs no page faults.
	w := &appendWriter{buf: make([]byte, 0, len(in)+len(in)/2+len(in)/1024+64)}
	zw := lzw.NewWriter(w, lzw.LSB, 8)
	if _, err := zw.Write(in); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return w.buf, nil
}

// aesKeyIV derives the AES-256 key and CBC IV from the seed, so that any
// tool can reproduce the ciphertext from the JSON's key_hex and iv_hex.
func aesKeyIV(seed uint64) (key [32]byte, iv [16]byte) {
	s := strconv.FormatUint(seed, 10)
	key = sha256.Sum256([]byte("edgebench-iomt-key-" + s))
	ivFull := sha256.Sum256([]byte("edgebench-iomt-iv-" + s))
	copy(iv[:], ivFull[:])
	return key, iv
}

// encryptAESCBC returns AES-256-CBC(in) with PKCS#7 padding (always 1..16
// bytes), byte-identical to `openssl enc -aes-256-cbc -K key -iv iv -nosalt`.
func encryptAESCBC(in []byte, key, iv []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	pad := aes.BlockSize - len(in)%aes.BlockSize
	out := make([]byte, len(in)+pad)
	full := len(in) - len(in)%aes.BlockSize

	// Encrypt the whole blocks straight from the input (no copy), then the
	// padded last block; the encrypter carries the chaining value over.
	enc := cipher.NewCBCEncrypter(block, iv)
	enc.CryptBlocks(out[:full], in[:full])
	last := out[full:]
	n := copy(last, in[full:])
	for i := n; i < len(last); i++ {
		last[i] = byte(pad)
	}
	enc.CryptBlocks(last, last)
	return out, nil
}

// kmeansResult is the outcome of Lloyd's algorithm.
type kmeansResult struct {
	centroids  []float64 // k*dims, centroid-major
	labels     []uint32  // cluster of each point
	sizes      []int     // points per cluster
	iterations int       // centroid updates performed
	maxIter    int       // the -iterations limit
	converged  bool      // the last assignment pass changed nothing
	inertia    float64   // sum of squared distances to the assigned centroid
}

func (r *kmeansResult) details() any {
	return kmeansDetails{
		Init:          "kmeans++",
		MaxIterations: r.maxIter,
		Iterations:    r.iterations,
		Converged:     r.converged,
		Inertia:       r.inertia,
		ClusterSizes:  r.sizes,
		Threads:       1,
	}
}

// writeTo writes the canonical serialization that the output checksum
// covers: the centroids as little-endian float64 bits, then the labels as
// little-endian uint32.
func (r *kmeansResult) writeTo(w io.Writer) error {
	if err := writeFloat64s(w, r.centroids); err != nil {
		return err
	}
	return writeUint32s(w, r.labels)
}

func (r *kmeansResult) size() int { return len(r.centroids)*8 + len(r.labels)*4 }

// kmeans clusters the point-major matrix pts into k clusters.
//
// Initialisation is k-means++ driven by PCG(seed, saltInit). Then Lloyd's
// algorithm alternates an update (each centroid becomes the mean of its
// points; an empty cluster keeps its centroid) and an assignment (each point
// goes to the nearest centroid, the lowest index on ties), at most maxIter
// times, stopping early once an assignment changes nothing. The result's
// labels and inertia always belong to the returned centroids.
//
// Every sum runs in point order and no operation can be fused into an FMA,
// so the result is bit-identical wherever it runs.
func kmeans(pts []float64, dims, k, maxIter int, seed uint64) (*kmeansResult, error) {
	n := len(pts) / dims
	if n < k {
		return nil, fmt.Errorf("kmeans: %d points are fewer than -k %d", n, k)
	}
	r := &kmeansResult{
		maxIter:   maxIter,
		centroids: kmeansPlusPlus(pts, dims, k, rand.NewPCG(seed, saltInit)),
		labels:    make([]uint32, n),
		sizes:     make([]int, k),
	}
	for i := range r.labels {
		r.labels[i] = math.MaxUint32 // so the first assignment counts every point as changed
	}
	sums := make([]float64, k*dims)

	changed, inertia := assign(pts, dims, r.centroids, r.labels)
	for changed > 0 && r.iterations < maxIter {
		update(pts, dims, r.labels, r.centroids, sums, r.sizes)
		r.iterations++
		changed, inertia = assign(pts, dims, r.centroids, r.labels)
	}
	r.converged = changed == 0
	r.inertia = inertia
	clear(r.sizes)
	for _, l := range r.labels {
		r.sizes[l]++
	}
	return r, nil
}

// kmeansPlusPlus picks the first centroid uniformly and each further one
// with probability proportional to its squared distance from the nearest
// centroid chosen so far (Arthur & Vassilvitskii 2007, one trial per step).
func kmeansPlusPlus(pts []float64, dims, k int, src *rand.PCG) []float64 {
	n := len(pts) / dims
	cent := make([]float64, k*dims)
	copy(cent, pts[intN(src, n)*dims:][:dims])

	d2 := make([]float64, n)
	for i := range d2 {
		d2[i] = sqDist(pts[i*dims:][:dims], cent[:dims])
	}
	for c := 1; c < k; c++ {
		var total float64
		for _, d := range d2 {
			total += d
		}
		var pick int
		if total == 0 {
			pick = intN(src, n) // every point coincides with a centroid
		} else {
			target := uniform01(src) * total
			var acc float64
			for i, d := range d2 {
				if d == 0 {
					continue
				}
				// Rounding can leave acc <= target after the last
				// candidate; pick then stays at that candidate.
				pick = i
				if acc += d; acc > target {
					break
				}
			}
		}
		next := cent[c*dims:][:dims]
		copy(next, pts[pick*dims:][:dims])
		for i := range d2 {
			d2[i] = min(d2[i], sqDist(pts[i*dims:][:dims], next))
		}
	}
	return cent
}

// assign sets each label to the nearest centroid and returns how many labels
// changed and the total squared distance.
func assign(pts []float64, dims int, cent []float64, labels []uint32) (changed int, inertia float64) {
	k := len(cent) / dims
	for i := range labels {
		p := pts[i*dims:][:dims]
		best, bestD := 0, sqDist(p, cent[:dims])
		for c := 1; c < k; c++ {
			if d := sqDist(p, cent[c*dims:][:dims]); d < bestD {
				best, bestD = c, d
			}
		}
		if labels[i] != uint32(best) {
			labels[i] = uint32(best)
			changed++
		}
		inertia += bestD
	}
	return changed, inertia
}

// update moves each non-empty cluster's centroid to the mean of its points.
// sums and counts are scratch space of k*dims and k elements.
func update(pts []float64, dims int, labels []uint32, cent, sums []float64, counts []int) {
	clear(sums)
	clear(counts)
	for i, l := range labels {
		s := sums[int(l)*dims:][:dims]
		for j, x := range pts[i*dims:][:dims] {
			s[j] += x
		}
		counts[l]++
	}
	for c, cnt := range counts {
		if cnt == 0 {
			continue
		}
		for j := 0; j < dims; j++ {
			cent[c*dims+j] = sums[c*dims+j] / float64(cnt)
		}
	}
}

func sqDist(a, b []float64) float64 {
	var s float64
	for j := range a {
		d := a[j] - b[j]
		s += float64(d * d) // float64() forbids an FMA, which would round differently
	}
	return s
}
