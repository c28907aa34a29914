package core

// The names loopguard goes by, and its release.
const (
	// Version is this release of loopguard's library and CLI (CHANGELOG.md). Hosts can log
	// it; the CLI prints it when the build stamped no other version.
	Version = "0.1.0"
	// FieldManager is the server-side apply field manager loopguard writes under.
	FieldManager = "loopguard"
	// ProfileAPIVersion and ProfileKind are the ClusterProfile's group version and kind.
	ProfileAPIVersion = "loopguard.io/v1alpha1"
	ProfileKind       = "ClusterProfile"
)
