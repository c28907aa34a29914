// Package manifest is for hosts that read Kubernetes objects from YAML or JSON files rather
// than a live cluster: the CLI's assess command, tests, and platform tools that check
// manifests before they are applied.
//
// It reads files, folders (recursively) and standard input, splits multi-document YAML,
// expands Lists, and decodes each document strictly: a typo in a field name is an error that
// names the file, the line, the object and the field, rather than a silently different
// object. A broken document never stops the others from being read.
package manifest
