package adapters

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// tempMarker is the infix of CreateFile's temporary names.
const tempMarker = ".tree-ring-tmp-"

// TempName is the temporary name CreateFile writes name under before
// linking it: "." + name + ".tree-ring-tmp-" + 16 random hex digits. A
// process killed mid-write leaves such a file and never a partial final
// file; IsTempName recognises one.
func TempName(name string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("temporary name for %s: %w", name, err)
	}
	return "." + name + tempMarker + hex.EncodeToString(b[:]), nil
}

// IsTempName reports whether name is one of CreateFile's temporary names.
func IsTempName(name string) bool {
	if name == "" || name[0] != '.' {
		return false // most names (every receipt file) end here, unsearched
	}
	i := strings.LastIndex(name, tempMarker)
	if i < 1 {
		return false
	}
	suffix := name[i+len(tempMarker):]
	if len(suffix) != 16 {
		return false
	}
	_, err := hex.DecodeString(suffix)
	return err == nil
}

// Indeterminate is always true: the path exists but whether it is durable
// is unknown (the command layer maps it to its exit code for unknown
// outcomes).
func (e *DurabilityError) Indeterminate() bool { return true }
