// Command home-automation is paper 001's home-automation service: per HTTPS request it reads a
// temperature/humidity sensor (a DHT11) and decides an LED's state. edgebench runs the same
// binary natively, in Docker, in LXD and in VMs, loaded with wrk over TLS.
//
// Sensor (SENSOR): "auto" (default: the kernel's DHT11 IIO driver where it has a device, else
// simulated), "iio" or "simulated" (the DHT11's timing without one; see sensor.go). The LED is
// simulated: its state is kept and reported, no GPIO line is driven.
//
// Endpoints, over TLS with a certificate made at start (ECDSA P-256, self-signed):
//
//	GET /reading  200 application/json {"temp_c":T,"humidity_pct":H,"led":"on"|"off",
//	              "sensor":"<backend>","sensor_ns":N,"fresh":true|false}
//	              sensor_ns: the time this request spent on the sensor (waiting for it included)
//	GET /stats    200 application/json {"requests":n,"fresh_reads":f,"sensor_ns":s,"handler_ns":h,
//	              "sensor":"<backend>"}: totals since start, for splitting a request's latency
//	GET /io       200 text/plain "ok\n"
//	anything else 404
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// The LED goes on when it is warm or humid (thresholds in the environment, paper-like defaults).
var (
	ledAboveC   = envFloat("LED_ABOVE_C", 25)
	ledAbovePct = envFloat("LED_ABOVE_PCT", 60)
)

type listeningEvent struct {
	Event      string `json:"event"`
	App        string `json:"app"`
	UnixNs     int64  `json:"unix_ns"`
	Port       int    `json:"port"`
	Pid        int    `json:"pid"`
	Gomaxprocs int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	Sensor     string `json:"sensor"`
}

type service struct {
	sensor     Sensor
	led        atomic.Bool
	requests   atomic.Int64
	freshReads atomic.Int64
	sensorNs   atomic.Int64
	handlerNs  atomic.Int64
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}

func main() {
	port := 8443
	if s := os.Getenv("PORT"); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "home-automation: invalid PORT %q\n", s)
			os.Exit(64)
		}
		port = p
	}
	sensor, err := newSensor(os.Getenv("SENSOR"), envOr("SENSOR_IIO_ROOT", "/sys/bus/iio/devices"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "home-automation: %v\n", err)
		os.Exit(2)
	}
	cert, err := selfSigned()
	if err != nil {
		fmt.Fprintf(os.Stderr, "home-automation: certificate: %v\n", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		os.Exit(0)
	}()

	ln, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "home-automation: %v\n", err)
		os.Exit(1)
	}
	now := time.Now().UnixNano()
	line, _ := json.Marshal(listeningEvent{Event: "listening", App: "home-automation", UnixNs: now,
		Port: ln.Addr().(*net.TCPAddr).Port, Pid: os.Getpid(), Gomaxprocs: runtime.GOMAXPROCS(0),
		NumCPU: runtime.NumCPU(), Sensor: sensor.Name()})
	os.Stdout.Write(append(line, '\n'))

	svc := &service{sensor: sensor}
	tlsLn := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err := http.Serve(tlsLn, svc); err != nil {
		fmt.Fprintf(os.Stderr, "home-automation: %v\n", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		reply(w, http.StatusNotFound, "text/plain; charset=utf-8", "not found\n")
		return
	}
	switch r.URL.Path {
	case "/reading":
		s.reading(w)
	case "/stats":
		body, _ := json.Marshal(map[string]any{"requests": s.requests.Load(), "fresh_reads": s.freshReads.Load(),
			"sensor_ns": s.sensorNs.Load(), "handler_ns": s.handlerNs.Load(), "sensor": s.sensor.Name()})
		reply(w, http.StatusOK, "application/json", string(body)+"\n")
	case "/io":
		reply(w, http.StatusOK, "text/plain; charset=utf-8", "ok\n")
	default:
		reply(w, http.StatusNotFound, "text/plain; charset=utf-8", "not found\n")
	}
}

func (s *service) reading(w http.ResponseWriter) {
	start := time.Now()
	rd, err := s.sensor.Read()
	sensorNs := time.Since(start).Nanoseconds()
	if err != nil {
		reply(w, http.StatusServiceUnavailable, "text/plain; charset=utf-8", "sensor: "+err.Error()+"\n")
		return
	}
	on := rd.TempC >= ledAboveC || rd.HumidityPct >= ledAbovePct
	s.led.Store(on)
	led := "off"
	if on {
		led = "on"
	}
	body, _ := json.Marshal(map[string]any{"temp_c": rd.TempC, "humidity_pct": rd.HumidityPct, "led": led,
		"sensor": s.sensor.Name(), "sensor_ns": sensorNs, "fresh": rd.Fresh})
	reply(w, http.StatusOK, "application/json", string(body)+"\n")
	s.requests.Add(1)
	if rd.Fresh {
		s.freshReads.Add(1)
	}
	s.sensorNs.Add(sensorNs)
	s.handlerNs.Add(time.Since(start).Nanoseconds())
}

func reply(w http.ResponseWriter, status int, ctype, body string) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write([]byte(body))
}

// selfSigned makes the service's certificate at start: TLS is part of the measured path, and a
// certificate in the image would be a secret shipped in it.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:   pkix.Name{CommonName: "edgebench home-automation"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
