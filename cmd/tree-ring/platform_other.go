//go:build !windows

package main

// unsupported is empty: every command runs here.
var unsupported = map[string]string{}
