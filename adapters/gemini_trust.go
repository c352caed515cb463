package adapters

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
)

// TrustDecision is a host's trust decision for a project, as Tree Ring can
// read it.
type TrustDecision int

// Trust decisions.
const (
	// TrustUnknown: no rule names the project (or the file is missing or
	// unreadable); the host treats the folder as untrusted.
	TrustUnknown TrustDecision = iota + 1
	Trusted
	Untrusted
	// GateUnknown: Tree Ring cannot tell whether the installed host gates
	// projects at all (Pi: its version cannot be read, and only releases
	// from 0.79 have the gate).
	GateUnknown
)

// TrustCheck reads a host's trust decision for the canonical project root.
// getenv supplies HOME and the host's documented location overrides; their
// values only locate a file and are never logged or stored.
type TrustCheck func(getenv func(string) string, project string) TrustDecision

// maxTrustFileBytes bounds the trust file Tree Ring reads.
const maxTrustFileBytes = MaxBridgeFileBytes

// geminiFolderTrust reads Gemini CLI's own trust decision, read-only, as
// Gemini CLI 0.61.0 locates it: folder trust switched off in the user
// settings ($GEMINI_CLI_HOME or $HOME, .gemini/settings.json,
// security.folderTrust.enabled false) trusts every folder; otherwise the
// trust file named by GEMINI_CLI_TRUSTED_FOLDERS_PATH, else
// .gemini/trustedFolders.json under $GEMINI_CLI_HOME or $HOME, decides.
// The GEMINI_CLI_TRUST_WORKSPACE variable and --skip-trust belong to
// Gemini's own invocation, which status cannot see, and system settings
// are not read: such a project is reported needs-trust.
func geminiFolderTrust(getenv func(string) string, project string) TrustDecision {
	home := getenv("GEMINI_CLI_HOME")
	if home == "" {
		home = getenv("HOME")
	}
	if home != "" {
		if data, ok := readBounded(filepath.Join(home, ".gemini", "settings.json")); ok && !GeminiFolderTrustEnabled(data) {
			return Trusted
		}
	}
	path := getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
	if path == "" {
		if home == "" {
			return TrustUnknown
		}
		path = filepath.Join(home, ".gemini", "trustedFolders.json")
	}
	data, ok := readBounded(path)
	if !ok {
		return TrustUnknown
	}
	return GeminiTrustFor(data, project, realPath)
}

// GeminiFolderTrustEnabled reports whether a Gemini settings document
// leaves folder trust on: anything but an explicit
// security.folderTrust.enabled false (comments allowed, as Gemini allows
// them) keeps it on.
func GeminiFolderTrustEnabled(settings []byte) bool {
	var doc struct {
		Security struct {
			FolderTrust struct {
				Enabled *bool `json:"enabled"`
			} `json:"folderTrust"`
		} `json:"security"`
	}
	if json.Unmarshal(stripJSONComments(settings), &doc) != nil || doc.Security.FolderTrust.Enabled == nil {
		return true
	}
	return *doc.Security.FolderTrust.Enabled
}

// readBounded reads a small file of the host's through readHostFile; ok
// is false when it is missing, unreadable, not a regular file or larger
// than maxTrustFileBytes.
func readBounded(path string) (data []byte, ok bool) {
	data, exists, err := readHostFile(path, maxTrustFileBytes)
	return data, exists && err == nil
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// GeminiTrustFor decides, as Gemini CLI 0.61.0 does, whether a
// trustedFolders.json document trusts project (a canonical absolute path):
// among the rules whose effective folder contains the project or is it
// (TRUST_PARENT's effective folder is its rule path's parent), the longest
// rule path wins; DO_NOT_TRUST is Untrusted, TRUST_FOLDER and TRUST_PARENT
// are Trusted, no rule is TrustUnknown. Values other than the three levels
// are ignored, as Gemini ignores them. The document may carry // and /* */
// comments (Gemini strips them); one that is still not a JSON object is
// TrustUnknown (Gemini refuses to start on it). resolve maps a rule path to
// its real path. Linear in the document.
func GeminiTrustFor(doc []byte, project string, resolve func(string) string) TrustDecision {
	var rules map[string]json.RawMessage
	if err := json.Unmarshal(stripJSONComments(doc), &rules); err != nil || rules == nil {
		return TrustUnknown
	}
	best, decision := -1, TrustUnknown
	for rule, raw := range rules {
		var level string
		if json.Unmarshal(raw, &level) != nil {
			continue
		}
		var d TrustDecision
		effective := rule
		switch level {
		case "TRUST_FOLDER":
			d = Trusted
		case "TRUST_PARENT":
			d, effective = Trusted, filepath.Dir(rule)
		case "DO_NOT_TRUST":
			d = Untrusted
		default:
			continue
		}
		if !filepath.IsAbs(effective) || !within(filepath.Clean(resolve(effective)), project) {
			continue
		}
		if len(rule) > best {
			best, decision = len(rule), d
		}
	}
	return decision
}

// within reports whether path is dir or lies under it.
func within(dir, path string) bool {
	if dir == path || dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// stripJSONComments blanks // line and /* block */ comments outside
// strings (with spaces, so offsets keep their meaning), in one pass.
func stripJSONComments(b []byte) []byte {
	if !bytes.Contains(b, []byte("/")) {
		return b
	}
	out := bytes.Clone(b)
	inString, escaped := false, false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
		}
	}
	return out
}
