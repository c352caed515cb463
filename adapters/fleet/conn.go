package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnOptions are how a command reaches the NATS server. Secrets are only
// ever named by file; their contents never appear in an error or a log.
type ConnOptions struct {
	URL          string
	Name         string // the connection name the server shows
	CredsFile    string // a JWT + NKey .creds file
	NKeySeedFile string // an NKey seed file
	User         string
	PasswordFile string // the password for User, on the file's first line
	TokenFile    string // an authentication token, on the file's first line
	TLSCA        string
	TLSCert      string
	TLSKey       string
	Timeout      time.Duration // connect and per-request
	Log          Log
}

// maxSecretBytes bounds a password file.
const maxSecretBytes = 4 << 10

// Connect dials the server, asking again while no server answers (a
// server restarting, a host whose network comes up late) until Timeout has
// passed; a refused authentication or a bad file ends it at once. The
// connection reconnects forever (a publish or collect in flight resumes
// after a server restart); the caller closes it.
func Connect(o ConnOptions) (*nats.Conn, error) {
	if o.URL == "" {
		return nil, errors.New("no NATS server given (--nats URL or NATS_URL)")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.NKeySeedFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nkey seed file %s: %w", o.NKeySeedFile, err)
		}
		opts = append(opts, opt)
	}
	if (o.User == "") != (o.PasswordFile == "") {
		return nil, errors.New("--user and --password-file go together")
	}
	if o.User != "" {
		pw, err := readSecret(o.PasswordFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserInfo(o.User, pw))
	}
	if o.TokenFile != "" {
		tok, err := readSecret(o.TokenFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Token(tok))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	return dial(o.URL, opts, timeout, o.Log)
}

// dial is Connect's first connect, asked again (backing off up to 2 s)
// while no server answers, until timeout has passed.
func dial(url string, opts []nats.Option, timeout time.Duration, log Log) (*nats.Conn, error) {
	start, backoff, attempts := time.Now(), 100*time.Millisecond, 0
	for {
		attempts++
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		if !errors.Is(err, nats.ErrNoServers) {
			return nil, fmt.Errorf("connect to NATS: %w", err)
		}
		left := timeout - time.Since(start)
		if left <= 0 {
			return nil, fmt.Errorf("connect to NATS: no server answered within %s (%d attempts): %w", timeout, attempts, err)
		}
		log.debug("connect: no server answered; trying again", "after", min(backoff, left).String(), "attempt", attempts)
		time.Sleep(min(backoff, left))
		backoff = min(2*backoff, 2*time.Second)
	}
}

// readSecret reads the first line of a small file.
func readSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
	if err != nil {
		return "", fmt.Errorf("secret file %s: %w", path, err)
	}
	if len(b) > maxSecretBytes {
		return "", fmt.Errorf("secret file %s is larger than %d bytes", path, maxSecretBytes)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) == 0 {
		return "", fmt.Errorf("secret file %s: the first line is empty", path)
	}
	return string(line), nil
}
