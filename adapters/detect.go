package adapters

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Marker origins.
const (
	OriginProject = "project"
	OriginHome    = "home"
)

// Marker is one detected marker. Path is project-relative for project
// markers and "~/"-prefixed for home markers: never absolute.
type Marker struct {
	Path   string `json:"path"`
	Origin string `json:"origin"`
}

// Detection is what read-only discovery found for one adapter. It never
// changes a harness's state: a detected harness still needs its bridge and
// a receipt before anything is active.
type Detection struct {
	Adapter *Adapter
	Markers []Marker
	// ExecutableVersion is the first line of `<executable> --version` when
	// probed; informational only.
	ExecutableVersion string
}

// Detected reports whether any marker was found.
func (d Detection) Detected() bool { return len(d.Markers) > 0 }

// Status is "detected" when a marker was found, else "available".
func (d Detection) Status() string {
	if d.Detected() {
		return "detected"
	}
	return "available"
}

// MarkerPaths lists the markers' display paths.
func (d Detection) MarkerPaths() []string {
	var ps []string
	for _, m := range d.Markers {
		ps = append(ps, m.Path)
	}
	return ps
}

// Detect looks for every adapter's markers under projectRoot and home (home
// may be empty: no home markers then). It only calls lstat, so a symlinked
// marker counts as present and nothing is followed, opened or created.
func Detect(projectRoot, home string) []Detection {
	var out []Detection
	for _, a := range All() {
		d := Detection{Adapter: a}
		for _, m := range a.ProjectMarkers {
			if _, err := os.Lstat(filepath.Join(projectRoot, m)); err == nil {
				d.Markers = append(d.Markers, Marker{Path: m, Origin: OriginProject})
			}
		}
		if home != "" {
			for _, m := range a.HomeMarkers {
				if _, err := os.Lstat(filepath.Join(home, m)); err == nil {
					d.Markers = append(d.Markers, Marker{Path: "~/" + m, Origin: OriginHome})
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// ProbeTimeout bounds each `<executable> --version` probe.
const ProbeTimeout = 2 * time.Second

// ProbeVersions fills ExecutableVersion for adapters whose executable is
// found on pathEnv (a PATH value), running the probes concurrently, each
// bounded by ProbeTimeout. A missing, failing or slow executable leaves the
// field empty. Only the first line is kept, at most 80 printable ASCII bytes.
func ProbeVersions(ctx context.Context, dets []Detection, pathEnv string) {
	var wg sync.WaitGroup
	for i := range dets {
		exe := lookPath(dets[i].Adapter.Executable, pathEnv)
		if exe == "" {
			continue
		}
		wg.Add(1)
		go func(d *Detection) {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, ProbeTimeout)
			defer cancel()
			cmd := exec.CommandContext(c, exe, "--version")
			cmd.WaitDelay = 200 * time.Millisecond
			out, err := cmd.Output()
			if err != nil {
				return
			}
			d.ExecutableVersion = firstLine(out)
		}(&dets[i])
	}
	wg.Wait()
}

func lookPath(name, pathEnv string) string {
	if name == "" {
		return ""
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would run a project file
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	var out []byte
	for _, c := range bytes.TrimSpace(b) {
		if c >= 0x20 && c < 0x7f && len(out) < 80 {
			out = append(out, c)
		}
	}
	return string(out)
}
