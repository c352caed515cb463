package fleet_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
)

// The first connect is asked again while no server answers: a server
// that comes up after the first attempt failed is reached; none within
// Timeout is an error saying so; a refused authentication is not retried.
func TestConnectRetried(t *testing.T) {
	port := closedPort(t)
	url := "nats://127.0.0.1:" + itoa(port)

	retried := make(chan struct{}, 1)
	log := func(msg string, _ ...any) {
		if strings.HasPrefix(msg, "connect: no server answered") {
			select {
			case retried <- struct{}{}:
			default:
			}
		}
	}
	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := fleet.Connect(fleet.ConnOptions{URL: url, Timeout: time.Minute, Log: log})
		if err == nil {
			nc.Close()
		}
		done <- result{err}
	}()
	<-retried // the first attempt failed: now the server comes up
	srv, err := fleettest.Start(t.TempDir(), port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	if r := <-done; r.err != nil {
		t.Fatalf("connect to a server that came up meanwhile: %v", r.err)
	}

	start := time.Now()
	_, err = fleet.Connect(fleet.ConnOptions{URL: "nats://127.0.0.1:" + itoa(closedPort(t)), Timeout: 1500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "connect to NATS: no server answered within 1.5s (") || time.Since(start) < 1500*time.Millisecond {
		t.Fatalf("no server: %v after %s", err, time.Since(start))
	}

	auth, err := fleettest.StartAuth(t.TempDir(), fleettest.Auth{Token: "right"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Shutdown)
	tries := 0
	_, err = fleet.Connect(fleet.ConnOptions{URL: auth.URL(), Timeout: time.Minute, Log: func(string, ...any) { tries++ }})
	if err == nil || strings.Contains(err.Error(), "no server answered") || tries != 0 {
		t.Fatalf("refused authentication: %v after %d retries", err, tries)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// closedPort is a loopback port nothing listens on (just released).
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
