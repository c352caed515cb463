// Package gitleaks holds the differential test of the memory secret
// detector against gitleaks' default rule set (see docs/memory.md). It is
// its own module so that gitleaks and its dependencies enter neither the
// tree-ring module's requirements nor its binary.
package gitleaks
