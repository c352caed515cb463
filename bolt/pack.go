package bolt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/oklog/ulid/v2"

	"github.com/tree-ring/tree-ring/events"
)

// Format 3 stores an event's value packed: its stored form
// (events.Envelope.Encode's compact JSON) with the parts that repeat in
// every envelope replaced by codes. An envelope is about 790 bytes of JSON
// of which a memory's text is none: its field names, its three 64-hex
// hashes, its ULID and its timestamps are most of it, and a memory's
// packs to 311 bytes from 786. Packing is textual, not JSON-aware: unpack(pack(x)) == x for
// every x, valid JSON or not, so the hash chain, verify and every reader
// above this file see exactly the bytes they saw in format 2.
//
// A packed value is packedTag, then bytes ≥ 0x20 copied as they are and
// codes below 0x20, which compact JSON never holds outside a string and
// never inside one (a control character is escaped):
//
//	codeHex  32 bytes          `"` + 64 lowercase hex digits + `"`
//	codeULID 16 bytes          `"` + the ULID's 26 characters + `"` (canonical text only)
//	codeTime n, ⌈(14+n)/2⌉ BCD `"YYYY-MM-DDTHH:MM:SS` + (n > 0: "." + n digits) + `Z"`
//	codeWord i                 packWords[packShort+i]
//	0x04 … 0x1F                packWords[0 … packShort-1]
//
// A value whose first byte is '{' is stored as it is: every format-2
// value, and a value holding a byte below 0x20 (not an Encode output, but
// stored losslessly all the same). packWords is frozen: a word's code is
// on disk. New words may only be appended.
const (
	packedTag = 0x01

	codeHex   = 0x00
	codeULID  = 0x01
	codeTime  = 0x02
	codeWord  = 0x03
	codeShort = 0x04 // the first of the single-byte word codes
	packShort = 0x20 - codeShort
)

// packWords are the fragments a code stands for: field names with their
// colon, then string values, most frequent first. The first packShort
// have single-byte codes: the envelope's fields and a memory payload's.
var packWords = [...]string{
	// Single-byte codes (packShort = 28).
	`"id":`, `"stream":`, `"version":`, `"position":`, `"type":`, `"schema_version":`, `"recorded_at":`,
	`"actor":`, `"payload":`, `"prev_hash":`, `"hash":`,
	`"memory_id":`, `"body_sha256":`, `"created_at":`, `"updated_at":`, `"project":`, `"scope":`, `"ring":`,
	`"event_type":`, `"source_type":`, `"salience":`, `"confidence":`, `"sensitivity":`, `"retention":`, `"origin":`,
	`"normal"`, `"cli"`, `"memory.captured"`,
	// Two-byte codes: the other field names of the payloads,
	`"harness_id":`, `"receipt_id":`, `"reason":`, `"store_id":`, `"sha256":`, `"path":`,
	`"worker_key_fingerprint":`, `"status":`, `"adapter_version":`, `"result_count":`, `"query_class":`,
	`"project_root_fingerprint":`, `"duration_ms":`, `"bridge_fingerprint":`, `"workflow_id":`, `"state":`,
	`"session_id":`, `"selected_memory_ids_sha256":`, `"cli_version":`, `"agent_profile":`, `"supersedes":`,
	`"superseded_by":`, `"scope_key":`, `"run_id":`, `"protocol_version":`, `"plugin_version":`, `"paths":`,
	`"operation_id":`, `"expires_at":`, `"capability":`, `"tags":`, `"summary":`, `"stage":`, `"source":`,
	`"session":`, `"sensitive_included":`, `"reviewed_at":`, `"review":`, `"ref":`, `"record_state":`, `"quote":`,
	`"public_key":`, `"previous_sha256":`, `"pid":`, `"owned_files":`, `"needs_review":`, `"memory_count":`,
	`"managed_blocks":`, `"links":`, `"input_sha256":`, `"input_chars":`, `"harnesses":`, `"details":`,
	`"changed_paths":`, `"bridge_path":`, `"algorithm":`, `"adopted":`, `"worker":`, `"to":`, `"telemetry":`,
	`"task_hint_sha256":`, `"task_hint_chars":`, `"target":`, `"started_at":`, `"skip_count":`, `"size":`,
	`"signature":`, `"reviewed_by":`, `"review_reason":`, `"redacted_body_sha256":`, `"redacted":`, `"records":`,
	`"recognized":`, `"receipts_verified":`, `"receipts_untrusted":`, `"receipts_found":`, `"reason_sha256":`,
	`"reason_chars":`, `"published":`, `"previous_signature":`, `"previous_project_root_fingerprint":`,
	`"previous_key":`, `"planned":`, `"pass_count":`, `"mtime_ns":`, `"mode":`, `"memory":`, `"markers":`,
	`"manifest_sha256":`, `"line":`, `"leading_separator":`, `"label":`, `"items":`, `"inode":`, `"harness":`,
	`"from":`, `"format":`, `"files":`, `"fail_count":`, `"executable_version":`, `"ended_at":`, `"diagnostic":`,
	`"detected_by_pid":`, `"detected_at":`, `"ctime_ns":`, `"contract":`, `"command":`, `"changed":`,
	`"block_id":`,
	// the event types,
	`"run.started"`, `"run.finished"`, `"run.interrupted"`, `"memory.superseded"`, `"memory.forgotten"`,
	`"preflight.started"`, `"preflight.succeeded"`, `"preflight.failed"`, `"receipt.recorded"`,
	`"receipt.pruned"`, `"receipt.adopted"`, `"receipt.foreign"`, `"certification.recorded"`,
	`"harness.detected"`, `"bridge.planned"`, `"bridge.published"`, `"publication.review_required"`,
	`"manifest.published"`, `"manifest.reconciled"`, `"harness.deactivation_requested"`,
	`"harness.deactivated"`, `"bridge.drift_detected"`, `"plugin.descriptor_found"`,
	`"plugin.descriptor_lost"`, `"harness.trust_required"`, `"harness.project_unreachable"`,
	`"harness.proof_revoked"`, `"guidance.recorded"`, `"store.initialized"`, `"store.adopted"`,
	`"store.root_moved"`, `"store.key_recorded"`, `"store.key_rotated"`, `"store.labeled"`,
	`"program.installed"`,
	// and values the payloads repeat.
	`"global"`, `"project"`, `"agent"`, `"workflow"`, `"session"`, `"cambium"`, `"heartwood"`, `"bark"`,
	`"lesson"`, `"manual"`, `"import"`, `"remember"`, `"succeeded"`, `"failed"`, `"interrupted"`, `"running"`,
	`"done"`, `"store"`, `"hook"`, `"private"`, `"secret"`, `"forever"`, `"unsupported"`,
	`"configured-awaiting-proof"`, `"active"`, `"active-isolated"`, `"needs-plugin"`, `"needs-trust"`,
	`"needs-project-mount"`, `"needs-user-review"`, `"native-preflight"`, `"claude-code"`, `"codex"`,
	`"gemini-cli"`, `"opencode"`, `"agent-zero"`, `"pi"`, `""`, `"user"`, `"automatic-capture"`,
}

