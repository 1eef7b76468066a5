// Package nodeports decides which node ports the Service of a Listener
// whose class has a spec.nodePortRange asks for when it is created: a
// replica's block by formula, so that a firewall can be opened before
// deploy and a rebuilt cluster gets the same ports back, or (for a
// Listener that is no replica's, claims.Replica) the last free block (else the last free ports), within the share of the range one namespace may hold. The
// reconciler asks it; the webhook reads Range to warn about
// classes whose ranges overlap.
package nodeports
