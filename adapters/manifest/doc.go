// Package manifest is for hosts that read Kubernetes objects from YAML or JSON files rather
// than a live cluster: the CLI's assess command, tests, and platform tools that check
// manifests before they are applied.
//
// It reads files, folders (recursively) and standard input, splits multi-document YAML,
// expands Lists, and decodes each document strictly, as kubectl's strict validation does: an
// unknown or duplicated field, or a value of the wrong type, is an error that names the file,
// the line of the field, the object and the field path, rather than a silently different
// object. A broken document never stops the others from being read. Object.Locate finds the
// line of any field later, so a host can point at the annotation a dialect refused.
//
// Large inputs are decoded on every core, and the plain block YAML that manifests are
// written in is converted to JSON by a small fast path (fastyaml.go) that falls back to the
// general YAML parser for anything else; a differential fuzz test keeps the two in agreement.
package manifest