// packTables index packWords: by word, and which lengths a value word has
// (a string of another length is not looked up).
type packTables struct {
	index    map[string]int
	valueLen [64]bool
}

// packIndex builds the tables on the first pack, not at start-up: a
// command that only reads never needs them (the map is about 0.07 M
// instructions, 5 % of `tree-ring version`).
var packIndex = sync.OnceValue(func() *packTables {
	if len(packWords) > packShort+256 {
		panic("bolt: too many packWords")
	}
	t := &packTables{index: make(map[string]int, len(packWords))}
	for i, w := range packWords {
		if _, dup := t.index[w]; dup {
			panic("bolt: packWords repeats " + w)
		}
		t.index[w] = i
		if w[len(w)-1] == '"' {
			t.valueLen[len(w)] = true
		}
	}
	return t
})

// packEvent appends the packed form of the stored envelope enc to dst. A
// value it cannot pack (a byte below 0x20) is appended as it is; so is one
// that does not start with '{', which would read back as packed.
func packEvent(dst, enc []byte) []byte {
	if len(enc) == 0 || enc[0] != '{' {
		return append(dst, enc...)
	}
	words := packIndex()
	start := len(dst)
	dst = append(dst, packedTag)
	// Keys come in the order of packWords' first entries (Encode's fields,
	// then a memory payload's): the word after the last key is tried before
	// the map.
	next := 0
	for i := 0; i < len(enc); {
		c := enc[i]
		if c < 0x20 {
			return append(dst[:start], enc...)
		}
		if c != '"' {
			dst = append(dst, c)
			i++
			continue
		}
		end, ok := stringEnd(enc, i)
		if end < 0 { // a byte below 0x20: not packed
			return append(dst[:start], enc...)
		}
		if !ok { // an unterminated string: the rest as it is
			return append(dst, enc[i:]...)
		}
		s := enc[i:end]
		if end < len(enc) && enc[end] == ':' {
			key := enc[i : end+1]
			w, ok := next, next < len(packWords) && packWords[next] == string(key)
			if !ok {
				w, ok = words.index[string(key)]
			}
			if ok {
				dst = appendWord(dst, w)
				next = w + 1
				i = end + 1
				continue
			}
		} else if d, ok := packValue(dst, s, words); ok {
			dst = d
			i = end
			continue
		}
		dst = append(dst, s...)
		i = end
	}
	return dst
}

