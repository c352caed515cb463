package main

import (
	"errors"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/events/memory"
)

// flagError rewrites a flag-parse error so that it never echoes what was
// typed: a SUMMARY that starts with "-" (a private key block, say) reaches
// the flag parser as a flag, and pflag's messages quote the argument and
// flag values verbatim. Only a flag's registered name, or a typed name
// that looks like a flag name and not like a secret, appears. where is the
// command's name, "" before the command words.
func flagError(where string, err error) error {
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	var (
		notExist *pflag.NotExistError
		invalid  *pflag.InvalidValueError
		required *pflag.ValueRequiredError
	)
	switch {
	case errors.As(err, &invalid):
		return usagef("%sinvalid value for --%s (the value is not shown; see --help)", prefix, invalid.GetFlag().Name)
	case errors.As(err, &required):
		return usagef("%sflag --%s needs a value", prefix, required.GetFlag().Name)
	case errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "" && printableFlagName(notExist.GetSpecifiedName()):
		return usagef("%sunknown flag --%s (see --help)", prefix, notExist.GetSpecifiedName())
	}
	return usagef(`%san argument that starts with "-" is not a known flag (it is not shown); put text that starts with "-" after "--", flags first, e.g. tree-ring remember --event-type lesson -- "-x ..."`, prefix)
}

// flagNameForm reports whether name has the form of our flag names,
// ^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$: lower-case words joined by single
// hyphens. Written out rather than a package-level regexp, whose
// compilation at init cost every process (every hook) 0.3 M instructions.
func flagNameForm(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && name[i-1] != '-' && i < len(name)-1:
		default:
			return false
		}
	}
	return true
}

// printableFlagName reports whether a typed flag name may be echoed: the
// form of our flag names, short, and not secret-like.
func printableFlagName(name string) bool {
	return len(name) <= 32 && flagNameForm(name) && !memory.IsSecretLike(name)
}
