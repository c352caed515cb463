package adapters

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
)

// NewStoreID mints a random (version 4) UUID in its hyphenated lowercase
// form from r (crypto/rand.Reader when nil). A store mints it once, in
// store.initialized.
func NewStoreID(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var u [16]byte
	if _, err := io.ReadFull(r, u[:]); err != nil {
		return "", fmt.Errorf("mint store id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:]), nil
}

// ValidStoreID reports whether s is a hyphenated lowercase version-4 UUID.
func ValidStoreID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return s[14] == '4' && (s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b')
}
