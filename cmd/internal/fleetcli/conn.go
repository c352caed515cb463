package fleetcli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
)

// connOptions are the connection flags of publish and collect.
type connOptions struct {
	URL          string
	CredsFile    string
	NKeySeedFile string
	User         string
	PasswordFile string
	TokenFile    string
	TLSCA        string
	TLSCert      string
	TLSKey       string
	Stream       string
	Replicas     int
	Timeout      time.Duration
}

func (o *connOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "nats", "", "NATS server URL(s), comma-separated (default $NATS_URL)")
	fs.StringVar(&o.CredsFile, "creds", "", "NATS credentials file (JWT and NKey seed; default $NATS_CREDS)")
	fs.StringVar(&o.NKeySeedFile, "nkey", "", "NKey seed file (default $NATS_NKEY)")
	fs.StringVar(&o.User, "user", "", "user name (with --password-file)")
	fs.StringVar(&o.PasswordFile, "password-file", "", "file whose first line is the password of --user")
	fs.StringVar(&o.TokenFile, "token-file", "", "file whose first line is the server's authentication token")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "CA certificate file to verify the server (default $NATS_CA)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "client certificate file, with --tls-key (default $NATS_CERT)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "client key file, with --tls-cert (default $NATS_KEY)")
	fs.StringVar(&o.Stream, "stream", fleet.DefaultStream, "JetStream stream (created if absent, subjects "+fleet.SubjectWildcard+")")
	fs.IntVar(&o.Replicas, "replicas", 1, "replicas of the stream when this command creates it")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "how long to wait for the server without progress")
}

func (o *connOptions) conn(name string, log fleet.Log) fleet.ConnOptions {
	return fleet.ConnOptions{URL: o.URL, Name: name, Log: log, CredsFile: o.CredsFile, NKeySeedFile: o.NKeySeedFile,
		User: o.User, PasswordFile: o.PasswordFile, TokenFile: o.TokenFile, TLSCA: o.TLSCA, TLSCert: o.TLSCert, TLSKey: o.TLSKey, Timeout: o.Timeout}
}

// check fills what the nats CLI's conventions give (NATS_URL,
// NATS_CREDS, NATS_NKEY, NATS_CA, NATS_CERT, NATS_KEY: each a URL or a
// file name, never a secret itself, never printed) for a flag not given,
// and validates.
func (o *connOptions) check(getenv func(string) string) error {
	if getenv != nil {
		for _, v := range []struct {
			flag *string
			env  string
		}{{&o.URL, "NATS_URL"}, {&o.CredsFile, "NATS_CREDS"}, {&o.NKeySeedFile, "NATS_NKEY"}, {&o.TLSCA, "NATS_CA"}, {&o.TLSCert, "NATS_CERT"}, {&o.TLSKey, "NATS_KEY"}} {
			if *v.flag == "" {
				*v.flag = getenv(v.env)
			}
		}
	}
	if o.URL == "" {
		return cli.Usagef("--nats URL (or NATS_URL) is required")
	}
	if o.Replicas < 1 || o.Replicas > 5 {
		return cli.Usagef("--replicas %d: want 1 to 5", o.Replicas)
	}
	if o.Timeout <= 0 {
		return cli.Usagef("--timeout must be positive")
	}
	return nil
}
