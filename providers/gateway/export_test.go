package gateway

// EnvoyServiceName is exported for the envoy gateway test.
var EnvoyServiceName = envoyServiceName
var HashedName = hashedName
