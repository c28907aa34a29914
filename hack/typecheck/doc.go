// Command typecheck loads Go packages with every dependency from source and type-checks them,
// as gopls does (golang.org/x/tools/go/packages, LoadAllSyntax), and prints every error it
// finds: a parse or type error, an import that does not resolve, an import cycle. It exits 1
// when there is one, 2 when the packages cannot be loaded at all, and 0 otherwise:
//
//	typecheck [packages]
//
// hack/hosts.sh runs it on the hosts of the middle supported Kubernetes minor (1.36), where it
// replaces `go build`: those hosts' ~1,400 dependencies are versions nothing else in CI
// compiles, and the type checker reports every error the compiler would for their code
// (go/types and the compiler's types2 are one checker, generated from the same source) at a
// fraction of the CPU: the CCM host took 19 s of CPU in a cold CI run, 268 s when it was
// compiled. The oldest and the newest minor are still compiled, linked and tested.
//
// It is its own module so that golang.org/x/tools stays out of loopguard's go.mod, which
// hosts inherit.
package main
