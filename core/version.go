package core

// Version is this release of loopguard's library and CLI (CHANGELOG.md). Hosts can log it; the
// CLI prints it when the build stamped no other version.
const Version = "0.1.0"
