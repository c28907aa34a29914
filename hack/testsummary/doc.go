// Command testsummary is for `make test`: it reads `go test -json` on standard input, prints
// what plain `go test` prints (each package's closing line, and the output of failing tests),
// and ends with one line counting the skipped tests and why they skipped, so that skips show
// without -v, and one counting the packages go test's cache answered ("(cached)": the same
// test binary and inputs passed before), so a fast run says why it was fast. It exits 1 when a test, a package or a build failed.
//
//	go test -json ./... | go run ./hack/testsummary
package main
