package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIIOBackendReadsTheDriversMilliUnits(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "iio:device0")
	os.MkdirAll(dev, 0o755)
	os.WriteFile(filepath.Join(dev, "name"), []byte("dht11@4\n"), 0o644)
	os.WriteFile(filepath.Join(dev, "in_temp_input"), []byte("24000\n"), 0o644)
	os.WriteFile(filepath.Join(dev, "in_humidityrelative_input"), []byte("61000\n"), 0o644)
	s, err := newSensor("auto", root)
	if err != nil || s.Name() != "iio:"+dev {
		t.Fatalf("auto with a dht11 device: %v %v", s, err)
	}
	r, err := s.Read()
	if err != nil || r.TempC != 24 || r.HumidityPct != 61 || !r.Fresh {
		t.Fatalf("reading %+v %v", r, err)
	}
	if r, _ := s.Read(); r.Fresh {
		t.Fatal("a second read within 2 s is the driver's kept reading, not fresh")
	}
}

func TestWithoutADeviceAutoSimulatesAndIIOFails(t *testing.T) {
	root := t.TempDir()
	if s, err := newSensor("auto", root); err != nil || s.Name() != "simulated-dht11" {
		t.Fatalf("auto without a device: %v %v", s, err)
	}
	if _, err := newSensor("iio", root); err == nil {
		t.Fatal("iio without a device must fail")
	}
	if _, err := newSensor("gpio-magic", root); err == nil {
		t.Fatal("an unknown backend must fail")
	}
}

func TestSimulatedReadTakesTheDHT11sTimeOnlyWhenFresh(t *testing.T) {
	s, _ := newSensor("simulated", "")
	start := time.Now()
	r, _ := s.Read()
	first := time.Since(start)
	start = time.Now()
	r2, _ := s.Read()
	second := time.Since(start)
	if !r.Fresh || r2.Fresh || first < dht11ReadTime || second > dht11ReadTime/2 {
		t.Fatalf("fresh %v in %v, then %v in %v", r.Fresh, first, r2.Fresh, second)
	}
	if r.TempC < 19 || r.TempC > 27 || r.HumidityPct < 34 || r.HumidityPct > 66 {
		t.Fatalf("implausible reading %+v", r)
	}
}
