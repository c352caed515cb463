package fleettest

import (
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Operator is a server in operator (decentralized JWT) mode: it trusts one
// operator, whose accounts it resolves from memory. Creds mints the
// credentials files (a user JWT and its NKey seed) that --creds reads.
type Operator struct {
	*Server
	account nkeys.KeyPair // the JetStream-enabled account users belong to
}

// StartOperator runs a server under dir that trusts a new operator with
// one JetStream-enabled account (and a system account), on a free
// loopback port.
func StartOperator(dir string) (*Operator, error) {
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	opPub, _ := op.PublicKey()
	sys, sysJWT, err := account(op, "SYS", false)
	if err != nil {
		return nil, err
	}
	sysPub, _ := sys.PublicKey()
	acc, accJWT, err := account(op, "FLEET", true)
	if err != nil {
		return nil, err
	}
	accPub, _ := acc.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "tree-ring-test"
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(op)
	if err != nil {
		return nil, err
	}
	trusted, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		return nil, err
	}
	res := &server.MemAccResolver{}
	for pub, j := range map[string]string{sysPub: sysJWT, accPub: accJWT} {
		if err := res.Store(pub, j); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s, err := start(&server.Options{
		ServerName: "tree-ring-test", Host: "127.0.0.1", Port: port,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
		TrustedOperators: []*jwt.OperatorClaims{trusted}, AccountResolver: res, SystemAccount: sysPub,
	})
	if err != nil {
		return nil, err
	}
	return &Operator{Server: s, account: acc}, nil
}

// account is a new account signed by op, with unlimited JetStream when js.
func account(op nkeys.KeyPair, name string, js bool) (nkeys.KeyPair, string, error) {
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return nil, "", err
	}
	pub, _ := kp.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = name
	if js {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	}
	j, err := ac.Encode(op)
	if err != nil {
		return nil, "", fmt.Errorf("account %s: %w", name, err)
	}
	return kp, j, nil
}

// Creds is a credentials file's bytes for a new user of the server's
// account: the server accepts it.
func (o *Operator) Creds() ([]byte, error) { return creds(o.account) }

// ForeignCreds is a well-formed credentials file for a user of an account
// that another operator signed: the server refuses it.
func ForeignCreds() ([]byte, error) {
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	acc, _, err := account(op, "ELSEWHERE", true)
	if err != nil {
		return nil, err
	}
	return creds(acc)
}

func creds(acc nkeys.KeyPair) ([]byte, error) {
	u, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	pub, _ := u.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "tree-ring-host"
	j, err := uc.Encode(acc)
	if err != nil {
		return nil, err
	}
	seed, err := u.Seed()
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(j, seed)
}
