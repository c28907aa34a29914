// Package dialect holds what only the authors of a dialect need: the cloud-independent parts
// of an exposure (ServiceBase, IngressBase) and of the offers every cloud can make
// (NodeSeparationOffer, DNSSteeringOffer, ThroughLBOffer), and the readers of loopguard's own
// annotations (ReadOverrides, BoolAnnotation). A dialect starts from ServiceBase or IngressBase,
// adds its cloud's facts, then applies the object's Overrides last so loopguard.io annotations
// win.
//
// Hosts (a cloud-controller-manager fork, a controller, a Terraform provider) never need it:
// they hold a core.Provider from a providers package and core's Reconciler.
package dialect
