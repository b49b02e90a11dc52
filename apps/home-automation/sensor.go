package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The DHT11's timing, as the kernel's dht11 driver drives it: the host holds the line low for
// 18 ms to wake the sensor, which answers (80+80 us) and sends 40 bits (50 us low, then 26-28 us
// high for a 0 and 70 us for a 1): about 22 ms a read. The driver keeps a reading for 2 s
// (DHT11_DATA_VALID_TIME) and answers from it in between; the sensor samples at most at 1 Hz.
const (
	dht11ReadTime  = 22 * time.Millisecond
	dht11ValidTime = 2 * time.Second
)

// Reading is one answer of the sensor.
type Reading struct {
	TempC       float64
	HumidityPct float64
	Fresh       bool // read from the sensor now, not the last reading kept
}

// Sensor is a temperature/humidity source; one at a time, as a single data line is.
type Sensor interface {
	Read() (Reading, error)
	Name() string
}

// iioSensor reads the kernel's DHT11 IIO driver (dtoverlay=dht11 on a Raspberry Pi):
// in_temp_input and in_humidityrelative_input in milli-units. The driver does the timing.
type iioSensor struct {
	dir  string
	mu   sync.Mutex
	last time.Time
}

func (s *iioSensor) Name() string { return "iio:" + s.dir }

func readMilli(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	return v / 1000, nil
}

func (s *iioSensor) Read() (Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := readMilli(filepath.Join(s.dir, "in_temp_input"))
	if err != nil {
		return Reading{}, err
	}
	h, err := readMilli(filepath.Join(s.dir, "in_humidityrelative_input"))
	if err != nil {
		return Reading{}, err
	}
	fresh := time.Since(s.last) >= dht11ValidTime
	if fresh {
		s.last = time.Now()
	}
	return Reading{TempC: t, HumidityPct: h, Fresh: fresh}, nil
}

// simulatedSensor has the DHT11's timing without one: a fresh read blocks for the protocol's
// 22 ms, readings are kept 2 s like the driver's, and the values drift slowly and repeatably
// (a day's cycle compressed into ten minutes), so the LED's decision changes now and then.
type simulatedSensor struct {
	mu      sync.Mutex
	start   time.Time
	last    time.Time
	reading Reading
}

func (s *simulatedSensor) Name() string { return "simulated-dht11" }

func (s *simulatedSensor) Read() (Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.last.IsZero() && now.Sub(s.last) < dht11ValidTime {
		r := s.reading
		r.Fresh = false
		return r, nil
	}
	time.Sleep(dht11ReadTime)
	phase := 2 * math.Pi * now.Sub(s.start).Seconds() / 600
	// The DHT11 reports whole degrees and percents.
	s.reading = Reading{TempC: math.Round(23 + 3*math.Sin(phase)), HumidityPct: math.Round(50 + 15*math.Cos(phase)),
		Fresh: true}
	s.last = time.Now()
	return s.reading, nil
}

// findIIO returns the folder of the first IIO device the dht11 driver registered, or "".
func findIIO(root string) string {
	dirs, _ := filepath.Glob(filepath.Join(root, "iio:device*"))
	for _, d := range dirs {
		name, err := os.ReadFile(filepath.Join(d, "name"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(name)), "dht11") {
			return d
		}
	}
	return ""
}

// newSensor picks the backend: "iio" (fails without a DHT11 IIO device), "simulated", or
// "auto" (iio where the device exists, else simulated).
func newSensor(kind, iioRoot string) (Sensor, error) {
	switch kind {
	case "simulated":
		return &simulatedSensor{start: time.Now()}, nil
	case "iio", "auto", "":
		if dir := findIIO(iioRoot); dir != "" {
			return &iioSensor{dir: dir}, nil
		}
		if kind == "iio" {
			return nil, fmt.Errorf("no DHT11 IIO device under %s (load the dht11 driver, e.g. dtoverlay=dht11, "+
				"or use SENSOR=simulated)", iioRoot)
		}
		return &simulatedSensor{start: time.Now()}, nil
	}
	return nil, fmt.Errorf("SENSOR=%q unknown; use auto, iio or simulated", kind)
}
