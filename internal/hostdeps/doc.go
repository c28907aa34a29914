// Package hostdeps is for loopguard's maintainers: its test holds what each kind of host
// compiles when it imports loopguard, so that an import added for one host does not land in
// every other host's build.
package hostdeps
