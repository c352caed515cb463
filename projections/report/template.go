package report

import (
	"html"
	"reflect"
	"sync"
	"text/template"
)

// page is the one template of both reports. No script, no external URL,
// no web font: the fonts are the reader's own, the pictures inline SVG,
// and every picture has a table of the same facts beside it.
//
// It is a text/template over a view whose every string escapeAll has
// HTML-escaped: html/template would escape per context, but it links
// regexp into every start of tree-ring, every hook included
// (cmd/tree-ring/startup_imports_test.go). The view's strings only ever
// land in text and in quoted attributes, where html.EscapeString is the
// escaping needed. Parsed on the first report, not at init: parsing costs
// 0.4 ms and 2,000 allocations, which every start of tree-ring, every hook
// included, paid (GODEBUG=inittrace=1).
var page = sync.OnceValue(func() *template.Template { return template.Must(template.New("page").Parse(pageHTML)) })

// escapeAll HTML-escapes every string reachable from v, a settable value:
// one place, so that a new field cannot miss it. Slices are copied first,
// never escaped in the caller's backing array.
func escapeAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(html.EscapeString(v.String()))
	case reflect.Struct:
		for i := range v.NumField() {
			escapeAll(v.Field(i))
		}
	case reflect.Slice:
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		v.Set(c)
		for i := range c.Len() {
			escapeAll(c.Index(i))
		}
	}
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1a1a1a;background:#fafafa;margin:0 auto;padding:16px 24px;max-width:1600px;line-height:1.4}
h1{font-size:1.5rem;margin:0 0 4px}
h2{font-size:1.25rem;margin:28px 0 8px;border-bottom:2px solid #ddd;padding-bottom:4px}
h3{font-size:1.05rem;margin:20px 0 6px}
h4{font-size:1rem;margin:14px 0 4px}
p{margin:4px 0}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.9em}
table{border-collapse:collapse;font-size:.85rem;background:#fff;margin:6px 0}
caption{text-align:left;font-weight:600;padding:2px 0}
th,td{border:1px solid #d0d0d0;padding:3px 6px;text-align:left;vertical-align:top;white-space:nowrap}
td.r{white-space:normal;min-width:10em}
td.w{white-space:normal}
th{background:#f0f0f0}
td.n{text-align:right}
.pair{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.pair figure{flex:1 1 640px;margin:0;min-width:0}
.pair .side{flex:1 1 640px;min-width:0}
.side{overflow-x:auto}
svg.chart{width:100%;max-width:960px;height:auto;background:#fff;border:1px solid #e0e0e0}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif;font-size:11px}
.state{display:inline-block;padding:0 6px;border-radius:3px;font-weight:600}
.legend span{margin-right:6px}
.bad{color:#b71c1c;font-weight:600}
.ok{color:#1b5e20;font-weight:600}
.next{color:#333}
.muted{color:#666}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p>States at <strong>{{.At}}</strong>; generated {{.Generated}}. The page needs no script; every chart has a table of the same facts beside it.</p>
<p class="legend">States: {{range .Legend}}<span class="state" style="background:{{.Fill}};color:{{.Ink}}">{{.Name}}</span>{{end}}</p>
</header>
{{- if .Fleet}}
<section id="matrix">
<h2>Stores × harnesses at {{.At}}</h2>
<div class="side">
<table>
<caption>State of each harness at {{.At}} per store; the store links to its section</caption>
<thead><tr><th scope="col">store</th><th scope="col">label</th><th scope="col">project root</th>{{range .Matrix.Harnesses}}<th scope="col">{{.}}</th>{{end}}<th scope="col">verification</th><th scope="col">replica</th><th scope="col">last event</th></tr></thead>
<tbody>
{{- range .Matrix.Rows}}
<tr><th scope="row"><a href="#{{.Anchor}}">{{.StoreID}}</a></th><td>{{.Label}}</td><td><code>{{.RootFingerprint}}</code></td>
{{- range .Cells}}{{if .Known}}<td style="background:{{.Swatch.Fill}};color:{{.Swatch.Ink}}">{{.Swatch.Name}}</td>{{else}}<td class="muted">-</td>{{end}}{{end -}}
<td class="w {{if .OK}}ok{{else}}bad{{end}}">{{.Verified}}</td><td class="w">{{.Replica}}</td><td>{{.LastEvent}}</td></tr>
{{- end}}
</tbody>
</table>
</div>
</section>
{{- end}}
{{- range .Stores}}
<section class="store"{{if .Anchor}} id="{{.Anchor}}"{{end}}>
<h2>Store <code>{{.ID}}</code>{{if .Label}} {{.Label}}{{end}}</h2>
<table>
<caption>Identity and verification</caption>
<tbody>
<tr><th scope="row">store id</th><td><code>{{.ID}}</code></td></tr>
{{- if .Label}}
<tr><th scope="row">label</th><td>{{.Label}}</td></tr>
{{- end}}
<tr><th scope="row">project root fingerprint</th><td><code>{{.RootFingerprint}}</code></td></tr>
<tr><th scope="row">window</th><td>{{.Window}}</td></tr>
<tr><th scope="row">last event</th><td>{{.LastEvent}}</td></tr>
{{- if .Replica}}
<tr><th scope="row">replica</th><td>{{.Replica}}</td></tr>
{{- end}}
<tr><th scope="row">verification</th><td class="{{if .Verification.OK}}ok{{else}}bad{{end}}">{{.VerifiedText}}</td></tr>
{{- if .Verification.OK}}
<tr><th scope="row">chain head</th><td><code>{{.Verification.ChainHead}}</code></td></tr>
<tr><th scope="row">events</th><td>{{.Verification.Events}} in {{.Verification.Streams}} streams</td></tr>
<tr><th scope="row">projections matching a re-fold</th><td>{{range $i, $p := .Verification.Projections}}{{if $i}}, {{end}}{{$p}}{{end}}</td></tr>
{{- end}}
{{- if .Verification.ReceiptFiles}}
<tr><th scope="row">receipt files</th><td>{{.Verification.ReceiptFiles}}</td></tr>
{{- end}}
</tbody>
</table>
<h3>Harnesses</h3>
{{- if not .Harnesses}}
<p class="muted">No harness events in this store.</p>
{{- end}}
{{- range .Harnesses}}
<article id="{{.Anchor}}">
<h4>{{.Name}} <code>{{.ID}}</code></h4>
<p>State: <span class="state" style="background:{{.Swatch.Fill}};color:{{.Swatch.Ink}}">{{.State}}</span> ({{.Events}} events replayed{{if .Later}}, {{.Later}} recorded later not replayed{{end}})</p>
<p class="next">Next step: {{.Next}}</p>
<div class="pair">
<figure>
<svg class="chart" viewBox="0 0 {{.Chart.Width}} {{.Chart.Height}}" role="img" aria-labelledby="{{.Chart.TitleID}}">
<title id="{{.Chart.TitleID}}">{{.Chart.Title}}</title>
{{- range .Chart.Bands}}
<rect x="{{.X}}" y="8" width="{{.W}}" height="34" fill="{{.Swatch.Fill}}"><title>{{.Title}}</title></rect>
{{- if .Label}}
<text x="{{.TextX}}" y="{{.TextY}}" fill="{{.Swatch.Ink}}">{{.Label}}</text>
{{- end}}
{{- end}}
{{- range .Chart.Marks}}
<line x1="{{.X}}" y1="{{.TopY}}" x2="{{.X}}" y2="{{.BottomY}}" stroke="#111" stroke-width="2"><title>{{.Title}}</title></line>
{{- if .ShowLabel}}
<text x="{{.TextX}}" y="60" fill="#111">{{.Pos}}</text>
<text x="{{.TextX}}" y="74" fill="#555">{{.Time}}</text>
{{- end}}
{{- end}}
</svg>
</figure>
<div class="side">
<table>
<caption>State changes of {{.ID}}</caption>
<thead><tr><th scope="col">position</th><th scope="col">time</th><th scope="col">event</th><th scope="col">transition</th><th scope="col">from</th><th scope="col">to</th><th scope="col">reason</th></tr></thead>
<tbody>
{{- range .Changes}}
<tr><td class="n">{{.Position}}</td><td>{{.Time}}</td><td><code>{{.Event}}</code></td><td>{{.Transition}}</td><td style="background:{{.From.Fill}};color:{{.From.Ink}}">{{.From.Name}}</td><td style="background:{{.To.Fill}};color:{{.To.Ink}}">{{.To.Name}}</td><td class="r">{{.Reason}}</td></tr>
{{- else}}
<tr><td colspan="7" class="muted">No state change in the window.</td></tr>
{{- end}}
</tbody>
</table>
</div>
</div>
</article>
{{- end}}
<h3>Receipts</h3>
<p>{{.Receipts.Total}} receipts in the window; newest: {{.Receipts.Newest}}.</p>
<div class="pair">
<figure>
{{- template "bars" .Receipts.Chart}}
</figure>
<div class="side">
<table>
<caption>Receipts per day per worker</caption>
<thead><tr><th scope="col">day</th><th scope="col">harness</th><th scope="col">worker</th><th scope="col">receipts</th><th scope="col">not successful</th><th scope="col">query classes</th><th scope="col">results</th></tr></thead>
<tbody>
{{- range .Receipts.Rows}}
<tr><td>{{.Day}}</td><td>{{.Harness}}</td><td><code>{{.Worker}}</code></td><td class="n">{{.Count}}</td><td class="n">{{.Unsuccessful}}</td><td>{{.Classes}}</td><td class="n">{{.Results}}</td></tr>
{{- else}}
<tr><td colspan="7" class="muted">No receipt in the window.</td></tr>
{{- end}}
</tbody>
</table>
</div>
</div>
<h3>Runs</h3>
<p>{{.Runs.Total}} runs in the window.{{if .Runs.Diagnoses}} Diagnostics: {{.Runs.Diagnoses}}.{{end}}</p>
<p class="legend">Outcomes: {{range .Runs.Outcomes}}<span class="state" style="background:{{.Fill}};color:{{.Ink}}">{{.Name}}</span>{{end}}</p>
<div class="pair">
<figure>
{{- template "bars" .Runs.Chart}}
</figure>
<div class="side">
<table>
<caption>Runs per day by outcome</caption>
<thead><tr><th scope="col">day</th>{{range .Runs.Outcomes}}<th scope="col">{{.Name}}</th>{{end}}<th scope="col">total</th></tr></thead>
<tbody>
{{- range .Runs.Days}}
<tr><td>{{.Day}}</td>{{range .Counts}}<td class="n">{{.}}</td>{{end}}<td class="n">{{.Total}}</td></tr>
{{- else}}
<tr><td colspan="7" class="muted">No run in the window.</td></tr>
{{- end}}
</tbody>
</table>
</div>
</div>
<table>
<caption>Runs that did not succeed (still running, failed, aborted, interrupted), newest first{{if .Runs.Omitted}} ({{.Runs.Omitted}} older not shown){{end}}</caption>
<thead><tr><th scope="col">started</th><th scope="col">command</th><th scope="col">harness</th><th scope="col">outcome</th><th scope="col">stage</th><th scope="col">diagnostic</th></tr></thead>
<tbody>
{{- range .Runs.Troubled}}
<tr><td>{{.Started}}</td><td><code>{{.Command}}</code></td><td>{{.Harness}}</td><td>{{.Status}}</td><td>{{.Stage}}</td><td><code>{{.Diagnostic}}</code></td></tr>
{{- else}}
<tr><td colspan="6" class="muted">Every run in the window succeeded.</td></tr>
{{- end}}
</tbody>
</table>
</section>
{{- end}}
</body>
</html>
{{define "bars"}}
<svg class="chart" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-labelledby="{{.TitleID}}">
<title id="{{.TitleID}}">{{.Title}}</title>
<line x1="0" y1="136" x2="{{.Width}}" y2="136" stroke="#999"/>
{{- range .Rects}}
<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" fill="{{.Fill}}"><title>{{.Title}}</title></rect>
{{- end}}
{{- range .Labels}}
<text x="{{.X}}" y="{{.Y}}" text-anchor="middle" fill="#111">{{.Text}}</text>
{{- end}}
</svg>
{{- end}}
`
