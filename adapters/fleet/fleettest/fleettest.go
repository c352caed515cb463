// Package fleettest runs NATS servers with JetStream inside the process, on
// loopback addresses only, for the fleet tests, benchmarks and the fleet
// demo. It is the only package that imports the NATS server; the tree-ring
// binary never links it.
//
// Lifetime: a Server runs until Shutdown; its JetStream files live in the
// directory it was given, so a restart on the same directory and port finds
// the same streams.
package fleettest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is one embedded NATS server.
type Server struct {
	*server.Server
	opts *server.Options
}

// URL is the client URL of the server.
func (s *Server) URL() string { return s.ClientURL() }

// Start runs a single server with JetStream storing under dir, on a free
// loopback port (or port, when not 0).
func Start(dir string, port int) (*Server, error) {
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	return start(&server.Options{
		ServerName: "tree-ring-test", Host: "127.0.0.1", Port: port,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
}

// Auth is what a test server demands of its clients: a user and password,
// or a user NKey, and (with TLSCert and TLSKey, files) TLS; with TLSCA too,
// a client certificate signed by that CA.
type Auth struct {
	User, Password         string
	Token                  string // the server's authorization token
	NKey                   string // a user's public NKey
	TLSCert, TLSKey, TLSCA string
}

// StartAuth is Start with authentication.
func StartAuth(dir string, a Auth) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	o := &server.Options{
		ServerName: "tree-ring-test", Host: "127.0.0.1", Port: port,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
		Username: a.User, Password: a.Password, Authorization: a.Token,
	}
	if a.NKey != "" {
		o.Nkeys = []*server.NkeyUser{{Nkey: a.NKey}}
	}
	if a.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: a.TLSCert, KeyFile: a.TLSKey, CaFile: a.TLSCA, Verify: a.TLSCA != ""})
		if err != nil {
			return nil, err
		}
		o.TLS, o.TLSConfig, o.TLSVerify = true, tc, a.TLSCA != ""
	}
	return start(o)
}

// Restart starts a stopped server again with the same options (address,
// store directory, cluster routes).
func (s *Server) Restart() (*Server, error) {
	o := *s.opts
	return start(&o)
}

func start(o *server.Options) (*Server, error) {
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("nats server: not ready after 10s")
	}
	return &Server{Server: s, opts: o}, nil
}

// Cluster runs n servers in one JetStream cluster, each storing under its
// own folder of dir, and waits until the cluster has a meta leader.
func Cluster(dir string, n int) ([]*Server, error) {
	ports := make([]int, 2*n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	var routes []*url.URL
	for i := range n {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[n+i])})
	}
	var out []*Server
	fail := func(err error) ([]*Server, error) {
		for _, s := range out {
			s.Shutdown()
		}
		return nil, err
	}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("tree-ring-node-%d", i+1), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprintf("node-%d", i+1)), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "tree-ring-test", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:  routes,
		}
		s, err := server.NewServer(o)
		if err != nil {
			return fail(fmt.Errorf("nats node %d: %w", i+1, err))
		}
		s.Start()
		out = append(out, &Server{Server: s, opts: o})
	}
	for _, s := range out {
		if !s.ReadyForConnections(10 * time.Second) {
			return fail(errors.New("nats cluster: a node is not ready after 10s"))
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range out {
			if s.JetStreamIsLeader() {
				return out, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fail(errors.New("nats cluster: no JetStream meta leader after 20s"))
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StreamLeader returns the server that leads stream (in the global
// account), or nil.
func StreamLeader(servers []*Server, stream string) *Server {
	for _, s := range servers {
		if s.Running() && s.JetStreamIsStreamLeader(s.GlobalAccount().Name, stream) {
			return s
		}
	}
	return nil
}
