// Package codexconfig reads the two trust layers of Codex CLI's user
// configuration, $CODEX_HOME/config.toml: project trust
// ([projects."<abs root>"] trust_level) and per-hook trust
// ([hooks.state."<key>"] trusted_hash), and the hooks feature switch
// ([features] hooks, or its older name codex_hooks) of that file and of a
// project's .codex/config.toml. It is the only package that imports
// the TOML library (github.com/pelletier/go-toml/v2; docs/adapters/codex.md
// says why). It never writes the file: trust is the user's decision in Codex.
//
// The file is Codex's, not ours: keys this package does not read are
// ignored (Codex has hundreds), but a value of the wrong type under a key it
// does read, or a file that is not TOML, is an error, as it is for Codex.
// Parse is safe for concurrent use.
package codexconfig

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// MaxBytes bounds the configuration Parse accepts: Codex's own files are a
// few kilobytes; a larger one is refused rather than parsed.
const MaxBytes = 1 << 20

// Project trust levels as Codex writes them.
const (
	Trusted   = "trusted"
	Untrusted = "untrusted"
)

// Config is what Codex's configuration says about trust.
type Config struct {
	// Projects maps a project path (the table key, verbatim) to its
	// trust_level ("" when the table has none).
	Projects map[string]string
	// HookHashes maps a hook key ("<hooks.json path>:<event>:<group>:
	// <handler>") to its trusted_hash ("" when the table has none).
	HookHashes map[string]string
	// Hooks is the file's [features] switch of lifecycle hooks: hooks, or
	// codex_hooks when hooks is absent (Codex 0.169 reads them so; hooks
	// decides when both are set). nil: the file does not set it.
	Hooks *bool
}

// ErrTooLarge is a configuration over MaxBytes.
var ErrTooLarge = fmt.Errorf("larger than %d bytes", MaxBytes)

// file is the part of config.toml Parse decodes; every other key is
// Codex's business.
type file struct {
	Projects map[string]struct {
		TrustLevel *string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]struct {
			TrustedHash *string `toml:"trusted_hash"`
		} `toml:"state"`
	} `toml:"hooks"`
	Features struct {
		Hooks      *bool `toml:"hooks"`
		CodexHooks *bool `toml:"codex_hooks"`
	} `toml:"features"`
}

// Parse decodes data, the bytes of config.toml. An error says where the
// problem is (a line and column, or which of the keys read has a value of
// the wrong type) and never quotes the file: its keys are absolute paths.
func Parse(data []byte) (Config, error) {
	if len(data) > MaxBytes {
		return Config{}, ErrTooLarge
	}
	if !utf8.Valid(data) {
		return Config{}, errors.New("not UTF-8")
	}
	var f file
	if err := toml.Unmarshal(data, &f); err != nil {
		return Config{}, located(data)
	}
	c := Config{Projects: map[string]string{}, HookHashes: map[string]string{}}
	for k, p := range f.Projects {
		if p.TrustLevel != nil {
			c.Projects[k] = *p.TrustLevel
		} else {
			c.Projects[k] = ""
		}
	}
	for k, h := range f.Hooks.State {
		if h.TrustedHash != nil {
			c.HookHashes[k] = *h.TrustedHash
		} else {
			c.HookHashes[k] = ""
		}
	}
	c.Hooks = f.Features.Hooks
	if c.Hooks == nil {
		c.Hooks = f.Features.CodexHooks
	}
	return c, nil
}

var errWrongType = errors.New("projects, projects.<path>.trust_level, hooks.state, hooks.state.<key>.trusted_hash, features, features.hooks or features.codex_hooks has a value of the wrong type")

// located is the library's error without its text (the library's own
// messages quote keys): the line and column of what is not TOML, or
// errWrongType. The library reports both as a *toml.DecodeError, so data
// is decoded again without a schema: if that succeeds, the document is
// TOML and the first failure was a wrong type under a key Parse reads;
// otherwise its error locates the syntax error. Only a refused file pays
// for the second pass.
func located(data []byte) error {
	var generic map[string]any
	err := toml.Unmarshal(data, &generic)
	if err == nil {
		return errWrongType
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return fmt.Errorf("not valid TOML at line %d, column %d", line, col)
	}
	return errNotTOML
}

var errNotTOML = errors.New("not valid TOML")