// stringEnd returns the index just past the JSON string that starts at
// b[i] == '"' (false: it does not end, and no byte after b[i] is below
// 0x20), or -1 when a byte below 0x20 comes first: one pass checks the
// string's bytes for packEvent. A byte loop: the strings are short, and
// two IndexByte calls per string measured slower.
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c < 0x20:
			return -1, false
		case c == '\\':
			if j+1 < len(b) && b[j+1] < 0x20 {
				return -1, false
			}
			j++
		case c == '"':
			return j + 1, true
		}
	}
	return len(b), false
}

func appendWord(dst []byte, w int) []byte {
	if w < packShort {
		return append(dst, byte(codeShort+w))
	}
	return append(dst, codeWord, byte(w-packShort))
}

// packValue appends the code of the quoted string s, when it has one.
func packValue(dst, s []byte, words *packTables) ([]byte, bool) {
	switch n := len(s); {
	case n == 66:
		var h [32]byte
		if isLowerHex(s[1:65]) {
			hex.Decode(h[:], s[1:65])
			return append(append(dst, codeHex), h[:]...), true
		}
	case n == 28 && s[1] <= '7':
		var id ulid.ULID
		if id.UnmarshalText(s[1:27]) == nil {
			var t [26]byte
			_ = id.MarshalTextTo(t[:])
			if string(t[:]) == string(s[1:27]) {
				return append(append(dst, codeULID), id[:]...), true
			}
		}
	}
	if d, ok := packTime(dst, s); ok {
		return d, true
	}
	if len(s) < len(words.valueLen) && words.valueLen[len(s)] {
		if w, ok := words.index[string(s)]; ok {
			return appendWord(dst, w), true
		}
	}
	return dst, false
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// timeLayout is where a packed timestamp's digits and separators are:
// "YYYY-MM-DDTHH:MM:SS" (a 'd' is a digit).
const timeLayout = "dddd-dd-ddTdd:dd:dd"

// packTime appends codeTime for s = `"` + timeLayout + optional fraction +
// `Z"`: only the digits are kept, two to a byte.
func packTime(dst, s []byte) ([]byte, bool) {
	n := len(s) - 2 - len(timeLayout) - 1 // the fraction, with its dot
	if n < 0 || n == 1 || n > 10 || s[len(s)-2] != 'Z' || s[5] != '-' || s[11] != 'T' {
		return dst, false
	}
	body := s[1 : len(s)-2]
	for i := 0; i < len(timeLayout); i++ {
		if c := body[i]; (timeLayout[i] == 'd') != (c >= '0' && c <= '9') || (timeLayout[i] != 'd' && c != timeLayout[i]) {
			return dst, false
		}
	}
	frac := body[len(timeLayout):]
	if n > 0 {
		if frac[0] != '.' {
			return dst, false
		}
		frac = frac[1:]
		for _, c := range frac {
			if c < '0' || c > '9' {
				return dst, false
			}
		}
	}
	dst = append(dst, codeTime, byte(len(frac)))
	var half byte
	odd := false
	put := func(c byte) {
		if odd {
			dst = append(dst, half<<4|(c-'0'))
		} else {
			half = c - '0'
		}
		odd = !odd
	}
	for i := 0; i < len(timeLayout); i++ {
		if timeLayout[i] == 'd' {
			put(body[i])
		}
	}
	for _, c := range frac {
		put(c)
	}
	if odd {
		dst = append(dst, half<<4)
	}
	return dst, true
}

var errPacked = errors.New("malformed packed event value")

// unpackEvent returns the stored envelope the events bucket value v holds:
// v itself when it is not packed, else v unpacked, appended to dst.
func unpackEvent(dst, v []byte) ([]byte, error) {
	if len(v) == 0 || v[0] != packedTag {
		return v, nil
	}
	start := len(dst)
	for i := 1; i < len(v); {
		c := v[i]
		if c >= 0x20 {
			j := i + 1
			for j < len(v) && v[j] >= 0x20 {
				j++
			}
			dst = append(dst, v[i:j]...)
			i = j
			continue
		}
		i++
		switch {
		case c == codeHex:
			if len(v)-i < 32 {
				return dst[:start], errPacked
			}
			dst = append(dst, '"')
			dst = hex.AppendEncode(dst, v[i:i+32])
			dst = append(dst, '"')
			i += 32
		case c == codeULID:
			if len(v)-i < 16 {
				return dst[:start], errPacked
			}
			var t [26]byte
			_ = ulid.ULID(v[i : i+16]).MarshalTextTo(t[:])
			dst = append(append(append(dst, '"'), t[:]...), '"')
			i += 16
		case c == codeTime:
			var ok bool
			if dst, i, ok = unpackTime(dst, v, i); !ok {
				return dst[:start], errPacked
			}
		case c == codeWord:
			if i >= len(v) || packShort+int(v[i]) >= len(packWords) {
				return dst[:start], errPacked
			}
			dst = append(dst, packWords[packShort+int(v[i])]...)
			i++
		default:
			dst = append(dst, packWords[c-codeShort]...)
		}
	}
	return dst, nil
}

func unpackTime(dst, v []byte, i int) ([]byte, int, bool) {
	if i >= len(v) || v[i] > 9 {
		return dst, i, false
	}
	nfrac := int(v[i])
	i++
	nd := 14 + nfrac
	nb := (nd + 1) / 2
	if len(v)-i < nb {
		return dst, i, false
	}
	digits := v[i : i+nb]
	for _, b := range digits {
		if b>>4 > 9 || b&15 > 9 {
			return dst, i, false
		}
	}
	if nd%2 == 1 && digits[nb-1]&15 != 0 { // the padding: one packed form per text
		return dst, i, false
	}
	var t [2 + len(timeLayout) + 10 + 2]byte // the quoted text, at most
	n, k := 0, 0
	digit := func() byte {
		b := digits[k/2]
		if k%2 == 0 {
			b >>= 4
		}
		k++
		return '0' + b&15
	}
	t[n], n = '"', 1
	for j := 0; j < len(timeLayout); j++ {
		if c := timeLayout[j]; c == 'd' {
			t[n] = digit()
		} else {
			t[n] = c
		}
		n++
	}
	if nfrac > 0 {
		t[n], n = '.', n+1
		for range nfrac {
			t[n], n = digit(), n+1
		}
	}
	t[n], t[n+1] = 'Z', '"'
	dst = append(dst, t[:n+2]...)
	return dst, i + nb, true
}

// eventBuf unpacks event values into one buffer it reuses: a result is
// valid until the next call (or as long as v, for a value not packed). Not
// safe for concurrent use.
type eventBuf struct{ b []byte }

func (u *eventBuf) bytes(v []byte) ([]byte, error) {
	if len(v) == 0 || v[0] != packedTag {
		return v, nil
	}
	out, err := unpackEvent(u.b[:0], v)
	u.b = out[:0]
	return out, err
}

// eventSlab unpacks event values into memory no later call overwrites,
// for envelopes that outlive the loop that read them (the batches of a
// rebuild's folds). Not safe for concurrent use.
type eventSlab struct{ b []byte }

// eventSlabLen is one slab: a new one starts when fewer than
// eventSlabRoom bytes are left (a longer envelope still fits: append
// moves the slab, and the results handed out keep the old one).
const eventSlabLen, eventSlabRoom = 256 << 10, 4 << 10

func (u *eventSlab) bytes(v []byte) ([]byte, error) {
	if len(v) == 0 || v[0] != packedTag {
		return v, nil
	}
	if cap(u.b)-len(u.b) < eventSlabRoom {
		u.b = make([]byte, 0, eventSlabLen)
	}
	start := len(u.b)
	out, err := unpackEvent(u.b, v)
	u.b = out
	return out[start:len(out):len(out)], err
}

// storedRef decodes the events bucket value v at pos
// (events.DecodeStoredRef), unpacking it into buf: the envelope is valid
// until buf's next use, within the transaction that read v.
func storedRef(path string, buf *eventBuf, pos uint64, v []byte) (events.Envelope, error) {
	raw, err := buf.bytes(v)
	if err == nil {
		var e events.Envelope
		if e, err = events.DecodeStoredRef(raw); err == nil {
			return e, nil
		}
	}
	return events.Envelope{}, &CorruptError{Path: path, Err: fmt.Errorf("position %d: %w", pos, err)}
}

// stored is storedRef for an envelope that owns its memory
// (events.DecodeStored: the payload copied).
func stored(path string, buf *eventBuf, pos uint64, v []byte) (events.Envelope, error) {
	e, err := storedRef(path, buf, pos, v)
	e.Payload = bytes.Clone(e.Payload)
	return e, err
}
