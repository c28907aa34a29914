// Package corednsedit is for hosts that carry out loopguard's dns-steering remedy themselves
// (the CLI's `apply --coredns edit`): it adds to CoreDNS's Corefile the rewrite rules that
// answer a load balancer's hostname with its Service's cluster name, so in-cluster clients
// that resolve the hostname reach the Service directly and never loop through the load
// balancer, and takes them back again.
//
// It owns only its own lines: each owner's rules sit between two marker comments naming the
// owner (Edit), and taking them back (TakeBack) removes exactly those lines, so the Corefile
// is restored byte for byte. A Corefile that another tool manages is never rewritten: one that
// imports other files (AKS's coredns-custom, a snippet), carries another tool's markers ("managed
// by", "do not edit", BEGIN/END blocks), or lives in a ConfigMap an addon manager or Helm
// reconciles, is reported (ErrManaged) and left as it was.
//
// Edit and TakeBack are pure functions of the Corefile's text; Steer and Unsteer read and
// write the ConfigMap (kube-system/coredns, as kubeadm and most distributions name it) with
// optimistic concurrency, retrying a conflict on a fresh read.
package corednsedit
