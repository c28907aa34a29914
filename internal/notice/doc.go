// Package notice is for loopguard's maintainers: its test keeps the upstream copyright and
// license header on every file adapted from Kubernetes, and keeps NOTICE's list of those files
// complete, as the Apache License 2.0 (section 4) asks of a work that redistributes them.
package notice
